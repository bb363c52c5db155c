package simulate_test

import (
	"path/filepath"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prefixPolicies are the configs the prefix invariant is checked under: the defaults at the
// model's window and at small ones (where budget, clearing and compaction decide often),
// thinking enabled, cache editing, and message tags with the snip reminder.
var prefixPolicies = []struct {
	name string
	cfg  agentctx.Config
}{
	{"default", agentctx.Config{Model: "claude-sonnet-4-5"}},
	{"40k", agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 40000}},
	{"16k", agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 16000}},
	{"thinking", agentctx.Config{Model: "claude-sonnet-4-5", Thinking: &provider.Thinking{Type: "enabled", BudgetTokens: 4000}}},
	{"cache-editing-40k", agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 40000,
		Microcompact: agentctx.MicrocompactConfig{Cached: true, CacheEditingBeta: "cache-editing-test"}}},
	// Tags and the context_efficiency reminder, every 2,000 tokens of growth at 40k.
	{"tags-reminders-40k", agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 40000, Snip: agentctx.SnipConfig{TagMessages: true}}},
}

// TestPrefixInvariant replays every session of the corpus (one in four under the race
// detector) under each policy: a turn's request sends the prefix the previous request marked
// for the cache again, byte for byte, unless a decision recorded since (or a rewind, or the
// provider's thinking rule) explains the change. The breaks are counted by cause.
func TestPrefixInvariant(t *testing.T) {
	stride := 1
	if raceEnabled {
		stride = 4
	}
	files := corpusFiles(t, stride)
	for _, pol := range prefixPolicies {
		t.Run(pol.name, func(t *testing.T) {
			causes := map[string]int{}
			for _, f := range files {
				tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
				require.NoError(t, err)
				sim, err := simulate.Run(t.Context(), tr.Records, pol.cfg, simulate.Options{})
				require.NoError(t, err, f)
				n := 0
				for _, tu := range sim.Turns {
					if b := tu.PrefixBreak; b != nil {
						n++
						causes[b.Cause]++
						assert.NotEmpty(t, b.Cause, "%s turn %d (line %d): the prefix broke at block %d (%d of %d tokens kept) and no decision explains it",
							filepath.Base(f), tu.Turn, tu.Line, b.Block, b.Kept, b.Kept+b.Lost)
					}
				}
				assert.Equal(t, n, sim.Totals.PrefixBreaks, f)
			}
			t.Logf("%d sessions, prefix breaks by cause: %v", len(files), causes)
		})
	}
}

// TestPrefixBreakCauses checks the report on bundled sessions, without the corpus: a
// compaction, the policy's or the file's own, breaks the prefix and says so, and a session
// without one sends every turn's marked prefix again.
func TestPrefixBreakCauses(t *testing.T) {
	for _, tc := range []struct {
		file   string
		window int
		cause  string // the cause of at least one break; "": no break
	}{
		{"claude-code-log/worktrees-ef958aa1.jsonl", 16000, "compaction"},
		{"claude-code-log/worktrees-ef958aa1.jsonl", 0, ""},
		{"codemie-code/compacted-624a4a58.jsonl", 0, "compaction"}, // the file's own compaction
	} {
		tr, err := transcript.ReadFile(filepath.Join("..", "testdata", "sessions", tc.file), transcript.ReadOptions{})
		require.NoError(t, err)
		sim, err := simulate.Run(t.Context(), tr.Records, agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: tc.window}, simulate.Options{})
		require.NoError(t, err)
		causes := map[string]int{}
		for _, tu := range sim.Turns {
			if b := tu.PrefixBreak; b != nil {
				causes[b.Cause]++
				assert.Positive(t, b.Lost, "%s turn %d: a break loses part of the marked prefix", tc.file, tu.Turn)
			}
		}
		assert.Zero(t, sim.Totals.Unexplained, tc.file)
		if tc.cause == "" {
			assert.Empty(t, causes, "%s at window %d", tc.file, tc.window)
		} else {
			assert.Positive(t, causes[tc.cause], "%s at window %d: %v", tc.file, tc.window, causes)
		}
	}
}
