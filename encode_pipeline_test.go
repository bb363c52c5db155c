package agentctx

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeCorpus encodes the request Prepare builds for every corpus session through the
// Pipeline's memo and without it, with the same bytes. Package provider compares the encoding
// without a memo with its reference encoder on the messages of the same sessions as read
// (not as prepared); the golden cases pin the prepared bytes.
func TestEncodeCorpus(t *testing.T) {
	sessions := corpusSessions(t)
	if sessions == nil {
		t.Skip("../shared/corpus not found; corpus encoding test skipped")
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, s := range sessions {
		p, err := New(Config{Model: sessionModel(s.records), ContextWindow: 10_000_000, Tokens: corpusCounter,
			Budget: BudgetConfig{Store: &MapStore{}}, Now: func() time.Time { return now }})
		require.NoError(t, err)
		res, err := p.Prepare(t.Context(), Input{Records: s.records})
		if len(res.Request.Messages) == 0 {
			continue
		}
		require.NoError(t, err, s.path)
		checkPreparedEncoding(t, s.path, res.Request)

	}
}

// TestEncodePipelineConcurrent runs conversations turn by turn on one Pipeline from many
// goroutines (run it with -race): each turn's body, encoded through the shared memo, is the
// one encoded without a memo, and a turn's memoized encoding allocates a constant number of times
// whatever the history's length.
func TestEncodePipelineConcurrent(t *testing.T) {
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Go(func() {
			k := newTK()
			for turn := range 12 {
				k.user(fmt.Sprintf("conversation %d, question %d: <why>?", c, turn))
				tu := toolUse(fmt.Sprintf("toolu_%d_%d", c, turn), "Bash")
				k.assistant(text("Let me look."), tu)
				k.results(result(tu.ID, strings.Repeat(fmt.Sprintf("line %d of the output\n", turn), 40)))
				k.assistant(text(fmt.Sprintf("Done with %d.", turn)))
				res, err := p.Prepare(t.Context(), Input{Records: k.recs})
				if !assert.NoError(t, err) {
					return
				}
				body, err := res.Request.MarshalJSON()
				ref, refErr := plainEncoding(res.Request)
				if !assert.NoError(t, err) || !assert.NoError(t, refErr) || !assert.Equal(t, string(ref), string(body)) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestEncodeSteadyAllocs guards the memoized encoding: once a request's parts are in the
// memo, encoding it again allocates the same few times (the output buffer, the encoder; the
// scratch of its look-ups is pooled) for a 4-turn and a 400-turn history.
func TestEncodeSteadyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the encoding's scratch comes from a sync.Pool, which the race detector empties at random: an allocation more now and then")
	}
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5", ContextWindow: 10_000_000}, time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC))
	allocs := map[int]float64{}
	for _, turns := range []int{4, 400} {
		k := newTK()
		k.readTurns(turns)
		res, err := p.Prepare(t.Context(), Input{Records: k.recs})
		require.NoError(t, err)
		_, err = res.Request.MarshalJSON()
		require.NoError(t, err)
		allocs[turns] = testing.AllocsPerRun(20, func() {
			if _, err := res.Request.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		})
	}
	assert.LessOrEqual(t, allocs[400], 4.0, "allocations of a warm encoding: %v", allocs)
	assert.Equal(t, allocs[4], allocs[400], "allocations do not grow with the history: %v", allocs)
}

// plainEncoding encodes req without a memo.
func plainEncoding(req provider.Request) ([]byte, error) {
	req.Memo = nil
	return req.MarshalJSON()
}

// checkPreparedEncoding asserts that a request a Pipeline built encodes to the same bytes
// through the Pipeline's memo as without one, three ways: MarshalJSON, WriteTo and the size
// BodySize measures.
func checkPreparedEncoding(t *testing.T, name string, req provider.Request) {
	t.Helper()
	require.NotNil(t, req.Memo, "%s: the Pipeline sets its memo", name)
	want, err := plainEncoding(req)
	require.NoError(t, err, name)
	got, err := req.MarshalJSON()
	require.NoError(t, err, name)
	assert.Equal(t, string(want), string(got), "%s, MarshalJSON", name)
	var b bytes.Buffer
	n, err := req.WriteTo(&b)
	require.NoError(t, err, name)
	assert.Equal(t, string(want), b.String(), "%s, WriteTo", name)
	assert.Equal(t, int64(len(want)), n, "%s, WriteTo's count", name)
	size, err := req.BodySize(0)
	require.NoError(t, err, name)
	assert.Equal(t, len(want), size, "%s, BodySize", name)
}
