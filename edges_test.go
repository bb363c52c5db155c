package agentctx

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The edges of the limits, each tested at the value itself and one past it: a bound moved by
// one is a different policy.

// Auto-compact runs when the pressure figure reaches the threshold, not only past it.
// The clock is a minute after the last record: the prefix is warm, so only the threshold compacts
// (a cold one compacts from the warning level on: TestColdEarly).
func TestAutoCompactAtThreshold(t *testing.T) {
	k := newTK()
	for i := range 10 {
		k.user(fmt.Sprintf("step %d %s", i, filler(2_000)))
		k.assistant(text(filler(2_000)))
	}
	k.user("go on")
	cfg := func(threshold int) Config {
		return Config{ContextWindow: 200_000, Compact: CompactConfig{Summarizer: summarize.Extractive{}},
			Pressure: PressureConfig{Threshold: Limit{Tokens: threshold}}}
	}
	probe, err := newTestPipeline(t, cfg(150_000), k.at(time.Minute)).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	at := probe.Report.Pressure.Tokens
	for _, tc := range []struct {
		threshold int
		compacts  bool
	}{{at, true}, {at + 1, false}} {
		p := newTestPipeline(t, cfg(tc.threshold), k.at(time.Minute))
		assert.Equal(t, tc.compacts, p.Levels().Of(at) == LevelCompact, "level at threshold %d", tc.threshold)
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Equal(t, tc.compacts, res.Report.Compaction != nil, "pressure %d, threshold %d", at, tc.threshold)
	}
}

// A compaction made thrashTurns responses after the one before is a refill; one more response
// and it is not.
func TestThrashWindowEdge(t *testing.T) {
	for _, tc := range []struct {
		responses int
		refill    bool
	}{{defaultThrashTurns, true}, {defaultThrashTurns + 1, false}} {
		k := newTK()
		leaf := k.user("start")
		boundary := func() {
			b := k.next(transcript.TypeSystem)
			b.Subtype, b.ParentUUID = transcript.SubtypeCompactBoundary, ""
			b.CompactMetadata = &transcript.CompactMetadata{Trigger: transcript.TriggerAuto, Summarizer: "scripted"}
			k.add(b)
		}
		boundary()
		for range tc.responses {
			k.assistant(text("a"))
		}
		boundary()
		h := readHistory(k.recs, nil, leaf, len(k.recs), defaultThrashTurns)
		assert.Equal(t, map[bool]int{true: 1, false: 0}[tc.refill], h.refills, "%d responses between compactions", tc.responses)
	}
}

// The pinned content may hold exactly its budget; one token more is refused.
func TestPinBudgetEdge(t *testing.T) {
	k := newTK()
	c := k.user("Never touch the generated files in gen/; they are rebuilt by the release job.")
	size := NewCounter(EstimateCounter{}).Text(pinText(c))
	for _, tc := range []struct {
		budget int
		ok     bool
	}{{size, true}, {size - 1, false}} {
		p := newTestPipeline(t, Config{Compact: CompactConfig{PinnedMaxTokens: tc.budget}}, k.at(0))
		_, err := p.Pin(k.recs, []string{c.UUID}, "", k.at(0))
		assert.Equal(t, tc.ok, err == nil, "%d tokens pinned under a budget of %d: %v", size, tc.budget, err)
	}
}

// A re-read file is cut to its room: the attachment holds at most the per-file budget.
func TestRehydrateFileRoom(t *testing.T) {
	const each = 300
	file := filler(30_000)
	p := newTestPipeline(t, Config{ContextWindow: 40_000, Compact: CompactConfig{Summarizer: summarize.Extractive{},
		Rehydrate: RehydrateConfig{MaxFileTokens: each, Files: FileSourceFunc(func(context.Context, string) ([]byte, error) { return []byte(file), nil })}}}, degradeNow)
	k := newTK()
	k.user("read the loader")
	k.assistant(toolUse("toolu_r", "Read"))
	k.recs[len(k.recs)-1].Message.Content[0].(*transcript.ToolUse).Input = []byte(`{"file_path":"/repo/loader.go"}`)
	k.results(result("toolu_r", "package loader"))
	for range 8 {
		k.user(filler(3_000))
		k.assistant(text(filler(3_000)))
	}
	res, err := p.Compact(t.Context(), Input{Records: k.recs}, CompactOptions{})
	require.NoError(t, err)
	found := false
	for _, r := range res.Append {
		if r.Rehydration != nil && r.Rehydration.Kind == transcript.RehydrateFile {
			found = true
			n := calibration{ratio: res.Report.Pressure.Ratio}.scale(p.Counter().Text(transcript.TextOf(r.Message.Content)))
			assert.LessOrEqual(t, n, each, "the re-read file fits its room")
			assert.Greater(t, n, each/2, "and uses it")
		}
	}
	assert.True(t, found, "the file was re-read")
}

// A NaN or infinite ratio is refused by New: a NaN compares false with every bound.
func TestNewRejectsNaNRatio(t *testing.T) {
	for _, pc := range []PressureConfig{{Ratio: math.NaN()}, {DefaultRatio: math.NaN()}, {Ratio: math.Inf(1)}} {
		_, err := New(Config{ContextWindow: 10_000, Pressure: pc})
		assert.Error(t, err, "%+v", pc)
	}
}
