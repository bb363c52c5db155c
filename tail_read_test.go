package agentctx

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests of this file check that a read from the active tail
// (transcript.ReadOptions.TailMinBytes) gives the requests a whole read gives.

// tailWindows are the context windows the tail tests prepare each session at: the model's,
// and one small enough that most sessions compact, so that the breaker, the thrash guard
// and the pins see the history the tail read keeps.
var tailWindows = []int{0, 30_000}

// readBothWays reads path whole and from its tail (a threshold of one byte: every file).
func readBothWays(t testing.TB, path string) (whole, tail *transcript.File) {
	t.Helper()
	whole, err := transcript.ReadFile(path, transcript.ReadOptions{})
	require.NoError(t, err, path)
	tail, err = transcript.ReadFile(path, transcript.ReadOptions{TailMinBytes: 1})
	require.NoError(t, err, path)
	require.Equal(t, whole.End, tail.End, "%s: End", path)
	return whole, tail
}

// checkTailRequests prepares the next turn of both reads at each of tailWindows with a new
// Pipeline each and compares the request bytes and the records the turn appends (a
// compaction's, a decision's: their uuids too).
func checkTailRequests(t *testing.T, name string, whole, tail *transcript.File) {
	t.Helper()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := len(whole.Records) - 1; i >= 0; i-- {
		if ts, err := time.Parse(time.RFC3339Nano, whole.Records[i].Timestamp); err == nil {
			now = ts.Add(5 * time.Second)
			break
		}
	}
	for _, w := range tailWindows {
		// The cache TTL "auto" weighs every response of the thread, those before the cut too.
		ttl := ""
		if w == tailWindows[0] {
			ttl = "auto"
		}
		prepare := func(records []transcript.Record) (req []byte, appended string, err error) {
			p, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: w, Tokens: EstimateCounter{},
				Compact: CompactConfig{Summarizer: summarize.Extractive{}}, Budget: BudgetConfig{Store: &MapStore{}},
				Cache: CacheConfig{TTL: ttl}, Now: func() time.Time { return now }})
			require.NoError(t, err)
			res, err := p.Prepare(context.Background(), Input{Records: records})
			if err != nil {
				return nil, "", err
			}
			return requestBytes(t, res.Request), encodeRecords(t, res.Append), nil
		}
		want, wantApp, werr := prepare(whole.Records)
		got, gotApp, gerr := prepare(tail.Records)
		require.Equal(t, werr != nil, gerr != nil, "%s window %d: errors %v / %v", name, w, werr, gerr)
		if werr != nil {
			assert.Equal(t, werr.Error(), gerr.Error(), "%s window %d", name, w)
			continue
		}
		require.Equal(t, string(want), string(got), "%s window %d, TTL %q: request from the tail (line %d)", name, w, ttl, tail.Tail.Line)
		require.Equal(t, wantApp, gotApp, "%s window %d, TTL %q: records appended on the tail read (line %d)", name, w, ttl, tail.Tail.Line)
	}
}

// TestTailReadSessions compares the requests of whole and tail reads of every corpus session,
// every bundled session and every golden case's transcript.
func TestTailReadSessions(t *testing.T) {
	files := corpusPaths(t)
	if raceEnabled {
		// One corpus session in four: the race detector has nothing concurrent to find in a
		// read, and the plain run reads them all.
		var some []string
		for i := 0; i < len(files); i += 4 {
			some = append(some, files[i])
		}
		files = some
	}
	if len(files) == 0 {
		t.Log("../shared/corpus not found: the corpus sessions are skipped, the bundled ones run")
	}
	for _, pattern := range []string{"testdata/sessions/*/*.jsonl", "testdata/cases/*/transcript.jsonl"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	cut := 0
	for _, f := range files {
		whole, tail := readBothWays(t, f)
		if tail.Tail == nil {
			assert.Equal(t, whole.Records, tail.Records, f)
			continue
		}
		cut++
		checkTailRequests(t, f, whole, tail)
	}
	t.Logf("%d files, %d read from a tail (the others have no compact boundary of the main thread, or were read whole)", len(files), cut)
	assert.Positive(t, cut)
}

// TestTailReadCompacted generates a session that the library compacts many times as it is
// written (Prepare before every response, its records appended) and compares whole and tail
// reads of it at many turns: after each compaction, and at points between. The boundaries
// carry their history, so each tail read stops at its cut; the same prefixes with the
// histories taken off (as an older file, or Claude Code's) are read by scanning the lines
// before the cut, and give the same requests too.
func TestTailReadCompacted(t *testing.T) {
	turns := 1200
	if testing.Short() {
		turns = 300
	}
	records := compactedSession(t, turns, 30_000)
	boundaries := 0
	for i := range records {
		if records[i].IsCompactBoundary() {
			boundaries++
			require.NotNil(t, records[i].History, "boundary %d carries its history", boundaries)
		}
	}
	require.Greater(t, boundaries, 3)
	dir := t.TempDir()
	checked, cuts, digests := 0, 0, 0
	for end := 40; end <= len(records); end += max(1, len(records)/40) {
		for _, scan := range []bool{false, true} {
			prefix := records[:end]
			if scan {
				prefix = withoutHistory(prefix)
			}
			path := filepath.Join(dir, "s.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(encodeRecords(t, prefix)), 0o644))
			whole, tail := readBothWays(t, path)
			checked++
			if tail.Tail == nil {
				continue
			}
			cuts++
			assert.Equal(t, !scan, tail.Tail.Digest, "%d records: the read stops at the cut when the boundary has a history", end)
			assert.Empty(t, tail.Tail.DigestProblem)
			if tail.Tail.Digest {
				digests++
			}
			assert.Less(t, len(tail.Records), len(whole.Records))
			checkTailRequests(t, path, whole, tail)
		}
	}
	t.Logf("%d records, %d boundaries: %d prefixes compared, %d read from a tail, %d of them from the boundary's history", len(records), boundaries, checked, cuts, digests)
	assert.Greater(t, cuts, checked/2)
	assert.Equal(t, cuts, 2*digests)
}

// withoutHistory returns a copy of records with the boundaries' histories taken off.
func withoutHistory(records []transcript.Record) []transcript.Record {
	out := slices.Clone(records)
	for i := range out {
		out[i].History = nil
	}
	return out
}

// compactedSession writes a generated session of turns turns as a live runtime with a
// window-token context would: Prepare before each response, its records appended, the
// response hung off Result.Leaf with the request's size as its usage.
func compactedSession(t testing.TB, turns, window int) []transcript.Record {
	t.Helper()
	src := testkit.Generate(turns, testkit.Options{Seed: 1})
	var now time.Time
	p, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: window, Tokens: EstimateCounter{},
		Compact: CompactConfig{Summarizer: summarize.Extractive{}}, Budget: BudgetConfig{Store: &MapStore{}},
		Now: func() time.Time { return now }})
	require.NoError(t, err)
	recs := make([]transcript.Record, 0, len(src)+len(src)/10)
	lastUUID, leaf, tokens := "", "", 0
	for i := range src {
		r := src[i]
		if r.Type == transcript.TypeAssistant && i > 0 && src[i-1].Type == transcript.TypeUser && len(recs) > 0 {
			if ts, err := time.Parse(time.RFC3339Nano, recs[len(recs)-1].Timestamp); err == nil {
				now = ts.Add(5 * time.Second)
			}
			res, err := p.Prepare(context.Background(), Input{Records: recs})
			require.NoError(t, err, "record %d", i)
			recs = append(recs, res.Append...)
			leaf, tokens = res.Leaf, res.Report.InputTokens
		}
		if r.ParentUUID == lastUUID && leaf != "" {
			r.ParentUUID = leaf
		}
		if r.Type == transcript.TypeAssistant && r.Message != nil && r.Message.Usage != nil {
			u := *r.Message.Usage
			u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens = tokens, 0, 0
			u.Extra = nil
			m := *r.Message
			m.Usage = &u
			r.Message = &m
		}
		lastUUID, leaf = r.UUID, ""
		recs = append(recs, r)
	}
	return slices.Clip(recs)
}

// TestTailReadKeepsHistory checks what a tail read keeps from before its cut on a generated
// compacted session: scanning a file whose boundaries carry no history, the older boundaries
// and the line numbers of the file; stopping at the cut of one whose boundaries do, the
// records the history carries (line 0) and the file's line numbers after the cut. Both give
// the compaction state of a whole read.
func TestTailReadKeepsHistory(t *testing.T) {
	records := compactedSession(t, 300, 30_000)
	count := func(rs []transcript.Record) int {
		n := 0
		for i := range rs {
			if rs[i].IsCompactBoundary() {
				n++
			}
		}
		return n
	}
	for _, digest := range []bool{false, true} {
		recs := records
		if !digest {
			recs = withoutHistory(records)
		}
		path := filepath.Join(t.TempDir(), "s.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(encodeRecords(t, recs)), 0o644))
		whole, tail := readBothWays(t, path)
		require.NotNil(t, tail.Tail)
		require.Equal(t, digest, tail.Tail.Digest)
		h := tail.Tail.History
		assert.Positive(t, h)
		assert.Equal(t, tail.Tail.Line, tail.Records[h].Line, "the first tail record is on the cut's line")
		for i, r := range tail.Records {
			assert.Equal(t, r.Line, tail.Lines[i])
			if digest && i < h {
				assert.Zero(t, r.Line, "record %d: carried by the history", i)
				continue
			}
			assert.Equal(t, whole.Records[r.Line-1].UUID, r.UUID, "record %d: line %d", i, r.Line)
		}
		if digest {
			assert.Equal(t, 1, count(tail.Records), "only the latest boundary is read")
			assert.True(t, tail.Records[slices.IndexFunc(tail.Records, func(r transcript.Record) bool { return r.IsCompactBoundary() })].Cut)
		} else {
			assert.Equal(t, count(whole.Records), count(tail.Records), "every boundary is kept")
		}
		st, err := New(Config{Model: "claude-sonnet-4-5", ContextWindow: 30_000})
		require.NoError(t, err)
		a, err := st.CompactState(whole.Records, "")
		require.NoError(t, err)
		b, err := st.CompactState(tail.Records, "")
		require.NoError(t, err)
		assert.Equal(t, a.Compactions, b.Compactions)
		assert.Equal(t, a.Refills, b.Refills)
		assert.Equal(t, a.ConsecutiveFailures, b.ConsecutiveFailures)
	}
}

// TestTailReadDamagedHistory checks that a history on the latest boundary that was edited,
// cut short or does not fit the lines after the cut is not used: the read scans the lines
// before the cut instead, says why, and gives a whole read's requests.
func TestTailReadDamagedHistory(t *testing.T) {
	records := compactedSession(t, 300, 30_000)
	last := -1
	for i := range records {
		if records[i].IsCompactBoundary() {
			last = i
		}
	}
	require.Positive(t, last)
	tests := []struct {
		name   string
		damage func(h *transcript.History)
		want   string
	}{
		{"edited", func(h *transcript.History) { h.Compactions += 3 }, "sum does not match"},
		{"another version", func(h *transcript.History) { h.Version = transcript.HistoryVersion + 1; require.NoError(t, h.Seal()) }, fmt.Sprintf("version %d", transcript.HistoryVersion+1)},
		{"counts out of range", func(h *transcript.History) { h.Runs = make([]int, h.Compactions+1); require.NoError(t, h.Seal()) }, "out of range"},
		{"a record that cannot be read", func(h *transcript.History) {
			h.Records = append(h.Records, json.RawMessage(`{"type":"user","uuid":"x","message":{"role":"user","content":[{"text":"no type"}]}}`))
			require.NoError(t, h.Seal())
		}, "cannot be read whole"},
		{"a record after the cut", func(h *transcript.History) {
			b, err := records[last+1].MarshalJSON()
			require.NoError(t, err)
			h.Records = append(h.Records, b)
			require.NoError(t, h.Seal())
		}, "which the lines after the cut hold too"},
	}
	for _, tt := range tests {
		recs := slices.Clone(records)
		h := *recs[last].History
		h.Runs, h.Open, h.Records = slices.Clone(h.Runs), slices.Clone(h.Open), slices.Clone(h.Records)
		tt.damage(&h)
		recs[last].History = &h
		path := filepath.Join(t.TempDir(), "s.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(encodeRecords(t, recs)), 0o644))
		whole, tail := readBothWays(t, path)
		require.NotNil(t, tail.Tail, tt.name)
		assert.False(t, tail.Tail.Digest, tt.name)
		assert.Contains(t, tail.Tail.DigestProblem, tt.want, tt.name)
		assert.Contains(t, tail.Tail.DigestProblem, "scanned instead", tt.name)
		checkTailRequests(t, tt.name, whole, tail)
	}

	// A boundary line cut short is no boundary: the read takes the one before it.
	text := encodeRecords(t, records)
	lines := strings.SplitAfter(text, "\n")
	lines[last] = lines[last][:len(lines[last])/2] + "\n"
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644))
	whole, tail := readBothWays(t, path)
	if tail.Tail != nil {
		checkTailRequests(t, "cut short", whole, tail)
	}
	assert.NotEmpty(t, whole.Problems)
}

// checkGoldenTail writes a golden case's records of one turn to a file and, when a tail read
// of it cuts, compares the turn run on the tail read with the turn run on the whole read.
func checkGoldenTail(t *testing.T, name string, records []transcript.Record, run func([]transcript.Record) (Result, error)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "turn.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(encodeRecords(t, records)), 0o644))
	whole, tail := readBothWays(t, path)
	if tail.Tail == nil {
		return
	}
	want, werr := run(whole.Records)
	got, gerr := run(tail.Records)
	require.Equal(t, fmt.Sprint(werr), fmt.Sprint(gerr), "%s: error from the tail read (line %d)", name, tail.Tail.Line)
	assert.Equal(t, string(requestBytes(t, want.Request)), string(requestBytes(t, got.Request)), "%s: request from the tail read (line %d)", name, tail.Tail.Line)
}
