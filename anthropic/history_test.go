package anthropic_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/internal/providertest"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistoryCorpus converts every corpus session's records into the SDK's params and back,
// and checks that the requests a Pipeline builds from both record lists are the same bytes.
func TestHistoryCorpus(t *testing.T) {
	sessions := providertest.CorpusSessions(t, "..")
	tested, mismatches := 0, 0
	for _, s := range sessions {
		h, err := anthropic.HistoryOf(nil, s.Records)
		require.NoError(t, err, s.Name)
		_, back, err := h.Records(anthropic.RecordOptions{SessionID: "corpus", Cwd: transcript.LastCwd(s.Records)})
		require.NoError(t, err, s.Name)
		for _, c := range providertest.CorpusConfigs() {
			want, werr := c.Prepare(t, s.Records)
			got, gerr := c.Prepare(t, back)
			if werr != nil {
				assert.Error(t, gerr, "%s %s", s.Name, c.Name)
				continue
			}
			require.NoError(t, gerr, "%s %s", s.Name, c.Name)
			wb, err := want.MarshalJSON()
			require.NoError(t, err)
			gb, err := got.MarshalJSON()
			require.NoError(t, err)
			tested++
			if d := providertest.JSONDiff(wb, gb); d != "" {
				mismatches++
				t.Errorf("%s %s: %s", s.Name, c.Name, d)
			}
		}
	}
	t.Logf("%d sessions, %d requests compared, %d mismatches", len(sessions), tested, mismatches)
	assert.Positive(t, tested)
}

// TestHistoryGolden converts the messages of every golden request, as records, into the
// SDK's params and back: the params marshal as [anthropic.Params] sends the request's
// messages, and the records come back with the same messages.
func TestHistoryGolden(t *testing.T) {
	tested := 0
	for _, c := range providertest.Goldens(t, "../testdata/cases") {
		if slices.ContainsFunc(c.Request.Messages, func(m provider.Message) bool {
			return slices.ContainsFunc(m.Content, func(b transcript.Block) bool { return b.Kind() == transcript.KindCacheEdits })
		}) {
			// A request's cache_edits blocks are the pipeline's, never a message's: no
			// record or history holds one.
			continue
		}
		tested++
		records := make([]transcript.Record, 0, len(c.Request.Messages))
		for i, m := range c.Request.Messages {
			r, err := hostrec.Record(&transcript.Message{Role: m.Role, Content: m.Content}, hostrec.Flags{}, c.Name)
			require.NoError(t, err, "%s: messages[%d]", c.Name, i)
			records = append(records, r)
		}
		require.NoError(t, hostrec.Chain(records, hostrec.Options{SessionID: "golden"}, func(int) string { return c.Name }))
		h, err := anthropic.HistoryOf(c.Request.System, records)
		require.NoError(t, err, c.Name)
		p, err := anthropic.Params(c.Request, anthropic.Options{})
		require.NoError(t, err, c.Name)
		want, err := json.Marshal(p.Messages)
		require.NoError(t, err)
		got, err := json.Marshal(h.Messages)
		require.NoError(t, err)
		assert.Empty(t, providertest.JSONDiff(want, got), c.Name)
		system, back, err := h.Records(anthropic.RecordOptions{SessionID: "golden"})
		require.NoError(t, err, c.Name)
		assert.Equal(t, blocksJSON(t, c.Request.System), blocksJSON(t, system), c.Name)
		require.Len(t, back, len(records), c.Name)
		for i := range records {
			assert.Equal(t, messageJSON(t, records[i].Message), messageJSON(t, back[i].Message), "%s: messages[%d]", c.Name, i)
		}
	}
	t.Logf("%d golden requests", tested)
	assert.Positive(t, tested)
}

func messageJSON(t *testing.T, m *transcript.Message) string {
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func blocksJSON(t *testing.T, ts []*transcript.Text) []string {
	out := make([]string, 0, len(ts))
	for _, b := range ts {
		raw, err := transcript.MarshalBlock(b)
		require.NoError(t, err)
		out = append(out, string(raw))
	}
	return out
}
