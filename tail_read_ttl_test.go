package agentctx

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// autoWriter writes a session as a live runtime under CacheConfig.TTL "auto" at a
// 30,000-token window would: Prepare before each response, its records appended, the
// response hung off Result.Leaf with the request's size as its usage.
type autoWriter struct {
	p              *Pipeline
	now            time.Time
	recs           []transcript.Record
	lastUUID, leaf string
	tokens         int
}

// newAutoWriter returns a writer that goes on from recs, the last of which has uuid last.
func newAutoWriter(t testing.TB, recs []transcript.Record, last string) *autoWriter {
	w := &autoWriter{recs: recs, lastUUID: last}
	p, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: 30_000, Tokens: EstimateCounter{},
		Compact: CompactConfig{Summarizer: summarize.Extractive{}}, Budget: BudgetConfig{Store: &MapStore{}},
		Cache: CacheConfig{TTL: "auto"}, Now: func() time.Time { return w.now }})
	require.NoError(t, err)
	w.p = p
	return w
}

// add appends r, written at at. When r is a response that opens an API round, the turn is
// prepared first, a second before at: add returns its request
// bytes and the records it appended, encoded.
func (w *autoWriter) add(t testing.TB, r transcript.Record, round bool, at time.Time) (req []byte, appended string) {
	if round {
		w.now = at.Add(-time.Second)
		res, err := w.p.Prepare(context.Background(), Input{Records: w.recs})
		require.NoError(t, err)
		w.recs = append(w.recs, res.Append...)
		w.leaf, w.tokens = res.Leaf, res.Report.InputTokens
		req, appended = requestBytes(t, res.Request), encodeRecords(t, res.Append)
	}
	if r.ParentUUID == w.lastUUID && w.leaf != "" {
		r.ParentUUID = w.leaf
	}
	r.Timestamp = transcript.Timestamp(at)
	if r.Type == transcript.TypeAssistant && r.Message != nil && r.Message.Usage != nil {
		u := *r.Message.Usage
		u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens = w.tokens, 0, 0
		u.Extra = nil
		m := *r.Message
		m.Usage = &u
		r.Message = &m
	}
	w.lastUUID, w.leaf = r.UUID, ""
	w.recs = append(w.recs, r)
	return req, appended
}

// autoTimes times a generated session: each API round (a response after a user record)
// starts idle(round) after the record before it, the other records follow a second apart. It
// returns each record's time and whether it opens a round, and the position of the round
// numbered split (len(src) when there are fewer).
func autoTimes(src []transcript.Record, idle func(round int) time.Duration, split int) (at []time.Time, round []bool, end int) {
	at, round, end = make([]time.Time, len(src)), make([]bool, len(src)), len(src)
	clock, n := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), 0
	for i := range src {
		d := time.Second
		if i > 0 && src[i].Type == transcript.TypeAssistant && src[i-1].Type == transcript.TypeUser {
			if n == split {
				end = i
			}
			d, round[i] = idle(n), true
			n++
		}
		clock = clock.Add(d)
		at[i] = clock
	}
	return at, round, end
}

// TestTailReadCacheTTL writes sessions under the cache TTL "auto" with idle gaps of 5 to 60
// minutes, compacted by the library as they are written, reads each whole and from its
// active tail (the read stops at the latest boundary's cut) and prepares the turns that follow
// on both: the requests and the decision records must be the same byte for byte. The TTL in
// effect at the cut comes from a decision before it, and the weighing of the responses
// after it starts from the responses before it.
func TestTailReadCacheTTL(t *testing.T) {
	const short, gap = 10 * time.Second, 12 * time.Minute
	tests := []struct {
		name  string
		turns int
		idle  func(round int) time.Duration
		// changes is how many times the TTL changes in the turns that follow.
		changes int
	}{
		{"1h before the compaction", 90, func(round int) time.Duration {
			if round >= 40 && round < 43 {
				return gap
			}
			return short
		}, 0},
		{"hours idle after the cut", 90, func(round int) time.Duration {
			switch {
			case round >= 40 && round < 43:
				return gap
			case round >= 90:
				return 2 * time.Hour
			}
			return short
		}, 1},
		{"gaps straddle the cut", 140, func(round int) time.Duration {
			if round%5 == 4 {
				return gap
			}
			return short
		}, 0},
		{"gaps past the hour", 140, func(round int) time.Duration {
			switch {
			case round%9 == 8:
				return 2 * time.Hour
			case round%4 == 3:
				return gap
			}
			return short
		}, 0},
	}
	const following = 12
	for _, tt := range tests {
		for _, scanned := range []bool{false, true} {
			name := tt.name
			if scanned {
				name += ", boundaries without history"
			}
			t.Run(name, func(t *testing.T) { checkTailReadCacheTTL(t, tt.turns, following, tt.idle, tt.changes, scanned) })
		}
	}
}

// checkTailReadCacheTTL is one case of TestTailReadCacheTTL: turns rounds written, following
// prepared on both reads, changes TTL decisions among them. When scanned is true the history
// is taken off every boundary before the session is written, as Claude Code writes its
// boundaries: the tail read then scans the lines before the cut.
func checkTailReadCacheTTL(t *testing.T, turns, following int, idle func(int) time.Duration, wantChanges int, scanned bool) {
	src := testkit.Generate(turns+following, testkit.Options{Seed: 7})
	at, round, end := autoTimes(src, idle, turns)
	require.Less(t, end, len(src))
	// The session is written up to the round numbered turns; the rounds after it
	// follow on each read.
	gen := newAutoWriter(t, nil, "")
	for i := range end {
		gen.add(t, src[i], round[i], at[i])
	}

	cut, decisions := -1, 0
	for j, r := range gen.recs {
		if r.IsCompactBoundary() {
			cut = j
		}
		if r.Subtype == transcript.SubtypeCacheTTL {
			decisions++
		}
	}
	require.Positive(t, cut, "the session compacted")
	h := gen.recs[cut].History
	require.NotNil(t, h)
	require.NotNil(t, h.CacheTTL, "the history carries the weighing at the cut")
	assert.Positive(t, h.CacheTTL.Gaps, "gaps of 5 to 60 minutes before the cut")
	assert.Positive(t, decisions, "the TTL changed before the cut")

	written := gen.recs
	if scanned {
		written = slices.Clone(gen.recs)
		for j := range written {
			written[j].History = nil
		}
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(encodeRecords(t, written)), 0o644))
	whole, tail := readBothWays(t, path)
	require.NotNil(t, tail.Tail)
	require.Equal(t, !scanned, tail.Tail.Digest, "the read stopped at the cut: %s", tail.Tail.DigestProblem)
	require.Less(t, len(tail.Records), len(whole.Records))
	assert.True(t, slices.ContainsFunc(tail.Records[:tail.Tail.History], func(r transcript.Record) bool {
		return r.Subtype == transcript.SubtypeCacheTTL
	}), "the history carries the latest TTL decision before the cut")

	ws := newAutoWriter(t, whole.Records, gen.lastUUID)
	ts := newAutoWriter(t, tail.Records, gen.lastUUID)
	long, rounds, changes := 0, 0, 0
	for i := end; i < len(src); i++ {
		want, wantApp := ws.add(t, src[i], round[i], at[i])
		got, gotApp := ts.add(t, src[i], round[i], at[i])
		require.Equal(t, string(want), string(got), "record %d: the request from the tail read", i)
		require.Equal(t, wantApp, gotApp, "record %d: the records appended on the tail read", i)
		changes += strings.Count(wantApp, `"subtype":"agentctx_cache_ttl"`)
		if round[i] {
			rounds++
			if strings.Contains(string(want), `"ttl":"1h"`) {
				long++
			}
		}
	}
	assert.Equal(t, following, rounds)
	assert.Positive(t, long, "requests at 1h")
	assert.Equal(t, wantChanges, changes, "TTL decisions in the turns that follow")
	t.Logf("%d records, latest cut at %d, %d TTL decisions before it, tally %+v; %d of %d following requests at 1h, %d TTL decisions among them",
		len(gen.recs), cut, decisions, *h.CacheTTL, long, rounds, changes)
}
