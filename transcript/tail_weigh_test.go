package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutSession describes a session for reading across a cut: n exchanges 12 minutes apart
// (eight when n is 0), the response of exchange i stopping for stop(i) ("" for null; nil:
// "end_turn") and edited by edit(i, line), extra(i) lines after it; with segment, a kept
// exchange (uh, ah) that the compact boundary's preserved segment names, before it in the
// file; then the compact boundary, without a history, its summary, and three exchanges
// whose responses stop for tailStop(i) (i = -1 for the kept exchange's).
type cutSession struct {
	n              int
	segment        bool
	stop, tailStop func(i int) string
	edit           func(i int, line string) string
	extra          func(i int) []string
}

// write writes the session and returns the file's path.
func (c cutSession) write(t *testing.T) string {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	at := func(min int) string { return t0.Add(time.Duration(min) * time.Minute).Format(time.RFC3339Nano) }
	stopOf := func(f func(int) string, i int) string {
		if f == nil {
			return "end_turn"
		}
		return f(i)
	}
	user := func(uuid, parent string, min int) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return fmt.Sprintf(`{"type":"user","uuid":"%s","parentUuid":%s,"sessionId":"s","timestamp":"%s","message":{"role":"user","content":"go on %s"}}`, uuid, p, at(min), uuid)
	}
	response := func(uuid, parent, id string, min, size int, stop string) string {
		s := "null"
		if stop != "" {
			s = `"` + stop + `"`
		}
		return fmt.Sprintf(`{"type":"assistant","uuid":"%s","parentUuid":"%s","sessionId":"s","timestamp":"%s","message":{"id":"%s","role":"assistant","model":"claude-sonnet-4-5","stop_reason":%s,"content":[{"type":"text","text":"done"}],"usage":{"input_tokens":%d,"output_tokens":5}}}`,
			uuid, parent, at(min), id, s, size)
	}
	n := c.n
	if n == 0 {
		n = 8
	}
	var lines []string
	parent, min := "", 0
	for i := range n {
		u, a := fmt.Sprintf("u%d", i), fmt.Sprintf("a%d", i)
		line := response(a, u, fmt.Sprintf("msg_%d", i), min+12, 20_000+1_000*i, stopOf(c.stop, i))
		if c.edit != nil {
			line = c.edit(i, line)
		}
		lines = append(lines, user(u, parent, min), line)
		if c.extra != nil {
			lines = append(lines, c.extra(i)...)
		}
		parent, min = a, min+13
	}
	segment := ""
	if c.segment {
		lines = append(lines, user("uh", parent, min), response("ah", "uh", "msg_h", min+12, 29_000, stopOf(c.tailStop, -1)))
		parent, min = "ah", min+12
		segment = `,"preservedSegment":{"headUuid":"uh","anchorUuid":"s1","tailUuid":"ah"}`
	}
	lines = append(lines,
		fmt.Sprintf(`{"type":"system","subtype":"compact_boundary","uuid":"b1","parentUuid":null,"logicalParentUuid":"%s","sessionId":"s","timestamp":"%s","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":30000%s}}`, parent, at(min), segment),
		`{"type":"user","uuid":"s1","parentUuid":"b1","isCompactSummary":true,"sessionId":"s","timestamp":"`+at(min)+`","message":{"role":"user","content":"the summary"}}`)
	if !c.segment {
		parent = "s1"
	}
	for i := range 3 {
		u, a := fmt.Sprintf("tu%d", i), fmt.Sprintf("t%d", i)
		lines = append(lines, user(u, parent, min+1), response(a, u, fmt.Sprintf("msg_t%d", i), min+12, 3_000+100*i, stopOf(c.tailStop, i)))
		parent, min = a, min+12
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return path
}

// readWeighBoth reads path whole and from its tail, which scans the lines before the cut.
func readWeighBoth(t *testing.T, path string) (whole, tail *File) {
	t.Helper()
	whole, err := ReadFile(path, ReadOptions{})
	require.NoError(t, err)
	tail, err = ReadFile(path, ReadOptions{TailMinBytes: 1})
	require.NoError(t, err)
	require.NotNil(t, tail.Tail, "read from the tail")
	return whole, tail
}

// TestTailWeighing reads sessions whose boundary has no history whole and from the tail and
// compares the cache TTL's decision: responses before the cut that the scan's byte patterns
// would pass over (an escaped key or value, a decision's subtype nested in a tool's input)
// are weighed as a whole read weighs them, and a message id written escaped before the cut and
// again after it sends the read back to the whole file.
func TestTailWeighing(t *testing.T) {
	replace := func(i int, old, new string) func(int, string) string {
		return func(j int, line string) string {
			if j == i {
				return strings.Replace(line, old, new, 1)
			}
			return line
		}
	}
	tests := []struct {
		name string
		edit func(i int, line string) string
		// after, when set, edits the file once written.
		after func(string) string
		tail  bool // read from the tail
	}{
		{"plain", nil, nil, true},
		{"an escaped usage key", replace(4, `"usage"`, `"us\u0061ge"`), nil, true},
		{"an escaped type", replace(4, `"type":"assistant"`, `"type":"\u0061ssistant"`), nil, true},
		{"a decision's subtype in a tool's input", replace(4, `{"type":"text","text":"done"}`,
			`{"type":"tool_use","id":"toolu_1","name":"mcp__db__query","input":{"subtype":"agentctx_snip"}}`), nil, true},
		{"an escaped message id repeated after the cut", replace(2, `"id":"msg_2"`, `"id":"msg\u005f2"`),
			func(s string) string { return strings.Replace(s, `"id":"msg_t1"`, `"id":"msg_2"`, 1) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := cutSession{edit: tt.edit}.write(t)
			if tt.after != nil {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(path, []byte(tt.after(string(b))), 0o644))
			}
			whole, err := ReadFile(path, ReadOptions{})
			require.NoError(t, err)
			tail, err := ReadFile(path, ReadOptions{TailMinBytes: 1})
			require.NoError(t, err)
			require.Equal(t, tt.tail, tail.Tail != nil, "read from the tail")
			want := ChooseCacheTTL(whole.Records, &whole.Records[len(whole.Records)-1], 0.1, 1.25, 2)
			got := ChooseCacheTTL(tail.Records, &tail.Records[len(tail.Records)-1], 0.1, 1.25, 2)
			assert.Equal(t, want, got)
			assert.GreaterOrEqual(t, want.Gaps, 9, "gaps of 5 to 60 minutes")
		})
	}
}

// TestCutHistoryInsideKeptTail compacts again a session read from its tail, at kept heads
// after the boundary the read stopped at and inside the tail that boundary kept (before it
// in the file), whether the read scanned the lines before the cut or read the boundary's
// history: the history each new boundary would carry is a whole read's.
func TestCutHistoryInsideKeptTail(t *testing.T) {
	index := func(recs []Record, uuid string) int {
		for i := range recs {
			if recs[i].UUID == uuid {
				return i
			}
		}
		t.Fatalf("no record %s", uuid)
		return -1
	}
	scanned := cutSession{segment: true}.write(t)
	// The same session with the history a compaction at kept head uh writes on its boundary.
	whole, _ := readWeighBoth(t, scanned)
	h, err := CutHistory(whole.Records, index(whole.Records, "uh"), &whole.Records[index(whole.Records, "ah")])
	require.NoError(t, err)
	b := whole.Records[index(whole.Records, "b1")]
	b.History = h
	line, err := b.MarshalLine()
	require.NoError(t, err)
	data, err := os.ReadFile(scanned)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if strings.Contains(l, `"uuid":"b1"`) {
			lines[i] = string(line) + "\n"
		}
	}
	digest := filepath.Join(t.TempDir(), "digest.jsonl")
	require.NoError(t, os.WriteFile(digest, []byte(strings.Join(lines, "")), 0o644))

	for _, path := range []string{scanned, digest} {
		whole, tail := readWeighBoth(t, path)
		assert.Equal(t, path == digest, tail.Tail.Digest)
		wl, tl := &whole.Records[len(whole.Records)-1], &tail.Records[len(tail.Records)-1]
		for _, head := range []string{"tu0", "ah", "uh"} {
			want, err := CutHistory(whole.Records, index(whole.Records, head), wl)
			require.NoError(t, err)
			got, err := CutHistory(tail.Records, index(tail.Records, head), tl)
			require.NoError(t, err)
			require.NotNil(t, want.CacheTTL)
			assert.Equal(t, want.CacheTTL, got.CacheTTL, "%s, kept head %s: the weighing", filepath.Base(path), head)
			assert.Equal(t, [3]int{want.Compactions, want.Failures, len(want.Open)}, [3]int{got.Compactions, got.Failures, len(got.Open)},
				"%s, kept head %s: the walk", filepath.Base(path), head)
		}
	}
}

// TestTailReadBlankLines reads from its tail a session whose last lines are 2 MB of blank
// lines: the room made for the tail's records follows the lines that may hold one, and the
// scan back to the cut makes no record for a line it passes over.
func TestTailReadBlankLines(t *testing.T) {
	data, err := os.ReadFile(cutSession{}.write(t))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "blank.jsonl")
	require.NoError(t, os.WriteFile(path, append(data, strings.Repeat("\n", 2<<20)...), 0o644))
	allocated := func(opts ReadOptions) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f, err := ReadFile(path, opts)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		require.NotEmpty(t, f.Records)
		return after.TotalAlloc - before.TotalAlloc
	}
	whole, tail := allocated(ReadOptions{}), allocated(ReadOptions{TailMinBytes: 1})
	// The reverse scan's buffer grows to 2 MB over the 2 MB it passes; nothing is made per line
	// (a record for each would be 1.1 GB).
	assert.Less(t, tail, whole+(4<<20), "the tail read allocates %d bytes, the whole read %d", tail, whole)
}

// TestCutHistoryCarried compacts again, at kept heads inside the boundary's kept tail and after
// the boundary, sessions read from a scanned cut whose latest responses before the cut (and
// the latest that completed) lie outside the first few of their stretch, and whose tail's
// responses before the new cut are none or did not complete: the new boundary's history, the
// records it carries included, is a whole read's.
func TestCutHistoryCarried(t *testing.T) {
	done := func(int) string { return "end_turn" }
	tests := []struct {
		name     string
		n        int
		stop     func(int) string
		tailStop func(int) string
	}{
		{"8 exchanges, all completed", 8, done, done},
		{"12 exchanges, all completed", 12, done, done},
		{"12 exchanges, the tail's cut short but its last", 12, done, func(i int) string {
			if i == 2 {
				return "end_turn"
			}
			return ""
		}},
		{"12 exchanges, the last before the cut at max_tokens", 12, func(i int) string {
			if i == 11 {
				return "max_tokens"
			}
			return "end_turn"
		}, done},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole, tail := readWeighBoth(t, cutSession{n: tt.n, segment: true, stop: tt.stop, tailStop: tt.tailStop}.write(t))
			require.False(t, tail.Tail.Digest)
			index := func(recs []Record, uuid string) int {
				i := slices.IndexFunc(recs, func(r Record) bool { return r.UUID == uuid })
				require.GreaterOrEqual(t, i, 0, uuid)
				return i
			}
			for _, head := range []string{"uh", "ah", "tu0", "tu1"} {
				want, err := CutHistory(whole.Records, index(whole.Records, head), &whole.Records[len(whole.Records)-1])
				require.NoError(t, err)
				got, err := CutHistory(tail.Records, index(tail.Records, head), &tail.Records[len(tail.Records)-1])
				require.NoError(t, err)
				assert.Equal(t, want, got, "kept head %s", head)
			}
		})
	}
}

// TestTailSpacedLines reads from a scanned cut sessions with lines before the cut written
// as a writer that spaces its members writes them ("key": "value"): an earlier compact
// boundary, a decision the walk counts, and a record holding the uuid of a record after the
// cut, which sends the read back to the whole file. The history a compaction would write and
// the chain are a whole read's.
func TestTailSpacedLines(t *testing.T) {
	tests := []struct {
		name string
		line string
		tail bool
	}{
		{"an earlier boundary", `{"type": "system", "subtype": "compact_boundary", "uuid": "b0", "parentUuid": null, "logicalParentUuid": "a3", "sessionId": "s", "timestamp": "2026-03-01T09:50:00Z", "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 30000}}`, true},
		{"a failed compaction", `{"type" : "system", "subtype" : "agentctx_compact_failure", "uuid" : "f0", "parentUuid" : "a3", "sessionId" : "s", "timestamp" : "2026-03-01T09:50:00Z", "compactFailure" : {"leafUuid" : "a3", "trigger" : "auto", "reason" : "the summarizer failed"}}`, true},
		{"a uuid of the tail", `{ "type": "user", "uuid": "tu1", "parentUuid": "a3", "sessionId": "s", "timestamp": "2026-03-01T09:50:00Z", "message": {"role": "user", "content": "an old copy"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := cutSession{n: 12, segment: true, extra: func(i int) []string {
				if i == 3 {
					return []string{tt.line}
				}
				return nil
			}}.write(t)
			whole, err := ReadFile(path, ReadOptions{})
			require.NoError(t, err)
			tail, err := ReadFile(path, ReadOptions{TailMinBytes: 1})
			require.NoError(t, err)
			require.Equal(t, tt.tail, tail.Tail != nil, "read from the tail")
			want, err := CutHistory(whole.Records, len(whole.Records), &whole.Records[len(whole.Records)-1])
			require.NoError(t, err)
			got, err := CutHistory(tail.Records, len(tail.Records), &tail.Records[len(tail.Records)-1])
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, chainUUIDs(t, whole.Records), chainUUIDs(t, tail.Records))
		})
	}
}

func TestSpacedJSON(t *testing.T) {
	for line, want := range map[string]bool{
		`{"type":"user","uuid":"u"}`: false,
		`{"type": "user"}`:           true,
		`{"type" :"user"}`:           true,
		`{ "type":"user"}`:           true,
		`  {"ty\"pe": "user"}`:       true,
		`{"a\\":"b", "c": "d"}`:      false,
		`{}`:                         false,
		`not json`:                   false,
		`{"text":"say \": hi\""}`:    false,
		"{\"type\":\t\"user\"}":      true,
	} {
		assert.Equal(t, want, spacedJSON([]byte(line)), line)
	}
}
