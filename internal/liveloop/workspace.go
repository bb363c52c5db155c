package liveloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// BigOutput is the size, in bytes, of the occasional huge tool output (a whole log, a file
// far over any cap).
const BigOutput = 300 << 10

// ToolSpec is a scripted tool: how often the scripted model calls it and how large its
// results are.
type ToolSpec struct {
	// Name is the tool's name; the definitions and the outputs of Read, Bash, Grep, Edit,
	// Write, WebFetch, Task, Glob and [ImageTool] are built in.
	Name string
	// Weight is the tool's share of the calls, relative to the other tools' weights.
	Weight int
	// Sizes is the distribution of its results' sizes (for Read: of the files the
	// workspace holds; for [ImageTool]: of the PNG's base64 data).
	Sizes Dist
}

// CorpusTools returns the tools of [CorpusDists], weighted by their calls in the corpus.
func CorpusTools() []ToolSpec {
	out := make([]ToolSpec, 0, len(CorpusDists))
	for _, d := range CorpusDists {
		out = append(out, ToolSpec{Name: d.Tool, Weight: d.Calls, Sizes: d})
	}
	return out
}

// UniformDist returns a distribution of sizes spread evenly between lo and hi bytes.
func UniformDist(tool string, lo, hi int) Dist {
	d := Dist{Tool: tool, Calls: 1}
	for i, q := range Quantiles {
		d.Sizes[i] = lo + int(q*float64(hi-lo))
	}
	return d
}

// toolDefinitions are the definitions of the built-in scripted tools, in the harness's own
// words.
var toolDefinitions = map[string]string{
	"Read": `{"name":"Read","description":"Read a file of the workspace and return its lines, numbered.",` +
		`"input_schema":{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file, relative to the workspace."}},"required":["file_path"]}}`,
	"Bash": `{"name":"Bash","description":"Run a shell command in the workspace and return what it printed.",` +
		`"input_schema":{"type":"object","properties":{"command":{"type":"string","description":"The command line."}},"required":["command"]}}`,
	"Grep": `{"name":"Grep","description":"Search the workspace's files for a regular expression and return the matching lines.",` +
		`"input_schema":{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}}`,
	"Edit": `{"name":"Edit","description":"Replace one exact string of a file with another.",` +
		`"input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"}},"required":["file_path","old_string","new_string"]}}`,
	"Write": `{"name":"Write","description":"Write a file of the workspace, replacing what it held.",` +
		`"input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}}`,
	"WebFetch": `{"name":"WebFetch","description":"Fetch a web page and return its text.",` +
		`"input_schema":{"type":"object","properties":{"url":{"type":"string"},"prompt":{"type":"string"}},"required":["url"]}}`,
	"Task": `{"name":"Task","description":"Hand a self-contained task to a helper agent and return its report.",` +
		`"input_schema":{"type":"object","properties":{"description":{"type":"string"},"prompt":{"type":"string"}},"required":["prompt"]}}`,
	"Glob": `{"name":"Glob","description":"List the workspace's files whose paths match a glob pattern.",` +
		`"input_schema":{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}}`,
	ImageTool: `{"name":"Screenshot","description":"Take a screenshot of the application under test and return it as a PNG image.",` +
		`"input_schema":{"type":"object","properties":{"page":{"type":"string"}}}}`,
}

// workspace is the agent's working directory on disk: the files the scripted model reads,
// edits and writes, where compaction re-reads them from (the session's cwd). It is shared by
// the scripted model (which names files) and the scripted tools (which run the calls), so
// it is safe for concurrent use.
type workspace struct {
	dir   string
	tools []ToolSpec
	seed  uint64
	big   float64 // share of Read, Bash and Grep calls with a BigOutput result

	mu     sync.Mutex
	files  []string // workspace files of ordinary size, relative to dir
	huge   []string // files of BigOutput, relative to dir
	recent []string // the files touched last, newest last
}

// numberedGrowth is how much a file grows when printed with line numbers (7 bytes of number
// and tab on lines of about 35 bytes).
const numberedGrowth = 1.2

// newWorkspace writes the workspace's files under dir: files whose numbered text follows the
// Read tool's size distribution, and two of BigOutput.
func newWorkspace(dir string, tools []ToolSpec, seed uint64, big float64) (*workspace, error) {
	ws := &workspace{dir: dir, tools: tools, seed: seed, big: big}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	read, ok := toolSpec(tools, "Read")
	if !ok {
		read = ToolSpec{Name: "Read", Sizes: UniformDist("Read", 2<<10, 40<<10)}
	}
	write := func(rel string, size int) error {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(fileText(r, size)), 0o644)
	}
	for i := range 48 {
		rel := fmt.Sprintf("%s/%s_%d.go", pick(r, pkgDirs), pick(r, identWords), i)
		if err := write(rel, read.Sizes.Sample(r)); err != nil {
			return nil, err
		}
		ws.files = append(ws.files, rel)
	}
	for i := range 2 {
		rel := fmt.Sprintf("testdata/fixtures/dump_%d.go", i)
		if err := write(rel, BigOutput); err != nil {
			return nil, err
		}
		ws.huge = append(ws.huge, rel)
	}
	return ws, nil
}

// fileText returns source code whose numbered form (as Read returns it) is about size bytes;
// at least size bytes for a file of [BigOutput].
func fileText(r *rand.Rand, size int) string {
	text := codeText(r, max(64, int(float64(size)/numberedGrowth)))
	if size < BigOutput {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	lines := strings.Count(text, "\n")
	for b.Len()+7*lines < size { // numbered adds a 6-digit number and a tab to each line
		b.WriteString(codeLine(r) + "\n")
		lines++
	}
	return b.String()
}

func toolSpec(tools []ToolSpec, name string) (ToolSpec, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return ToolSpec{}, false
}

// definitions returns the tool definitions a request declares: every scripted tool, and
// Screenshot, which scenarios call on a schedule.
func (ws *workspace) definitions() []provider.Tool {
	var out []provider.Tool
	seen := map[string]bool{}
	for _, t := range append(ws.tools, ToolSpec{Name: ImageTool}) {
		def, ok := toolDefinitions[t.Name]
		if !ok || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		out = append(out, provider.Tool{Name: t.Name, Definition: json.RawMessage(def)})
	}
	return out
}

// pickFile returns the path of a file for a call of the scripted model to name, relative to
// the workspace (the session's cwd, so that a run's requests do not depend on where its
// temporary directory is):
// one of the few touched last more often than not (an agent works on a handful of files),
// and a huge one with the workspace's big share when huge is set.
func (ws *workspace) pickFile(r *rand.Rand, huge bool) string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var rel string
	switch {
	case huge && r.Float64() < ws.big:
		rel = pick(r, ws.huge)
	case len(ws.recent) > 0 && r.Float64() < 0.55:
		rel = ws.recent[len(ws.recent)-1-r.IntN(min(len(ws.recent), 6))]
	default:
		rel = pick(r, ws.files)
	}
	return rel
}

// abs returns the file path a call names, relative to the workspace, as an absolute path;
// ok is false for a path that leads out of it.
func (ws *workspace) abs(path string) (string, bool) {
	if !filepath.IsLocal(path) {
		return "", false
	}
	return filepath.Join(ws.dir, path), true
}

// touch records that the file at rel, relative to the workspace, was worked on. A huge file
// does not join the files touched last: how often one is read is the big share's alone.
func (ws *workspace) touch(rel string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if slices.Contains(ws.huge, rel) {
		return
	}
	for i, f := range ws.recent {
		if f == rel {
			ws.recent = append(ws.recent[:i], ws.recent[i+1:]...)
			break
		}
	}
	ws.recent = append(ws.recent, rel)
	if len(ws.recent) > 12 {
		ws.recent = ws.recent[1:]
	}
	if slices.Contains(ws.files, rel) {
		return
	}
	ws.files = append(ws.files, rel)
}

// callRand returns the random source of one tool call: seeded by the workspace's seed and
// the call's id, so that the output does not depend on the order calls run in.
func (ws *workspace) callRand(id string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(id))
	return rand.New(rand.NewPCG(ws.seed, h.Sum64()))
}

// size draws the size of a result of tool from its distribution, or BigOutput with the
// workspace's big share when big is set.
func (ws *workspace) size(r *rand.Rand, tool string, big bool) int {
	if big && r.Float64() < ws.big {
		return BigOutput
	}
	t, ok := toolSpec(ws.tools, tool)
	if !ok {
		return 200
	}
	return t.Sizes.Sample(r)
}

// run runs a tool call and returns its result.
func (ws *workspace) run(tu *transcript.ToolUse) *transcript.ToolResult {
	r := ws.callRand(tu.ID)
	var in map[string]string
	if err := json.Unmarshal(tu.Input, &in); err != nil {
		return transcript.ErrorResult(tu.ID, "The tool input is not a JSON object of strings: "+err.Error())
	}
	path, ok := ws.abs(in["file_path"])
	switch tu.Name {
	case "Read", "Edit", "Write":
		if !ok {
			return transcript.ErrorResult(tu.ID, "The path "+in["file_path"]+" is not inside the workspace.")
		}
	}
	switch tu.Name {
	case "Read":
		b, err := os.ReadFile(path)
		if err != nil {
			return transcript.ErrorResult(tu.ID, "Cannot read "+in["file_path"]+": "+failure(err))
		}
		ws.touch(in["file_path"])
		return transcript.TextResult(tu.ID, numbered(string(b)))
	case "Bash":
		return transcript.TextResult(tu.ID, logText(r, ws.size(r, "Bash", true)))
	case "Grep":
		return transcript.TextResult(tu.ID, grepText(r, ws.size(r, "Grep", true)))
	case "Edit":
		b, err := os.ReadFile(path)
		if err != nil {
			return transcript.ErrorResult(tu.ID, "Cannot edit "+in["file_path"]+": "+failure(err))
		}
		text := strings.Replace(string(b), in["old_string"], in["new_string"], 1)
		if text == string(b) {
			text += in["new_string"] + "\n"
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return transcript.ErrorResult(tu.ID, "Cannot edit "+in["file_path"]+": "+failure(err))
		}
		ws.touch(in["file_path"])
		head := "The file " + in["file_path"] + " was changed. The edited region now reads:\n"
		return transcript.TextResult(tu.ID, head+numbered(codeText(r, max(0, ws.size(r, "Edit", false)-len(head)))))
	case "Write":
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return transcript.ErrorResult(tu.ID, "Cannot write "+in["file_path"]+": "+failure(err))
		}
		if err := os.WriteFile(path, []byte(in["content"]), 0o644); err != nil {
			return transcript.ErrorResult(tu.ID, "Cannot write "+in["file_path"]+": "+failure(err))
		}
		ws.touch(in["file_path"])
		head := fmt.Sprintf("Wrote %d bytes to %s.\n", len(in["content"]), in["file_path"])
		n := ws.size(r, "Write", false)
		if n <= len(head) {
			return transcript.TextResult(tu.ID, head)
		}
		return transcript.TextResult(tu.ID, head+numbered(codeText(r, n-len(head))))
	case "WebFetch":
		return transcript.TextResult(tu.ID, proseText(r, ws.size(r, "WebFetch", false)))
	case "Task":
		return transcript.TextResult(tu.ID, "The helper agent reports:\n\n"+proseText(r, ws.size(r, "Task", false)))
	case "Glob":
		return transcript.TextResult(tu.ID, pathText(r, ws.size(r, "Glob", false)))
	case ImageTool:
		img := &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: screenshot(r, ws.size(r, ImageTool, false))}}
		return &transcript.ToolResult{ToolUseID: tu.ID, Content: []transcript.Block{&transcript.Text{Text: "Screenshot of " + in["page"] + ":"}, img}}
	}
	return transcript.ErrorResult(tu.ID, "There is no tool named "+tu.Name+".")
}

// lineOf returns a non-blank line of the file at rel, for an edit to replace; "" when it has
// none or cannot be read.
func (ws *workspace) lineOf(r *rand.Rand, rel string) string {
	path, ok := ws.abs(rel)
	if !ok {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for range 8 {
		if l := lines[r.IntN(len(lines))]; strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// failure says why a file operation failed, without the absolute path the error holds.
func failure(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
