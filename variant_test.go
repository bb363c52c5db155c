package agentctx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInputModel switches model and window per turn on one Pipeline: each turn's request is
// byte for byte what a Pipeline configured for that model and window gives, the Report names
// the turn's model and window, and a small window compacts where the large one does not.
func TestInputModel(t *testing.T) {
	k := newTK()
	for i := range 80 {
		k.user(fmt.Sprintf("question %d: %s", i, strings.Repeat("words to fill the window ", 40)))
		k.assistant(text(fmt.Sprintf("answer %d: %s", i, strings.Repeat("more words in the answer ", 40))))
	}
	k.user("and now?")
	base := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, k.at(0))
	tests := []struct {
		name    string
		in      Input
		cfg     Config // a Pipeline dedicated to the same model and window
		compact bool
	}{
		{name: "the Config's model", in: Input{}, cfg: Config{Model: "claude-sonnet-4-5"}},
		{name: "another model from the table", in: Input{Model: "claude-opus-4-1"}, cfg: Config{Model: "claude-opus-4-1"}},
		{name: "a small window", in: Input{ContextWindow: 16_000}, cfg: Config{Model: "claude-sonnet-4-5", ContextWindow: 16_000}, compact: true},
		{name: "a model off the table with its window and output", in: Input{Model: "local-qwen", ContextWindow: 32_000, MaxOutputTokens: 4_000},
			cfg: Config{Model: "local-qwen", ContextWindow: 32_000, MaxOutputTokens: 4_000}, compact: true},
		{name: "back to the Config's model", in: Input{Model: "claude-sonnet-4-5"}, cfg: Config{Model: "claude-sonnet-4-5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Records = k.recs
			got, err := base.Prepare(t.Context(), in)
			require.NoError(t, err)
			want, err := newTestPipeline(t, tt.cfg, k.at(0)).Prepare(t.Context(), Input{Records: k.recs})
			require.NoError(t, err)
			assert.Equal(t, string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)))
			assert.Equal(t, want.Report.Model, got.Report.Model)
			assert.Equal(t, want.Report.ContextWindow, got.Report.ContextWindow)
			assert.Equal(t, want.Report.MaxTokens, got.Report.MaxTokens)
			assert.Equal(t, tt.compact, got.Report.Compaction != nil, "compacted")
		})
	}
	assert.Equal(t, 200_000, base.Window(), "the Pipeline's own window is unchanged")
}

// TestInputModelErrors: a turn naming a model the table lacks without a window, or a negative
// override, is refused as New would refuse the Config, naming the turn's model.
func TestInputModelErrors(t *testing.T) {
	k := newTK()
	k.user("hi")
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, k.at(0))
	for _, tt := range []struct {
		in   Input
		want string
	}{
		{Input{Model: "local-qwen"}, `the turn's model "local-qwen"`},
		{Input{ContextWindow: -1}, "negative"},
		{Input{Model: "local-qwen", MaxOutputTokens: 4_000}, "context window unknown"},
	} {
		tt.in.Records = k.recs
		_, err := p.Prepare(t.Context(), tt.in)
		if assert.Error(t, err, "%+v", tt.in) {
			assert.Contains(t, err.Error(), tt.want)
		}
		_, err = p.Compact(t.Context(), tt.in, CompactOptions{})
		assert.Error(t, err, "Compact refuses it too")
	}
}

// TestVariantsBound keeps at most maxVariants variants, the most recently used, and builds an
// evicted one again on demand with the same bytes.
func TestVariantsBound(t *testing.T) {
	k := newTK()
	k.readTurns(3)
	k.user("and now?")
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, k.at(0))
	first, err := p.Prepare(t.Context(), Input{Records: k.recs, ContextWindow: 50_000})
	require.NoError(t, err)
	for i := range maxVariants + 3 {
		_, err := p.Prepare(t.Context(), Input{Records: k.recs, ContextWindow: 60_000 + 1_000*i})
		require.NoError(t, err)
	}
	assert.Len(t, p.variants.keys, maxVariants)
	assert.NotContains(t, p.variants.keys, variantKey{"claude-sonnet-4-5", 50_000, 0}, "the oldest went")
	again, err := p.Prepare(t.Context(), Input{Records: k.recs, ContextWindow: 50_000})
	require.NoError(t, err)
	assert.Equal(t, string(requestBytes(t, first.Request)), string(requestBytes(t, again.Request)))
	assert.Len(t, p.variants.keys, maxVariants)
}
