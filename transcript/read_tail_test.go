package transcript

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tailLines builds a small compacted session: two exchanges, a boundary that kept the second
// as its preserved segment, the summary, then a third exchange off the kept tail. The cut of
// a tail read is u2's line, the third.
func tailLines(t *testing.T) []string {
	t.Helper()
	msg := func(role Role, id, text string) *Message {
		m := &Message{Role: role, Content: []Block{&Text{Text: text}}}
		if role == RoleAssistant {
			m.ID, m.Model, m.StopReason = id, "claude-sonnet-4-5", "end_turn"
		}
		return m
	}
	recs := []Record{
		{Type: TypeUser, UUID: "u1", Message: msg(RoleUser, "", "first")},
		{Type: TypeAssistant, UUID: "a1", ParentUUID: "u1", Message: msg(RoleAssistant, "m1", "one")},
		{Type: TypeUser, UUID: "u2", ParentUUID: "a1", Message: msg(RoleUser, "", "second")},
		{Type: TypeAssistant, UUID: "a2", ParentUUID: "u2", Message: msg(RoleAssistant, "m2", "two")},
		{Type: TypeSystem, Subtype: SubtypeCompactBoundary, UUID: "b", LogicalParentUUID: "a2",
			CompactMetadata: &CompactMetadata{Trigger: TriggerAuto, PreservedSegment: &PreservedSegment{HeadUUID: "u2", AnchorUUID: "s", TailUUID: "a2"}}},
		{Type: TypeUser, UUID: "s", ParentUUID: "b", IsCompactSummary: true, Message: msg(RoleUser, "", "summary")},
		{Type: TypeUser, UUID: "u3", ParentUUID: "a2", Message: msg(RoleUser, "", "third")},
		{Type: TypeAssistant, UUID: "a3", ParentUUID: "u3", Message: msg(RoleAssistant, "m3", "three")},
	}
	lines := make([]string, len(recs))
	for i, r := range recs {
		b, err := r.MarshalLine()
		require.NoError(t, err)
		lines[i] = string(b) + "\n"
	}
	return lines
}

// readTailOf reads text with a tail read of any size, and whole.
func readTailOf(t *testing.T, text string, opts ReadOptions) (tail, whole *File) {
	t.Helper()
	whole, err := Read(strings.NewReader(text), "s.jsonl", opts)
	require.NoError(t, err)
	opts.TailMinBytes = 1
	tail, err = Read(strings.NewReader(text), "s.jsonl", opts)
	require.NoError(t, err)
	return tail, whole
}

// chainUUIDs returns the uuids of the default chain of records.
func chainUUIDs(t *testing.T, records []Record) []string {
	t.Helper()
	c, err := BuildChain(records, ChainOptions{})
	require.NoError(t, err)
	out := make([]string, len(c.Records))
	for i, r := range c.Records {
		out[i] = r.UUID
	}
	return out
}

func TestReadTail(t *testing.T) {
	lines := tailLines(t)
	text := strings.Join(lines, "")
	tail, whole := readTailOf(t, text, ReadOptions{})
	require.NotNil(t, tail.Tail)
	assert.Equal(t, 3, tail.Tail.Line)
	assert.Equal(t, int64(len(lines[0])+len(lines[1])), tail.Tail.Offset)
	assert.Equal(t, int64(len(text)), tail.Tail.Size)
	// The latest response completed: of the lines before the cut, only the response that
	// opens the stretch before the first boundary, which a compaction cutting inside the kept
	// tail would seal as the open stretch.
	assert.Equal(t, []string{"a1", "u2", "a2", "b", "s", "u3", "a3"}, uuidsOf(tail))
	assert.Equal(t, []int{2, 3, 4, 5, 6, 7, 8}, tail.Lines)
	assert.Equal(t, 8, tail.Records[6].Line)
	assert.Equal(t, whole.End, tail.End)
	assert.Equal(t, chainUUIDs(t, whole.Records), chainUUIDs(t, tail.Records))

	small, err := Read(strings.NewReader(text), "s.jsonl", ReadOptions{TailMinBytes: int64(len(text) + 1)})
	require.NoError(t, err)
	assert.Nil(t, small.Tail, "a file under the threshold is read whole")
	noSeek, err := Read(onlyReader{strings.NewReader(text)}, "s.jsonl", ReadOptions{TailMinBytes: 1})
	require.NoError(t, err)
	assert.Nil(t, noSeek.Tail, "an input that cannot be read backwards is read whole")
}

// onlyReader hides every method of its reader but Read.
type onlyReader struct{ r *strings.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestReadTailWhole checks the files a tail read reads whole: no boundary, a leaf whose chain
// does not reach the boundary (a rewind to before it), a uuid after the cut that a line
// before it holds.
func TestReadTailWhole(t *testing.T) {
	lines := tailLines(t)
	fork := `{"type":"user","uuid":"u4","parentUuid":"a1","message":{"role":"user","content":"rewound"}}` + "\n"
	dup := `{"type":"user","uuid":"u1","parentUuid":"a3","message":{"role":"user","content":"again"}}` + "\n"
	for name, text := range map[string]string{
		"no boundary": strings.Join(lines[:4], ""),
		"rewind":      strings.Join(lines, "") + fork,
		"uuid again":  strings.Join(lines, "") + dup,
	} {
		tail, whole := readTailOf(t, text, ReadOptions{})
		assert.Nil(t, tail.Tail, name)
		assert.Equal(t, whole, tail, name)
	}
}

// TestReadTailHistory checks what a tail read keeps from before its cut: the decisions and the
// records a pin names, with their lines.
func TestReadTailHistory(t *testing.T) {
	lines := tailLines(t)
	pin := `{"type":"system","subtype":"agentctx_pin","uuid":"p","parentUuid":"a1","pinDecision":{"uuids":["u1"],"tokens":1}}` + "\n"
	text := strings.Join(lines[:2], "") + pin + strings.Join(lines[2:], "")
	tail, whole := readTailOf(t, text, ReadOptions{})
	require.NotNil(t, tail.Tail)
	assert.Equal(t, 3, tail.Tail.History)
	assert.Equal(t, []string{"u1", "a1", "p", "u2", "a2", "b", "s", "u3", "a3"}, uuidsOf(tail))
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}, tail.Lines)
	assert.Equal(t, whole.End, tail.End)
}

// TestReadTailLines checks that the tail's bad lines and records carry the file's line numbers,
// and that a strict read failing in the tail fails as the whole read does.
func TestReadTailLines(t *testing.T) {
	lines := tailLines(t)
	text := strings.Join(lines[:6], "") + "{not json\n\n" + strings.Join(lines[6:], "")
	tail, whole := readTailOf(t, text, ReadOptions{})
	require.NotNil(t, tail.Tail)
	require.Len(t, tail.Problems, 1)
	assert.Equal(t, 7, tail.Problems[0].Line)
	assert.Equal(t, whole.Problems[0].Error(), tail.Problems[0].Error())
	assert.Equal(t, whole.End, tail.End)
	assert.Equal(t, 9, tail.Records[len(tail.Records)-2].Line)

	_, werr := Read(strings.NewReader(text), "s.jsonl", ReadOptions{Strict: true})
	_, terr := Read(strings.NewReader(text), "s.jsonl", ReadOptions{Strict: true, TailMinBytes: 1})
	require.Error(t, terr)
	assert.Equal(t, werr.Error(), terr.Error())
	var le *LineError
	require.True(t, errors.As(terr, &le))
	assert.Equal(t, 7, le.Line)
}

// withHistory returns tailLines with h on the boundary (its fifth line).
func withHistory(t *testing.T, h *History) []string {
	t.Helper()
	lines := tailLines(t)
	var b Record
	require.NoError(t, b.UnmarshalJSON([]byte(lines[4])))
	b.History = h
	line, err := b.MarshalLine()
	require.NoError(t, err)
	lines[4] = string(line) + "\n"
	return lines
}

// TestReadTailDigest checks a read that stops at the cut: the boundary's history carries a
// pin and the record it names, which come first with line 0, the tail keeps the file's line
// numbers, and the boundary is marked as the read's cut.
func TestReadTailDigest(t *testing.T) {
	pin := `{"type":"system","subtype":"agentctx_pin","uuid":"p","parentUuid":"a1","pinDecision":{"uuids":["u1"],"tokens":1}}`
	u1 := tailLines(t)[0]
	h := &History{Version: HistoryVersion, Compactions: 2, Runs: []int{1}, Open: []string{"m1"},
		Records: []json.RawMessage{json.RawMessage(strings.TrimSpace(u1)), json.RawMessage(pin)}}
	require.NoError(t, h.Seal())
	text := strings.Join(withHistory(t, h), "")
	tail, whole := readTailOf(t, text, ReadOptions{})
	require.NotNil(t, tail.Tail)
	assert.True(t, tail.Tail.Digest)
	assert.Empty(t, tail.Tail.DigestProblem)
	assert.Equal(t, 2, tail.Tail.History)
	assert.Equal(t, 3, tail.Tail.Line)
	assert.Equal(t, []string{"u1", "p", "u2", "a2", "b", "s", "u3", "a3"}, uuidsOf(tail))
	assert.Equal(t, []int{0, 0, 3, 4, 5, 6, 7, 8}, tail.Lines)
	assert.Equal(t, whole.End, tail.End)
	assert.True(t, tail.Records[4].Cut)
	assert.Equal(t, h, tail.Records[4].CutHistory())
	assert.Nil(t, whole.Records[4].CutHistory(), "a whole read stops at no cut")
	assert.Equal(t, chainUUIDs(t, whole.Records), chainUUIDs(t, tail.Records))
	assert.Equal(t, len(tail.Records), cap(tail.Records), "one array: the carried records, then a record for each line from the cut")
}

// TestReadTailSkipLineCount checks a read that stops at the cut without counting the lines
// before it: the same records, their line numbers unknown (0), unless a line of the tail is
// bad, when they are counted and the problem names the file's line.
func TestReadTailSkipLineCount(t *testing.T) {
	h := &History{Version: HistoryVersion, Compactions: 1}
	require.NoError(t, h.Seal())
	lines := withHistory(t, h)
	for _, tt := range []struct {
		name, text string
		lines      []int
		end, line  int
		problem    int
	}{
		{"clean", strings.Join(lines, ""), nil, 0, 0, 0},
		{"a bad line", strings.Join(lines[:6], "") + "{not json\n" + strings.Join(lines[6:], ""), []int{3, 4, 5, 6, 8, 9}, 9, 3, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counted, whole := readTailOf(t, tt.text, ReadOptions{})
			tail, err := Read(strings.NewReader(tt.text), "s.jsonl", ReadOptions{TailMinBytes: 1, SkipLineCount: true})
			require.NoError(t, err)
			require.NotNil(t, tail.Tail)
			assert.True(t, tail.Tail.Digest)
			assert.Equal(t, uuidsOf(counted), uuidsOf(tail))
			assert.Equal(t, chainUUIDs(t, whole.Records), chainUUIDs(t, tail.Records))
			assert.Equal(t, tt.lines, tail.Lines)
			assert.Equal(t, tt.end, tail.End)
			assert.Equal(t, tt.line, tail.Tail.Line)
			for i := range tail.Records {
				if tt.lines == nil {
					assert.Zero(t, tail.Records[i].Line)
				} else {
					assert.Equal(t, counted.Records[i].Line, tail.Records[i].Line)
				}
			}
			if tt.problem == 0 {
				assert.Empty(t, tail.Problems)
				return
			}
			require.Len(t, tail.Problems, 1)
			assert.Equal(t, tt.problem, tail.Problems[0].Line)
			assert.Equal(t, whole.Problems[0].Error(), tail.Problems[0].Error())
		})
	}
}

// TestReadTailDigestDamaged checks that a history that does not check is not used: the read
// scans the lines before the cut, as for a boundary without one, and says why.
func TestReadTailDigestDamaged(t *testing.T) {
	scanned, _ := readTailOf(t, strings.Join(tailLines(t), ""), ReadOptions{})
	seal := func(h *History) *History { require.NoError(t, h.Seal()); return h }
	edited := seal(&History{Version: HistoryVersion, Compactions: 1})
	edited.Compactions = 4
	tests := []struct {
		name string
		h    *History
		want string
	}{
		{"edited", edited, "sum does not match"},
		{"no sum", &History{Version: HistoryVersion}, "sum does not match"},
		{"version", seal(&History{Version: 9}), "version 9"},
		{"version 1, without the cache TTL's state", seal(&History{Version: 1, Compactions: 1}), "version 1, not 2"},
		{"cache TTL tally", seal(&History{Version: HistoryVersion, CacheTTL: &CacheTTLTally{GapTokens: 5}}), "tally is out of range"},
		{"runs", seal(&History{Version: HistoryVersion, Compactions: 1, Runs: []int{2}}), "out of range"},
		{"run", seal(&History{Version: HistoryVersion, Compactions: 3, Runs: []int{HistoryResponses + 1}}), "out of range"},
		{"unreadable record", seal(&History{Version: HistoryVersion, Records: []json.RawMessage{json.RawMessage(`{"type":"user"}`)}}), "cannot be read whole"},
		{"record after the cut", seal(&History{Version: HistoryVersion, Records: []json.RawMessage{json.RawMessage(`{"type":"user","uuid":"u3"}`)}}), "after the cut hold too"},
		{"first record after the cut", seal(&History{Version: HistoryVersion, Records: []json.RawMessage{
			json.RawMessage(`{"type":"user","uuid":"x0"}`),
			json.RawMessage(`{"type":"assistant","uuid":"x1","message":{"id":"m3","role":"assistant","content":[]}}`),
			json.RawMessage(`{"type":"user","uuid":"u2"}`),
		}}), "carries record x1, which the lines after the cut hold too"},
	}
	for _, tt := range tests {
		tail, _ := readTailOf(t, strings.Join(withHistory(t, tt.h), ""), ReadOptions{})
		require.NotNil(t, tail.Tail, tt.name)
		assert.False(t, tail.Tail.Digest, tt.name)
		assert.Contains(t, tail.Tail.DigestProblem, tt.want, tt.name)
		assert.Equal(t, uuidsOf(scanned), uuidsOf(tail), tt.name)
		assert.Equal(t, scanned.Lines, tail.Lines, tt.name)
	}
}

// TestReadCut checks that reading the lines from the kept head on, as a database store does,
// gives what a tail read of the file that stops at the cut gives, and that lines that are no
// such tail are refused.
func TestReadCut(t *testing.T) {
	h := &History{Version: HistoryVersion, Compactions: 1}
	require.NoError(t, h.Seal())
	lines := withHistory(t, h)
	file, _ := readTailOf(t, strings.Join(lines, ""), ReadOptions{})
	require.True(t, file.Tail.Digest)
	got, err := ReadCut(strings.NewReader(strings.Join(lines[2:], "")), "s.jsonl", 2, ReadOptions{TailMinBytes: 1})
	require.NoError(t, err)
	assert.Equal(t, file.Records, got.Records)
	assert.Equal(t, file.Lines, got.Lines)
	assert.Equal(t, file.End, got.End)
	assert.Equal(t, Tail{Line: 3, Digest: true}, *got.Tail)

	for name, text := range map[string]string{
		"not from the kept head": strings.Join(lines[3:], ""),
		"no history":             strings.Join(tailLines(t)[2:], ""),
		"no boundary":            strings.Join(lines[5:], ""),
		"empty":                  "",
	} {
		_, err := ReadCut(strings.NewReader(text), "s.jsonl", 2, ReadOptions{})
		assert.Error(t, err, name)
	}
}
