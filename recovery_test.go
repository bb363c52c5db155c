package agentctx

import (
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var recoverNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// recoverPipeline is a small-window pipeline with cfg's compaction settings.
func recoverPipeline(t *testing.T, compact CompactConfig) *Pipeline {
	t.Helper()
	return windowPipeline(t, 12_000, compact)
}

func windowPipeline(t *testing.T, window int, compact CompactConfig) *Pipeline {
	t.Helper()
	p, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: window, MaxOutputTokens: 16_000, Tokens: EstimateCounter{},
		Compact: compact, Now: func() time.Time { return recoverNow }})
	require.NoError(t, err)
	return p
}

// ptlError is a prompt-too-long error as an adapter reports it.
func ptlError(tokens int) error {
	return &providerError{class: provider.ClassPromptTooLong, tree: []error{&provider.PromptTooLongError{Tokens: tokens, Limit: 12_000}}}
}

func TestPickMedia(t *testing.T) {
	img := func(seed byte, n int) *transcript.Image { return imageSpec{Bytes: n, Seed: seed}.block() }
	req := provider.Request{Messages: []provider.Message{
		{Role: transcript.RoleUser, Content: []transcript.Block{img(1, 100), img(2, 6000)}},
		{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.ToolUse{ID: "t1", Name: "Shot", Input: []byte(`{}`)}}},
		{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{img(3, 100), img(1, 100)}}, &transcript.Text{Text: "see"}}},
	}}
	paths := func(picked []transcript.StrippedMedia) []string {
		var out []string
		for _, m := range picked {
			out = append(out, m.Path)
		}
		return out
	}
	tests := []struct {
		name string
		e    provider.MediaRejectedError
		want []string
	}{
		{"paths", provider.MediaRejectedError{Paths: []string{"messages.2.content.0.content.0"}}, []string{"messages.2.content.0.content.0"}},
		{"a path naming no media", provider.MediaRejectedError{Paths: []string{"messages.2.content.1"}}, nil},
		{"size", provider.MediaRejectedError{MaxBytes: 5000}, []string{"messages.0.content.1"}},
		{"count: the oldest beyond it, each block once", provider.MediaRejectedError{MaxImages: 2}, []string{"messages.0.content.0", "messages.0.content.1"}},
		{"nothing named: the latest message's media", provider.MediaRejectedError{}, []string{"messages.2.content.0.content.0", "messages.2.content.0.content.1"}},
	}
	for _, tt := range tests {
		got, rule := pickMedia(&req, &tt.e)
		assert.Equal(t, tt.want, paths(got), "%s (%s)", tt.name, rule)
	}
	// A source met twice is one block to strip: the count rule's oldest image (seed 1) also
	// stands in the last message, and is listed once.
	got, _ := pickMedia(&provider.Request{Messages: []provider.Message{{Role: transcript.RoleUser, Content: []transcript.Block{img(1, 100), img(1, 100)}}}}, &provider.MediaRejectedError{})
	assert.Len(t, got, 1)
	assert.Equal(t, "image", got[0].Kind)
}

// A 413 the reactive compaction cannot cure — the conversation is its latest input, which
// every compaction keeps — strips the request's largest media, recorded after the
// compaction's records; the request fits, and the next Prepare builds the same one.
func TestRecoverRequestTooLargeStrips(t *testing.T) {
	p := recoverPipeline(t, CompactConfig{})
	k := newTK()
	k.user("What is left?")
	small, big := imageSpec{Bytes: 200, Seed: 4}.block(), imageSpec{Bytes: 9000, Seed: 5}.block()
	k.userBlocks(&transcript.Text{Text: "Both captures."}, small, big)
	ctx := t.Context()
	res, err := p.Prepare(ctx, Input{Records: k.recs})
	require.NoError(t, err)
	records := append(k.recs, res.Append...)
	res, err = p.Recover(ctx, Input{Records: records}, &providerError{class: provider.ClassRequestTooLarge})
	require.NoError(t, err, "%v", res.Report.Recovery)
	assert.Equal(t, transcript.RungRequestTooLarge, res.Report.Recovery.Rung)
	require.NotNil(t, res.Report.Compaction)
	assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome, "the earlier prompt is summarized; the latest input stays")
	var subtypes []string
	for _, r := range res.Append {
		subtypes = append(subtypes, string(r.Subtype))
	}
	assert.Equal(t, []string{"agentctx_recovery", "compact_boundary", "", "agentctx_recovery"}, subtypes)
	last := res.Append[len(res.Append)-1].Recovery
	require.Len(t, last.Media, 1, "only the largest image goes")
	assert.Equal(t, transcript.MediaHash(big.Source), last.Media[0].Hash)
	limit := res.Append[0].Recovery.Bytes - 1
	body := requestBytes(t, res.Request)
	assert.Less(t, len(body), limit, "the body fits the lowered limit")
	assert.Contains(t, string(body), small.Source.Data, "the small image stays")
	cin, cres := recoveredInput(records, res)
	records = append(records, res.Append...)
	checkConservation(t, "413 strip", cin, cres)

	again, err := p.Prepare(ctx, Input{Records: records, Leaf: res.Leaf})
	require.NoError(t, err)
	assert.Equal(t, string(body), string(requestBytes(t, again.Request)))
	assert.Empty(t, again.Append)
}
