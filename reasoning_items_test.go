package agentctx

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/wire"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeepReasoningItems prepares the Codex fixture, whose answers hold reasoning items,
// with and without NormalizeConfig.KeepReasoningItems, and under a window small enough to
// compact: kept, the items go in their assistant messages with every field as recorded and
// the request passes Validate with ReasoningItems; without, they are dropped and reported;
// a compaction's summary request never carries them.
func TestKeepReasoningItems(t *testing.T) {
	tr, err := transcript.ReadFile(codexFixture, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	first := slices.IndexFunc(tr.Records, func(r transcript.Record) bool { return r.IsCompactBoundary() })
	records := tr.Records[:first]
	var recorded []string // the reasoning blocks of the records, as JSON
	for _, r := range records {
		if r.Message == nil {
			continue
		}
		for _, b := range r.Message.Content {
			if wire.IsReasoningItem(b) {
				raw, err := transcript.MarshalBlock(b)
				require.NoError(t, err)
				recorded = append(recorded, string(raw))
			}
		}
	}
	require.NotEmpty(t, recorded, "the fixture holds reasoning items")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		keep    bool
		thinkOn bool
	}{
		{name: "dropped by default"},
		{name: "kept", keep: true},
		{name: "kept with thinking on", keep: true, thinkOn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Budget: BudgetConfig{Store: &MapStore{}}, Validate: true, Normalize: NormalizeConfig{KeepReasoningItems: tt.keep}}
			if tt.thinkOn {
				cfg.Thinking = &provider.Thinking{Type: "enabled", BudgetTokens: 2048}
			}
			p := newTestPipeline(t, cfg, now)
			res, err := p.Prepare(t.Context(), Input{Records: records, System: tr.System})
			require.NoError(t, err)
			var sent []string
			for _, m := range res.Request.Messages {
				for _, b := range m.Content {
					if wire.IsReasoningItem(b) {
						raw, err := transcript.MarshalBlock(b)
						require.NoError(t, err)
						sent = append(sent, string(raw))
					}
				}
			}
			var reasons []string
			for _, a := range res.Report.Stage("normalize").Actions {
				reasons = append(reasons, a.Detail)
			}
			dropped := "reasoning from a Codex rollout: its content is encrypted for OpenAI, so it cannot be replayed as thinking"
			if !tt.keep {
				assert.Empty(t, sent)
				assert.Contains(t, reasons, dropped)
				return
			}
			assert.NotContains(t, reasons, dropped)
			require.NotEmpty(t, sent)
			for _, s := range sent {
				assert.Contains(t, recorded, s, "a reasoning item is sent as recorded")
			}
			assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ReasoningItems: true}))
			assert.Error(t, provider.Validate(res.Request, provider.ValidateOptions{}), "without ReasoningItems, Validate refuses them")
		})
	}
	t.Run("summary request", func(t *testing.T) {
		var got []provider.Request
		sum := summarize.Func(func(_ context.Context, req summarize.Request) (summarize.Summary, error) {
			got = append(got, req.Request)
			return summarize.Extractive{}.Summarize(t.Context(), req)
		})
		p := newTestPipeline(t, Config{ContextWindow: 2000, MaxOutputTokens: 500, Validate: true,
			Normalize: NormalizeConfig{KeepReasoningItems: true}, Compact: CompactConfig{Summarizer: sum}}, now)
		_, err := p.Compact(t.Context(), Input{Records: records, System: tr.System}, CompactOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, got, "the summarizer was asked")
		body, err := json.Marshal(got)
		require.NoError(t, err)
		assert.NotContains(t, string(body), "encrypted_content")
	})
}
