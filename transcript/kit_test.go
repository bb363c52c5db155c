// The record builder and corpus walk of this package's internal tests. The root package's
// tests have the same helpers (testkit_test.go, corpus_test.go); an internal test cannot share
// them through a package that imports transcript, since Go refuses that import cycle, so the
// few this package needs are kept here.

package transcript

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tk builds small transcripts for tests: each call appends one record whose parent is the
// previous record (unless a parent is set explicitly), with timestamps one second apart.
type tk struct {
	recs []Record
	t0   time.Time
	n    int
	last string
	msgN int
}

func newTK() *tk { return &tk{t0: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (k *tk) next(typ RecordType) *Record {
	k.n++
	r := Record{
		Type:       typ,
		UUID:       fmt.Sprintf("00000000-0000-4000-8000-%012d", k.n),
		ParentUUID: k.last,
		SessionID:  "11111111-1111-4111-8111-111111111111",
		Timestamp:  k.t0.Add(time.Duration(k.n) * time.Second).Format("2006-01-02T15:04:05.000Z"),
	}
	k.last = r.UUID
	return &r
}

func (k *tk) add(r *Record) *Record {
	k.recs = append(k.recs, *r)
	return &k.recs[len(k.recs)-1]
}

// user appends a user prompt with string content.
func (k *tk) user(text string) *Record {
	r := k.next(TypeUser)
	r.Message = &Message{Role: RoleUser, Content: []Block{&Text{Text: text}}, StringContent: true}
	return k.add(r)
}

// userBlocks appends a user message of the given blocks.
func (k *tk) userBlocks(blocks ...Block) *Record {
	r := k.next(TypeUser)
	r.Message = &Message{Role: RoleUser, Content: blocks}
	return k.add(r)
}

// assistant appends one assistant record per block, all sharing one message id (the way
// Claude Code writes a response), with usage on every record.
func (k *tk) assistant(blocks ...Block) *Record {
	k.msgN++
	id := fmt.Sprintf("msg_%04d", k.msgN)
	var r *Record
	for _, b := range blocks {
		r = k.next(TypeAssistant)
		r.Message = &Message{ID: id, Type: "message", Role: RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []Block{b}, Usage: &Usage{InputTokens: 10, OutputTokens: 5}}
		r = k.add(r)
	}
	return r
}

// readTurns appends n turns of one file read each: a question, a Read call, its result and
// the answer.
func (k *tk) readTurns(n int) {
	for turn := range n {
		k.user(fmt.Sprintf("question %d", turn))
		tu := toolUse(fmt.Sprintf("toolu_%d", turn), "Read")
		k.assistant(text("Reading."), tu)
		k.results(result(tu.ID, fmt.Sprintf("contents of file %d", turn)))
		k.assistant(text("Read."))
	}
}

// results appends one user record per tool result, each parented on the record that holds
// its tool_use (as Claude Code does for parallel calls).
func (k *tk) results(trs ...*ToolResult) *Record {
	var r *Record
	for _, tr := range trs {
		r = k.next(TypeUser)
		for i := len(k.recs) - 1; i >= 0; i-- {
			if m := k.recs[i].Message; m != nil && k.recs[i].Type == TypeAssistant && len(m.Content) > 0 {
				if tu, ok := m.Content[0].(*ToolUse); ok && tu.ID == tr.ToolUseID {
					r.ParentUUID = k.recs[i].UUID
					break
				}
			}
		}
		r.Message = &Message{Role: RoleUser, Content: []Block{tr}}
		r = k.add(r)
	}
	return r
}

// decision appends a record as is (decision records have no parent).
func (k *tk) decision(r Record) { k.recs = append(k.recs, r) }

func text(s string) *Text { return &Text{Text: s} }

func toolUse(id, name string) *ToolUse {
	return &ToolUse{ID: id, Name: name, Input: json.RawMessage(`{"path":"x"}`)}
}

func result(id, content string) *ToolResult {
	return &ToolResult{ToolUseID: id, Content: []Block{&Text{Text: content}}, StringContent: true}
}

// at returns the time of the n-th record plus d.
func (k *tk) at(d time.Duration) time.Time { return k.t0.Add(time.Duration(k.n)*time.Second + d) }

// jsonl encodes the records as a transcript.
func (k *tk) jsonl(t testing.TB) string { return encodeRecords(t, k.recs) }

// roundTrip sends records through their JSONL encoding, as a resume does.
func roundTrip(t testing.TB, recs []Record) []Record {
	t.Helper()
	tr, err := Read(strings.NewReader(encodeRecords(t, recs)), "appended", ReadOptions{Strict: true})
	require.NoError(t, err)
	require.True(t, tr.Clean(), "every record reads back")
	return tr.Records
}

// encodeRecords encodes records as transcript lines.
func encodeRecords(t testing.TB, recs []Record) string {
	t.Helper()
	var b strings.Builder
	for _, r := range recs {
		enc, err := json.Marshal(r)
		require.NoError(t, err)
		b.Write(enc)
		b.WriteByte('\n')
	}
	return b.String()
}

// corpusDir returns the root of the shared transcript corpus (../../shared/corpus, holding
// claude-code/ and codex/), or skips the test when it is absent.
func corpusDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "corpus")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skip("../../shared/corpus not found; whole-corpus tests skipped (clone without shared/)")
	}
	return dir
}

// corpusFiles returns every *.jsonl file under ../shared/corpus/claude-code, sorted, or skips
// the test when the corpus is absent. Every whole-corpus test walks this list.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	corpusDir(t)
	files := corpusPaths(t)
	if len(files) == 0 {
		t.Skip("no .jsonl files under ../shared/corpus/claude-code; whole-corpus tests skipped")
	}
	return files
}

// corpusPaths returns every *.jsonl file under ../shared/corpus/claude-code, at any depth,
// sorted (under the race detector, one in raceCorpusStride of them); nil when the corpus is
// absent. Tests with a fallback for a missing corpus use it;
// the others use corpusFiles.
func corpusPaths(t testing.TB) []string {
	t.Helper()
	root := filepath.Join("..", "..", "shared", "corpus", "claude-code")
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	slices.Sort(files)
	if raceEnabled {
		// The race detector looks for concurrency bugs, and the corpus tests run on one
		// goroutine at five to ten times the cost: a fixed quarter of the sessions keeps
		// `go test -race` within CI's time, and the plain run walks them all.
		files = slices.DeleteFunc(slices.Clone(files), func(f string) bool { return slices.Index(files, f)%raceCorpusStride != 0 })
	}
	return files
}

// raceCorpusStride is the sampling of the corpus under the race detector: one file in so many.
const raceCorpusStride = 4

// corpusSession is one corpus file and its records.
type corpusSession struct {
	path    string
	records []Record
}

// corpusSessions reads every file of corpusPaths (strictly: the corpus has no bad line), in
// order; nil when the corpus is absent.
func corpusSessions(t testing.TB) []corpusSession {
	t.Helper()
	var out []corpusSession
	for _, f := range corpusPaths(t) {
		tr, err := ReadFile(f, ReadOptions{Strict: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, corpusSession{f, tr.Records})
	}
	return out
}

// linearSession returns a session of n turns (a prompt, then an answer; every third answer a
// tool call and its result), each record the parent of the next.
func linearSession(n int) *tk {
	k := newTK()
	for i := range n {
		k.user(fmt.Sprintf("question %d", i))
		if i%3 == 2 {
			id := fmt.Sprintf("t%d", i)
			k.assistant(toolUse(id, "Read"))
			k.results(result(id, "contents"))
		}
		k.assistant(text(fmt.Sprintf("answer %d", i)))
	}
	return k
}

// codexLine builds a rollout line of type typ around payload.
func codexLine(typ, payload string) string {
	return `{"timestamp":"2026-11-20T10:00:01.000Z","type":"` + typ + `","payload":` + payload + `}`
}
