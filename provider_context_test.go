package agentctx

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProviderContextRequest(t *testing.T) {
	tests := []struct {
		name       string
		model      string
		window     int
		cfg        ProviderContextConfig
		wantServer bool
		wantBody   string // the request's context_management; "" for none
		wantBetas  []string
		wantErr    string
	}{
		{name: "zero value", model: "claude-sonnet-4-6"},
		{name: "client", model: "claude-sonnet-4-6", cfg: ProviderContextConfig{Strategy: CompactClient, Instructions: "ignored"}},
		{name: "server", model: "claude-sonnet-4-5", cfg: ProviderContextConfig{Strategy: CompactServer, PauseAfterCompaction: true, Instructions: "Keep the plan."},
			wantServer: true, wantBetas: []string{BetaCompaction},
			wantBody: `{"edits":[{"instructions":"Keep the plan.","pause_after_compaction":true,"trigger":{"type":"input_tokens","value":167000},"type":"compact_20260112"}]}`},
		{name: "auto on a model with server compaction", model: "claude-opus-4-6-20260101", cfg: ProviderContextConfig{Strategy: CompactAuto},
			wantServer: true, wantBetas: []string{BetaCompaction},
			wantBody: `{"edits":[{"trigger":{"type":"input_tokens","value":167000},"type":"compact_20260112"}]}`},
		{name: "auto on a model without", model: "claude-sonnet-4-5", cfg: ProviderContextConfig{Strategy: CompactAuto}},
		{name: "auto on an unknown model", model: "my-model", window: 200_000, cfg: ProviderContextConfig{Strategy: CompactAuto}},
		{name: "auto under the provider's minimum trigger", model: "claude-sonnet-4-6", window: 40_000, cfg: ProviderContextConfig{Strategy: CompactAuto}},
		{name: "context editing with client compaction", model: "claude-sonnet-4-5", cfg: ProviderContextConfig{
			ClearToolUses: &ClearToolUses{TriggerTokens: 100_000, Keep: 3, ClearAtLeast: 20_000, ExcludeTools: []string{"memory"}, ClearToolInputs: true},
			ClearThinking: &ClearThinking{KeepTurns: -1}},
			wantBetas: []string{BetaContextManagement},
			wantBody:  `{"edits":[{"keep":"all","type":"clear_thinking_20251015"},{"clear_at_least":{"type":"input_tokens","value":20000},"clear_tool_inputs":true,"exclude_tools":["memory"],"keep":{"type":"tool_uses","value":3},"trigger":{"type":"input_tokens","value":100000},"type":"clear_tool_uses_20250919"}]}`},
		{name: "everything", model: "claude-sonnet-4-6", cfg: ProviderContextConfig{Strategy: CompactAuto, ClearToolUses: &ClearToolUses{}, ClearThinking: &ClearThinking{KeepTurns: 2}},
			wantServer: true, wantBetas: []string{BetaContextManagement, BetaCompaction},
			wantBody: `{"edits":[{"keep":{"type":"thinking_turns","value":2},"type":"clear_thinking_20251015"},{"type":"clear_tool_uses_20250919"},{"trigger":{"type":"input_tokens","value":167000},"type":"compact_20260112"}]}`},
		{name: "server under the minimum trigger", model: "claude-sonnet-4-6", window: 40_000, cfg: ProviderContextConfig{Strategy: CompactServer},
			wantErr: "agentctx: ProviderContext.Strategy \"server\": the auto-compact threshold 25000 is below the provider's minimum trigger 50000"},
		{name: "unknown strategy", model: "claude-sonnet-4-6", cfg: ProviderContextConfig{Strategy: "provider"},
			wantErr: "agentctx: ProviderContext.Strategy \"provider\" is not client, server or auto"},
		{name: "negative keep", model: "claude-sonnet-4-6", cfg: ProviderContextConfig{ClearToolUses: &ClearToolUses{Keep: -1}},
			wantErr: "agentctx: ProviderContext.ClearToolUses.Keep -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Model: tc.model, ContextWindow: tc.window, ProviderContext: tc.cfg, Tokens: EstimateCounter{}}
			p, err := New(cfg)
			if tc.wantErr != "" {
				require.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantServer, p.ServerCompaction())
			k := newTK()
			k.readTurns(1)
			k.user("Go on.")
			res, err := p.Prepare(context.Background(), Input{Records: k.recs})
			require.NoError(t, err)
			assert.Equal(t, tc.wantBetas, res.Request.Betas)
			var body map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(requestBytes(t, res.Request), &body))
			if tc.wantBody == "" {
				assert.NotContains(t, body, "context_management")
				return
			}
			assert.JSONEq(t, tc.wantBody, string(body["context_management"]))
		})
	}
}

// TestServerStrategyDefersAutoCompact: with the server strategy the library's auto-compact
// does not fire at the threshold, where the provider compacts, but only at the blocking
// limit.
func TestServerStrategyDefersAutoCompact(t *testing.T) {
	calls := 0
	summarizer := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		calls++
		return summarize.Summary{Text: "<summary>a client summary</summary>"}, nil
	})
	k := newTK()
	k.readTurns(3)
	k.answer(transcriptUsage(172_000), nil, text("Read."))
	k.user("Go on.")
	for _, tc := range []struct {
		strategy    CompactionStrategy
		wantCompact bool
	}{{CompactClient, true}, {CompactServer, false}} {
		calls = 0
		p := newTestPipeline(t, Config{Model: "claude-sonnet-4-6", ProviderContext: ProviderContextConfig{Strategy: tc.strategy},
			Compact: CompactConfig{Summarizer: summarizer}}, k.at(0))
		res, err := p.Prepare(context.Background(), Input{Records: k.recs})
		require.NoError(t, err, tc.strategy)
		assert.Equal(t, tc.wantCompact, res.Report.Compaction != nil, tc.strategy)
		if !tc.wantCompact {
			assert.True(t, res.Report.OverThreshold)
			assert.Less(t, res.Report.Pressure.Tokens, res.Report.Pressure.Levels.Blocking)
			assert.Zero(t, calls)
			assert.Contains(t, res.Report.Pressure.Why, "the library compacts only at the blocking limit")
		}
	}
}

// TestServerCompactionFallback: under the server strategy an answer whose compaction
// failed (null content) makes the library compact in its place, records the failure once,
// and the circuit breaker counts it.
func TestServerCompactionFallback(t *testing.T) {
	failing := errors.New("summarizer down")
	for _, tc := range []struct {
		name         string
		fail         bool
		usage        int
		wantOutcome  CompactOutcome
		wantFailures int // the breaker's count after the turn's records
	}{
		{name: "over the threshold", usage: 172_000, wantOutcome: CompactCompacted, wantFailures: 0},
		{name: "under the figure's threshold: the provider's count decides", usage: 120_000, wantOutcome: CompactCompacted, wantFailures: 0},
		{name: "the client fails too", fail: true, usage: 172_000, wantOutcome: CompactFailed, wantFailures: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			summarizer := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
				calls++
				if tc.fail {
					return summarize.Summary{}, failing
				}
				return summarize.Summary{Text: "<summary>a client summary</summary>"}, nil
			})
			k := newTK()
			k.readTurns(3)
			failed := k.answer(transcriptUsage(tc.usage), nil, unknown(`{"type":"compaction","content":null,"encrypted_content":null}`), text("Read."))
			k.user("Go on.")
			cfg := Config{Model: "claude-sonnet-4-6", ProviderContext: ProviderContextConfig{Strategy: CompactServer},
				Compact: CompactConfig{Summarizer: summarizer, DisableFallback: true}}
			res, err := newTestPipeline(t, cfg, k.at(0)).Prepare(context.Background(), Input{Records: k.recs})
			require.NoError(t, err)
			c := res.Report.Compaction
			require.NotNil(t, c)
			assert.Equal(t, tc.wantOutcome, c.Outcome, c.Reason)
			assert.Equal(t, failed.UUID, c.ProviderFailed)
			assert.Equal(t, 1, calls)
			var provider []transcript.Record
			for _, r := range res.Append {
				if r.CompactFailure != nil && r.CompactFailure.Summarizer == summarizerProvider {
					provider = append(provider, r)
				}
			}
			require.Len(t, provider, 1, "the provider's failure is recorded")
			assert.Equal(t, failed.UUID, provider[0].CompactFailure.LeafUUID)

			after := append(roundTrip(t, k.recs), roundTrip(t, res.Append)...)
			st, err := newTestPipeline(t, cfg, k.at(0)).CompactState(after, "")
			require.NoError(t, err)
			assert.Equal(t, tc.wantFailures, st.ConsecutiveFailures)
		})
	}
}
