package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/agentctx/agentctx/internal/testkit"
	simulation "github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
)

// reportData is the part of a page's data script the tests read.
type reportData struct {
	Title  string `json:"title"`
	Window int    `json:"window"`
	Parts  []string
	Turns  []struct {
		N     int      `json:"n"`
		In    int      `json:"in"`
		Parts []int    `json:"parts"`
		Keep  int      `json:"k"`
		Add   []int    `json:"a"`
		Comp  int      `json:"comp"`
		Marks []string `json:"mk"`
	} `json:"turns"`
	Msgs []struct {
		Role   string `json:"r"`
		Blocks []struct {
			Kind   string `json:"k"`
			Origin string `json:"o"`
			Text   string `json:"t"`
		} `json:"b"`
	} `json:"msgs"`
	Comps []struct {
		Turn    int    `json:"turn"`
		Outcome string `json:"outcome"`
		Summary string `json:"summary"`
		Facts   []struct {
			Kind, Where string
		} `json:"facts"`
	} `json:"comps"`
}

// page is a report page parsed.
type page struct {
	doc   *html.Node
	byID  map[string]*html.Node
	data  reportData
	tags  map[string]int
	bytes int
}

// writeReport runs report on file with args and parses the page it wrote.
func writeReport(t *testing.T, file string, args ...string) page {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.html")
	code, stdout, errOut := runCmd(t, append(append([]string{"report", "-o", out}, args...), file)...)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, stdout)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	return parsePage(t, raw)
}

// parsePage parses a page and checks what every page holds: its parts by id, its data, and
// nothing that could load anything or run anything but its own script.
func parsePage(t *testing.T, raw []byte) page {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(string(raw)))
	require.NoError(t, err)
	p := page{doc: doc, byID: map[string]*html.Node{}, tags: map[string]int{}, bytes: len(raw)}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			p.tags[n.Data]++
			for _, a := range n.Attr {
				if a.Key == "id" {
					p.byID[a.Val] = n
				}
				assert.False(t, strings.HasPrefix(a.Key, "on"), "<%s %s=%q>: no inline handler", n.Data, a.Key, a.Val)
				assert.NotContains(t, []string{"src", "href", "srcset", "action", "formaction", "xlink:href", "background"}, a.Key, "<%s %s=%q>: nothing to load", n.Data, a.Key, a.Val)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, tag := range []string{"img", "link", "iframe", "object", "embed", "base", "form", "video", "audio", "image", "use", "foreignobject"} {
		assert.Zero(t, p.tags[tag], "no <%s>", tag)
	}
	assert.Equal(t, 2, p.tags["script"], "the data and the page's own script, nothing else")
	for _, id := range []string{"title", "totals", "timeline", "tl", "chart-tokens", "chart-cache", "chart-cost", "marks", "hit", "legend", "nav", "detail", "data"} {
		assert.Contains(t, p.byID, id, "the page has #%s", id)
	}
	assert.Contains(t, string(raw), `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"`, "the page forbids itself every load")
	data := p.byID["data"]
	require.NotNil(t, data)
	require.NotNil(t, data.FirstChild)
	require.NoError(t, json.Unmarshal([]byte(data.FirstChild.Data), &p.data))
	// The timeline's paths are a few per chart and per row of marks, however many turns.
	assert.Less(t, p.tags["path"], 40, "no element per turn")
	for i, tu := range p.data.Turns {
		require.Len(t, tu.Parts, len(p.data.Parts), "turn %d", tu.N)
		in := 0
		for _, v := range tu.Parts[:10] {
			in += v
		}
		assert.Equal(t, tu.In, in, "turn %d: the parts sum to the input", tu.N)
		if i > 0 {
			prev := p.data.Turns[i-1]
			assert.LessOrEqual(t, tu.Keep, prev.Keep+len(prev.Add), "turn %d keeps at most the turn before's messages", tu.N)
		}
		for _, id := range tu.Add {
			require.Less(t, id, len(p.data.Msgs), "turn %d", tu.N)
		}
	}
	return p
}

// TestReportBundled: the page of every bundled session has its parts, one turn per turn the
// simulation replays with the same figures, and a compaction's summary and fact check where
// the session compacts.
// (No fixed prefix: the sessions' estimated one would leave a 40k window no room.)
func TestReportBundled(t *testing.T) {
	files := sessions(t, false)
	if raceEnabled {
		files = files[:1]
	}
	compacted := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p := writeReport(t, f, "--window=40000", "--system-tokens=0")
			code, js, errOut := runCmd(t, "simulate", "--json", "--window=40000", "--system-tokens=0", f)
			require.Equal(t, 0, code, errOut)
			var sim simulation.Result
			require.NoError(t, json.Unmarshal([]byte(js), &sim))
			require.Len(t, p.data.Turns, len(sim.Turns))
			for i, tu := range sim.Turns {
				assert.Equal(t, tu.InputTokens, p.data.Turns[i].In, "turn %d", tu.Turn)
				if tu.Compaction != nil {
					c := p.data.Comps[p.data.Turns[i].Comp-1]
					assert.Equal(t, tu.Turn, c.Turn)
					if c.Outcome == "compacted" {
						compacted++
						assert.NotEmpty(t, c.Summary, "turn %d", tu.Turn)
						assert.NotEmpty(t, c.Facts, "turn %d", tu.Turn)
						assert.Contains(t, p.data.Turns[i].Marks, "compaction")
					}
				}
			}
			assert.Equal(t, 40000, p.data.Window)
			assert.Equal(t, f, p.data.Title)
			assert.Contains(t, text(p.byID["title"]), filepath.Base(f))
			assert.NotEmpty(t, p.data.Msgs)
		})
	}
	if !raceEnabled {
		assert.Positive(t, compacted, "a bundled session compacts at 40k")
	}
}

// text is the text a node holds.
func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
	}
	return b.String()
}

// hostile is transcript text that would be markup, script or an event handler if the page
// let it through, with control characters.
const hostile = "</script><script>document.title='pwned'</script><img src=x onerror=\"alert(1)\"><!-- ]]> {{.Data}} \x00\x07\x1b[31mred\u2028end"

// TestReportHostile: a session whose prompt, tool input and tool output and whose file name
// hold markup and script yields a page with no element or attribute of theirs: they are in
// its data as text, with the control characters shown by their symbols.
func TestReportHostile(t *testing.T) {
	line := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return string(b) + "\n"
	}
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	session := line(map[string]any{"type": "user", "uuid": "u1", "parentUuid": nil, "timestamp": "2026-03-01T10:00:00Z",
		"message": map[string]any{"role": "user", "content": hostile}}) +
		line(map[string]any{"type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-03-01T10:00:02Z",
			"message": map[string]any{"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{
				text(hostile), map[string]any{"type": "tool_use", "id": "t1", "name": "Bash<b>", "input": map[string]any{"command": hostile}}}}}) +
		line(map[string]any{"type": "user", "uuid": "u2", "parentUuid": "a1", "timestamp": "2026-03-01T10:00:03Z",
			"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": hostile}}}}) +
		line(map[string]any{"type": "assistant", "uuid": "a2", "parentUuid": "u2", "timestamp": "2026-03-01T10:00:05Z",
			"message": map[string]any{"id": "m2", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{text("done")}}})
	file := filepath.Join(t.TempDir(), "evil<script>alert(1)<", "s.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(session), 0o644))
	out := filepath.Join(t.TempDir(), "report.html")
	code, _, errOut := runCmd(t, "report", "-o", out, file)
	require.Equal(t, 0, code, errOut)
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	p := parsePage(t, raw)
	for _, bad := range []string{"<script>document", "<img", "</script><script>", "\x00", "\x07", "\x1b", "<!-- ]]>"} {
		assert.NotContains(t, string(raw), bad)
	}
	assert.Equal(t, file, p.data.Title)
	shown := strings.NewReplacer("\x00", "\u2400", "\x07", "\u2407", "\x1b", "\u241b").Replace(hostile)
	var found []string
	for _, m := range p.data.Msgs {
		for _, b := range m.Blocks {
			if strings.Contains(b.Text, "pwned") {
				found = append(found, b.Kind)
				if b.Kind != "tool_use" { // a tool call's input is shown as its JSON
					assert.Contains(t, b.Text, shown, "the text is whole, its controls visible")
				}
			}
		}
	}
	assert.ElementsMatch(t, []string{"text", "text", "tool_use", "tool_result"}, found, "prompt, answer, tool input and output")
}

// TestReportLong: a generated session of 5,000 turns gives a page of a few megabytes, with one
// entry per turn and a few paths per chart.
func TestReportLong(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("replays 5,000 turns")
	}
	file := filepath.Join(t.TempDir(), "long.jsonl")
	app, err := transcript.OpenAppender(file, transcript.AppendOptions{})
	require.NoError(t, err)
	require.NoError(t, app.Append(testkit.Generate(5000, testkit.Options{Seed: 1})...))
	start := time.Now()
	p := writeReport(t, file, "--model=claude-sonnet-4-5")
	t.Logf("5,000 turns: %d bytes, %d messages, %d compactions, %v", p.bytes, len(p.data.Msgs), len(p.data.Comps), time.Since(start))
	require.Len(t, p.data.Turns, 5000)
	assert.Less(t, p.bytes, 16<<20, "the page weight")
	assert.NotEmpty(t, p.data.Comps)
}

// TestReportUsage: report needs -o and one FILE, and a PostgreSQL address needs agentctx-full.
func TestReportUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no -o", []string{"report", worktrees}, 2, "report needs -o FILE"},
		{"no file", []string{"report", "-o", "x.html"}, 2, "exactly one session FILE, got 0"},
		{"max-text 0", []string{"report", "-o", "x.html", "--max-text=0", worktrees}, 2, "--max-text must not be 0"},
		{"postgres", []string{"report", "-o", "x.html", "postgres://u@h/db#s"}, 1, "needs agentctx-full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, errOut, tc.want)
		})
	}
	code, out, errOut := runCmd(t, "report", "-o", "-", worktrees)
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "<!DOCTYPE html>"))
}

// TestReplayDamagedFile: simulate and report replay a file with an unreadable line without it,
// and say so on stderr, naming the file and the line, as inspect does.
func TestReplayDamagedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "damaged.jsonl")
	data := `{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}` + "\n" + `{"type":"assistant","message":{broken` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	for _, args := range [][]string{
		{"simulate", path},
		{"report", "-o", filepath.Join(t.TempDir(), "page.html"), path},
	} {
		code, _, stderr := runCmd(t, args...)
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "problem    "+path+":2: ", args[0])
		assert.Contains(t, stderr, "(skipped)", args[0])
	}
}
