package agentctx

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A long text session with few escapes is not measured: 1 MB of plain prose against a 4 MB
// limit stays under the exact-string bound, so Prepare neither encodes it nor reports a body
// size.
func TestBodyNotMeasured(t *testing.T) {
	k := newTK()
	prose := strings.Repeat("The build passed on the second try. ", 3000) // about 108 KB
	for range 10 {
		k.user(prose)
		k.assistant(text("Noted."))
	}
	k.user("and now?")
	const limit = 4_000_000
	res, err := newTestPipeline(t, Config{ContextWindow: 4_000_000, Pressure: PressureConfig{MaxBodyBytes: limit}}, k.at(0)).Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	assert.Zero(t, res.Report.BodyBytes, "not measured")
	b, err := res.Request.MarshalJSON()
	require.NoError(t, err)
	assert.Less(t, len(b), limit)
}

// pngBlock returns a base64 image block of about n bytes of PNG-headed random data.
func pngBlock(n int) *transcript.Image {
	raw := make([]byte, n)
	_, _ = rand.Read(raw)
	copy(raw, "\x89PNG\r\n\x1a\n")
	return &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(raw)}}
}

// A request over the body limit is compacted when it can be (the summary drops the history's
// media), and refused with a *RequestTooLargeError when it cannot, or when what compaction must
// keep is still over; a typical request never measures its body.
func TestRequestTooLarge(t *testing.T) {
	const limit = 2_000_000
	session := func(last int) *tk {
		k := newTK()
		for i := range 5 {
			k.userBlocks(text("look at this screenshot"), pngBlock(300_000))
			a := k.assistant(text("I see the screen. " + strings.Repeat("It shows a form. ", 20)))
			a.Message.Usage = &transcript.Usage{InputTokens: 2_000 * (i + 1), OutputTokens: 100}
		}
		if last > 0 {
			k.userBlocks(text("and this one"), pngBlock(last))
		} else {
			k.user("what changed between them?")
		}
		return k
	}
	cfg := func(s summarize.Summarizer) Config {
		return Config{Pressure: PressureConfig{MaxBodyBytes: limit}, Compact: CompactConfig{Summarizer: s}}
	}

	t.Run("no summarizer: compacted rather than refused", func(t *testing.T) {
		k := session(0)
		res, err := newTestPipeline(t, cfg(nil), k.at(0)).Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		require.NotNil(t, res.Report.Compaction)
		assert.Equal(t, "extractive", res.Report.Compaction.Summarizer)
		assert.Contains(t, kinds(res.Report.Degradations), DegradedFallback, "the Report says no Summarizer was there")
	})
	t.Run("auto-compact disabled", func(t *testing.T) {
		k := session(0)
		c := cfg(nil)
		c.Compact.DisableAuto = true
		res, err := newTestPipeline(t, c, k.at(0)).Prepare(t.Context(), Input{Records: k.recs})
		require.ErrorIs(t, err, provider.ErrRequestTooLarge)
		e, ok := errors.AsType[*provider.RequestTooLargeError](err)
		require.True(t, ok)
		assert.Greater(t, e.Bytes, limit)
		assert.Equal(t, limit, e.Limit)
		assert.Contains(t, e.Reason, "disabled")
		assert.Equal(t, e.Bytes, res.Report.BodyBytes)
		body, err := res.Request.MarshalJSON()
		require.NoError(t, err)
		assert.Len(t, body, e.Bytes, "the measured size is the body's")
		assert.Less(t, res.Report.Pressure.Tokens, res.Report.Pressure.Levels.Threshold, "the tokens alone would fit")
	})
	t.Run("compacted under the limit", func(t *testing.T) {
		k := session(0)
		res, err := newTestPipeline(t, cfg(summarize.Extractive{}), k.at(0)).Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		require.NotNil(t, res.Report.Compaction)
		assert.Equal(t, CompactCompacted, res.Report.Compaction.Outcome)
		body, err := res.Request.MarshalJSON()
		require.NoError(t, err)
		assert.Less(t, len(body), limit)
		checkConservation(t, "images", Input{Records: k.recs}, res)
	})
	t.Run("the kept prompt alone is over", func(t *testing.T) {
		k := session(1_600_000)
		res, err := newTestPipeline(t, cfg(summarize.Extractive{}), k.at(0)).Prepare(t.Context(), Input{Records: k.recs})
		require.ErrorIs(t, err, provider.ErrRequestTooLarge)
		assert.Contains(t, err.Error(), "compacted, and the request still is over the limit")
		assert.NotEmpty(t, res.Append, "the compaction's records come with the error")
	})
	t.Run("a typical request is not measured", func(t *testing.T) {
		k := newTK()
		k.user("hello")
		res, err := newTestPipeline(t, Config{}, k.at(0)).Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		assert.Zero(t, res.Report.BodyBytes)
	})
	_, err := New(Config{Model: "claude-sonnet-4-5", Pressure: PressureConfig{MaxBodyBytes: -1}})
	assert.ErrorContains(t, err, "Pressure.MaxBodyBytes -1 is negative")
}
