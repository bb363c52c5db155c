package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mustRecord decodes one transcript line.
func mustRecord(t testing.TB, line string) Record {
	t.Helper()
	var r Record
	require.NoError(t, r.UnmarshalJSON([]byte(line)))
	return r
}

// bigRecord is a user record with a text block of n bytes.
func bigRecord(uuid string, n int) Record {
	return Record{
		Type: TypeUser,
		UUID: uuid,
		Message: &Message{Role: RoleUser, Content: []Block{
			&Text{Text: uuid + ":" + strings.Repeat("x", n)},
		}},
	}
}

func TestAppendTornLastLine(t *testing.T) {
	tests := []struct {
		name     string
		orig     string
		before   []string // uuids read before appending
		torn     int
		after    []string // uuids read after appending
		problems []int    // problem lines after appending
	}{
		{name: "torn last line", orig: userLine("a") + "\n" + userLine("b") + "\n" + tornLine,
			before: []string{"a", "b"}, torn: 3, after: []string{"a", "b", "c", "d"}, problems: []int{3}},
		{name: "torn only line", orig: tornLine,
			torn: 1, after: []string{"c", "d"}, problems: []int{1}},
		{name: "no final newline", orig: userLine("a") + "\n" + userLine("b"),
			before: []string{"a", "b"}, after: []string{"a", "b", "c", "d"}},
		{name: "crlf no final newline", orig: userLine("a") + "\r\n" + userLine("b") + "\r",
			before: []string{"a", "b"}, after: []string{"a", "b", "c", "d"}},
		{name: "complete", orig: userLine("a") + "\n",
			before: []string{"a"}, after: []string{"a", "c", "d"}},
		{name: "empty", orig: "", after: []string{"c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tt.orig), 0o644))

			tr, err := ReadFile(path, ReadOptions{Strict: true})
			require.NoError(t, err)
			assert.Equal(t, tt.before, uuidsOf(tr))
			if tt.torn == 0 {
				assert.Nil(t, tr.Torn)
			} else if assert.NotNil(t, tr.Torn) {
				assert.Equal(t, tt.torn, tr.Torn.Line)
			}

			require.NoError(t, AppendFile(path, AppendOptions{}, mustRecord(t, userLine("c")), mustRecord(t, userLine("d"))))

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.HasPrefix(data, []byte(tt.orig)), "the original bytes changed")
			assert.True(t, bytes.HasSuffix(data, []byte("\n")))
			tr, err = ReadFile(path, ReadOptions{Strict: true})
			require.NoError(t, err)
			assert.Equal(t, tt.after, uuidsOf(tr))
			assert.Equal(t, tt.problems, problemLines(tr))
			assert.Nil(t, tr.Torn)
			for _, p := range tr.Problems {
				assert.ErrorIs(t, p, ErrTornLine)
			}
			// A complete file gets no blank line: the batch starts right after the last "\n".
			if tt.orig == "" || strings.HasSuffix(tt.orig, "\n") {
				assert.NotContains(t, string(data), "\n\n")
			}
		})
	}
}

func TestAppender(t *testing.T) {
	t.Run("creates the file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new.jsonl")
		a, err := OpenAppender(path, AppendOptions{Sync: true})
		require.NoError(t, err)
		assert.Equal(t, path, a.Path())
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.True(t, fi.Mode().IsRegular())
		assert.Zero(t, fi.Size())
		require.NoError(t, a.Append())
		require.NoError(t, a.Append(mustRecord(t, userLine("a"))))
		require.NoError(t, a.Append(mustRecord(t, userLine("b")), mustRecord(t, userLine("c"))))
		require.NoError(t, a.Close())
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, userLine("a")+"\n"+userLine("b")+"\n"+userLine("c")+"\n", string(data))
	})
	t.Run("closed", func(t *testing.T) {
		a, err := OpenAppender(filepath.Join(t.TempDir(), "s.jsonl"), AppendOptions{})
		require.NoError(t, err)
		require.NoError(t, a.Close())
		assert.ErrorIs(t, a.Append(mustRecord(t, userLine("a"))), os.ErrClosed)
		assert.ErrorIs(t, a.Close(), os.ErrClosed)
	})
	t.Run("open error", func(t *testing.T) {
		_, err := OpenAppender(filepath.Join(t.TempDir(), "missing", "s.jsonl"), AppendOptions{})
		assert.ErrorIs(t, err, os.ErrNotExist)
		assert.Error(t, AppendFile(filepath.Join(t.TempDir(), "missing", "s.jsonl"), AppendOptions{}, mustRecord(t, userLine("a"))))
	})
	t.Run("no HTML escaping, one line per record", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		r := mustRecord(t, `{"type":"user","uuid":"a","message":{"role":"user","content":"<tool_use_error>a & b</tool_use_error>"}}`)
		r.Extra = map[string]json.RawMessage{"pretty": json.RawMessage("{\n  \"k\": [1,\n 2]\n}")}
		require.NoError(t, AppendFile(path, AppendOptions{}, r))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Contains(t, string(data), "<tool_use_error>a & b</tool_use_error>")
		assert.Equal(t, 1, bytes.Count(data, []byte("\n")))
		tr, err := ReadFile(path, ReadOptions{Strict: true})
		require.NoError(t, err)
		require.Len(t, tr.Records, 1)
		assert.JSONEq(t, `{"k":[1,2]}`, string(tr.Records[0].Extra["pretty"]))
	})
}

func TestAppendEncodingFailureWritesNothing(t *testing.T) {
	tests := []struct {
		name string
		bad  Record
	}{
		{"invalid raw field", Record{Type: TypeUser, UUID: "x", Extra: map[string]json.RawMessage{"bad": json.RawMessage("{nope")}}},
		{"invalid raw content", Record{Type: TypeSystem, Content: json.RawMessage(`"unterminated`)}},
		{"nil block", Record{Type: TypeUser, Message: &Message{Role: RoleUser, Content: []Block{&Text{Text: "a"}, nil}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			orig := userLine("a") + "\n" + tornLine
			require.NoError(t, os.WriteFile(path, []byte(orig), 0o644))
			err := AppendFile(path, AppendOptions{}, mustRecord(t, userLine("b")), tt.bad, mustRecord(t, userLine("c")))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "agentctx: append to "+path+": record 1: ")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, orig, string(data))
		})
	}
}

// unknownFixture has unknown record types, unknown fields at every level and unknown blocks.
const unknownFixture = `{"type":"brand-new-type","uuid":"u1","parentUuid":null,"payload":{"nested":[1,2.50,{"x":null}]},"flag":true}
{"type":"user","uuid":"u2","parentUuid":"u1","isMeta":false,"futureField":"v","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok","futureTextField":1},{"type":"hologram","depth":3}],"is_error":false,"futureResultField":[]},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo=","futureSourceField":"s"}}],"futureMessageField":{}},"toolUseResult":{"stdout":"<b>&amp;</b>","stderr":"","interrupted":false}}
{"type":"assistant","uuid":"u3","parentUuid":"u2","requestId":"req_1","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"future_block","blob":"\u00e9\u2028"},{"type":"thinking","thinking":"hm","signature":"sig","futureThinkingField":0}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":2,"output_tokens":3,"service_tier":"standard","cache_creation":{"ephemeral_5m_input_tokens":0}}}}
{"type":"system","subtype":"some_future_subtype","uuid":"u4","content":"Running \u001b[1mhook\u001b[22m","level":"info","compactMetadata":{"trigger":"auto","preTokens":5,"preservedSegment":{"anchorUuid":"u1"}}}
{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"timestamp":"2025-01-01T00:00:00.000Z"},"isSnapshotUpdate":false}
`

func TestAppendRoundTripUnknown(t *testing.T) {
	src, err := Read(strings.NewReader(unknownFixture), "fixture.jsonl", ReadOptions{Strict: true})
	require.NoError(t, err)
	require.True(t, src.Clean())
	lines, _ := splitLines([]byte(unknownFixture))
	require.Len(t, src.Records, len(lines))

	path := filepath.Join(t.TempDir(), "copy.jsonl")
	require.NoError(t, AppendFile(path, AppendOptions{}, src.Records[:2]...))
	require.NoError(t, AppendFile(path, AppendOptions{}, src.Records[2:]...))

	got, err := ReadFile(path, ReadOptions{Strict: true})
	require.NoError(t, err)
	require.True(t, got.Clean())
	require.Len(t, got.Records, len(lines))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	written, _ := splitLines(data)
	for i := range lines {
		assert.JSONEq(t, string(lines[i]), string(written[i]), "line %d as written", i+1)
		assert.JSONEq(t, string(lines[i]), string(encodeLine(t, got.Records[i])), "line %d read back", i+1)
		assert.Equal(t, decodeAny(t, lines[i]), decodeAny(t, written[i]), "line %d (exact numbers)", i+1)
	}
	assert.Equal(t, src.Records[1].Message.Content[0].(*ToolResult).Content[1].Kind(), BlockKind("hologram"))
}

// checkBatches reads path and checks that it holds exactly workers×batches×perBatch records
// named "w<worker>-b<batch>-r<record>", that each batch's records are contiguous and in order,
// that each worker's batches are in order, and that the only problem is a torn first line
// when the file started with one.
func checkBatches(t *testing.T, path string, tornFirst bool, workers, batches, perBatch, size int) {
	t.Helper()
	tr, err := ReadFile(path, ReadOptions{Strict: true})
	require.NoError(t, err)
	require.Nil(t, tr.Torn)
	if tornFirst {
		require.Equal(t, []int{1}, problemLines(tr))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NotContains(t, string(data), "\n\n", "more than one appender healed the torn line")
	} else {
		require.True(t, tr.Clean(), "%v", tr.Err())
	}
	require.Len(t, tr.Records, workers*batches*perBatch)
	next := make([]int, workers) // next batch expected from each worker
	for i := 0; i < len(tr.Records); i += perBatch {
		var w, b, r int
		_, err := fmt.Sscanf(tr.Records[i].UUID, "w%d-b%d-r%d", &w, &b, &r)
		require.NoError(t, err, tr.Records[i].UUID)
		require.Equal(t, 0, r, "line %d: a batch does not start here", tr.Lines[i])
		require.Equal(t, next[w], b, "worker %d: batches out of order", w)
		next[w]++
		for j := range perBatch {
			rec := tr.Records[i+j]
			want := fmt.Sprintf("w%d-b%d-r%d", w, b, j)
			require.Equal(t, want, rec.UUID, "line %d: batch interleaved", tr.Lines[i+j])
			require.Len(t, rec.Message.Content[0].(*Text).Text, len(want)+1+size)
		}
	}
	for w, n := range next {
		require.Equal(t, batches, n, "worker %d", w)
	}
}

func appendBatches(t testing.TB, path string, worker, batches, perBatch, size int) {
	a, err := OpenAppender(path, AppendOptions{})
	require.NoError(t, err)
	defer a.Close()
	for b := range batches {
		recs := make([]Record, perBatch)
		for r := range recs {
			recs[r] = bigRecord(fmt.Sprintf("w%d-b%d-r%d", worker, b, r), size)
		}
		require.NoError(t, a.Append(recs...))
	}
	require.NoError(t, a.Close())
}

func TestAppendConcurrent(t *testing.T) {
	const workers, batches, perBatch, size = 5, 6, 3, 100 << 10
	t.Run("own appenders", func(t *testing.T) {
		// The file starts with a torn line: exactly one appender must heal it.
		path := filepath.Join(t.TempDir(), "s.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(tornLine), 0o644))
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { appendBatches(t, path, w, batches, perBatch, size) })
		}
		wg.Wait()
		checkBatches(t, path, true, workers, batches, perBatch, size)
	})
	t.Run("shared appender", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.jsonl")
		a, err := OpenAppender(path, AppendOptions{})
		require.NoError(t, err)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for b := range batches {
					recs := make([]Record, perBatch)
					for r := range recs {
						recs[r] = bigRecord(fmt.Sprintf("w%d-b%d-r%d", w, b, r), size)
					}
					assert.NoError(t, a.Append(recs...))
				}
			})
		}
		wg.Wait()
		require.NoError(t, a.Close())
		checkBatches(t, path, false, workers, batches, perBatch, size)
	})
}

// TestAppendHelperProcess is not a real test: TestAppendMultiProcess runs the test binary with
// AGENTCTX_APPEND_HELPER=path,worker to append from another process.
func TestAppendHelperProcess(t *testing.T) {
	spec := os.Getenv("AGENTCTX_APPEND_HELPER")
	if spec == "" {
		t.Skip("helper process for TestAppendMultiProcess")
	}
	path, worker, _ := strings.Cut(spec, ",")
	w, err := strconv.Atoi(worker)
	require.NoError(t, err)
	appendBatches(t, path, w, 8, 3, 100<<10)
}

func TestAppendMultiProcess(t *testing.T) {
	if !interProcessLock {
		t.Skip("no inter-process lock on this platform")
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const workers = 4
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(tornLine), 0o644))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestAppendHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("AGENTCTX_APPEND_HELPER=%s,%d", path, w))
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s", out)
		})
	}
	wg.Wait()
	checkBatches(t, path, true, workers, 8, 3, 100<<10)
}

// A transcript unlinked, renamed away or replaced under an open Appender: the next Append
// fails with ErrFileReplaced and writes nothing, neither to the orphaned file nor to the new
// one at the path.
func TestAppendFileMoved(t *testing.T) {
	tests := []struct {
		name string
		move func(t *testing.T, path string)
		want string // content at the path afterwards; "" means no file there
	}{
		{"unlinked", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }, ""},
		{"renamed away", func(t *testing.T, path string) { require.NoError(t, os.Rename(path, path+".old")) }, ""},
		{"replaced by rename", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path+".new", []byte(userLine("z")+"\n"), 0o644))
			require.NoError(t, os.Rename(path+".new", path))
		}, userLine("z") + "\n"},
		{"replaced after unlink", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, os.WriteFile(path, nil, 0o644))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			a, err := OpenAppender(path, AppendOptions{})
			require.NoError(t, err)
			defer a.Close()
			require.NoError(t, a.Append(mustRecord(t, userLine("a"))))
			tt.move(t, path)

			err = a.Append(mustRecord(t, userLine("b")))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrFileReplaced)
			assert.Contains(t, err.Error(), "agentctx: append to "+path+": ")
			data, rerr := os.ReadFile(path)
			if tt.want == "" && rerr != nil {
				assert.ErrorIs(t, rerr, os.ErrNotExist)
			} else {
				require.NoError(t, rerr)
				assert.Equal(t, tt.want, string(data), "nothing written to the file now at the path")
			}
			fi, err := a.f.Stat()
			require.NoError(t, err)
			assert.Equal(t, int64(len(userLine("a"))+1), fi.Size(), "nothing written to the orphaned file")
		})
	}
}

// An Appender opened with a relative path keeps checking the file it opened after the
// process changes directory.
func TestAppendRelativePathAfterChdir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	a, err := OpenAppender("s.jsonl", AppendOptions{})
	require.NoError(t, err)
	defer a.Close()
	t.Chdir(t.TempDir())
	require.NoError(t, a.Append(mustRecord(t, userLine("a"))))
	data, err := os.ReadFile(filepath.Join(dir, "s.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, userLine("a")+"\n", string(data))
}
