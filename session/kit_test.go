package session_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/stretchr/testify/require"
)

func normConfig() agentctx.Config {
	return agentctx.Config{ContextWindow: 200000, Tokens: agentctx.EstimateCounter{}, Now: func() time.Time { return normNow }}
}

var normNow = time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)

// newTestPipeline returns New(cfg) with the test defaults filled in where cfg leaves them
// zero: a 200,000-token window, the bytes/3 estimate and a clock fixed at now.
func newTestPipeline(t testing.TB, cfg agentctx.Config, now time.Time) *agentctx.Pipeline {
	t.Helper()
	if cfg.ContextWindow == 0 {
		cfg.ContextWindow = 200_000
	}
	if cfg.Tokens == nil {
		cfg.Tokens = agentctx.EstimateCounter{}
	}
	cfg.Now = func() time.Time { return now }
	p, err := agentctx.New(cfg)
	require.NoError(t, err)
	return p
}

// requestBytes returns the request body.
func requestBytes(t testing.TB, req provider.Request) []byte {
	t.Helper()
	b, err := req.MarshalJSON()
	require.NoError(t, err)
	return b
}

var valReadTool = provider.Tool{Name: "Read", Definition: json.RawMessage(`{"name":"Read","description":"read","input_schema":{"type":"object"}}`)}
