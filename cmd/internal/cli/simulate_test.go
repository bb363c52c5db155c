package cli

import (
	"encoding/json"
	"encoding/xml"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	simulation "github.com/agentctx/agentctx/simulate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSimulateBundled: on every bundled session the text output has a line per turn and the
// totals beside the real ones, --json decodes to the documented schema with totals that sum
// the turns, the same run gives the same bytes, and stderr stays empty (no progress bar when
// it is not a terminal).
func TestSimulateBundled(t *testing.T) {
	files := sessions(t, false)
	if raceEnabled {
		files = files[:1] // the plain run covers every bundled session; one is enough to look for races
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, text, errOut := runCmd(t, "simulate", "--window=40000", f)
			require.Equal(t, 0, code, errOut)
			assert.Empty(t, errOut, "no progress bar on a stderr that is not a terminal")
			for _, want := range []string{"responses replayed", "auto-compact threshold", " turn  time", "policy", "real", "cache read", "cost (USD)", "compactions"} {
				assert.Contains(t, text, want)
			}
			code, js, errOut := runCmd(t, "simulate", "--json", "--window=40000", f)
			require.Equal(t, 0, code, errOut)
			code, again, _ := runCmd(t, "simulate", "--json", "--window=40000", f)
			require.Equal(t, 0, code)
			assert.Equal(t, js, again, "the same file and flags give the same bytes")
			var sim simulation.Result
			require.NoError(t, json.Unmarshal([]byte(js), &sim))
			assert.Equal(t, 40000, sim.ContextWindow)
			assert.Len(t, sim.Turns, sim.Responses)
			in, read := 0, 0
			for _, tu := range sim.Turns {
				assert.Regexp(t, `(?m)^ +`+strconv.Itoa(tu.Turn)+` +\S+ +`+strconv.Itoa(tu.InputTokens)+` `, text, "turn %d", tu.Turn)
				in += tu.Input()
				read += tu.CacheRead
			}
			assert.Equal(t, in, sim.Totals.InputTokens)
			assert.Equal(t, read, sim.Totals.CacheRead)
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(js), &raw))
			for _, key := range []string{"model", "context_window", "auto_compact_threshold", "price", "priced", "records", "responses", "turns", "totals"} {
				assert.Contains(t, raw, key, "docs/simulate.md's top-level keys")
			}
		})
	}
}

// TestSimulateConfig: a TOML policy changes what the simulation does — the 1-hour cache TTL
// writes at the 1-hour price, a price override changes the cost, a disabled auto-compact
// leaves requests unsent — and flags override the file; errors name the file, the line and
// the key.
func TestSimulateConfig(t *testing.T) {
	f := worktrees
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	sim := func(args ...string) simulation.Result {
		t.Helper()
		// No fixed prefix: the session's estimated one would not leave a 16k window room.
		code, js, errOut := runCmd(t, append(append([]string{"simulate", "--json", "--system-tokens=0"}, args...), f)...)
		require.Equal(t, 0, code, errOut)
		var s simulation.Result
		require.NoError(t, json.Unmarshal([]byte(js), &s))
		return s
	}
	base := sim("--window=16000")
	require.Positive(t, base.Totals.Compactions)
	assert.Zero(t, base.Totals.CacheWrite1h)

	hour := sim("--config="+write("hour.toml", "# Claude Code's own cache lifetime\n[cache]\nttl = \"1h\"\n"), "--window=16000")
	assert.Zero(t, hour.Totals.CacheWrite5m)
	assert.Less(t, base.Totals.InputTokens, hour.Totals.InputTokens,
		"the 5-minute entries expire in the idle gaps, where the policy clears old results and compacts from the warning level: it sends less than with the hour's")
	expired := func(s simulation.Result) (n int) {
		for _, tu := range s.Turns {
			if tu.Expired {
				n++
			}
		}
		return n
	}
	assert.Positive(t, expired(base), "the session has idle gaps over 5 minutes")
	assert.Zero(t, expired(hour), "none over an hour")

	cheap := sim("--config=" + write("price.toml", "model = \"claude-sonnet-4-5\"\ncontext_window = 16000\n[prices.\"claude-sonnet-4-5\"]\ninput = 1\ncache_write_5m = 1\ncache_read = 1\noutput = 0\n"))
	assert.Equal(t, "claude-sonnet-4-5", cheap.Model)
	assert.Equal(t, 16000, cheap.ContextWindow)
	assert.InDelta(t, float64(cheap.Totals.InputTokens)/1e6, cheap.Totals.Cost, 1e-9, "every input token at $1 per million, output free")

	noCompact := write("nocompact.toml", "context_window = 16000\n[compact]\ndisable_auto = true\n")
	off := sim("--config=" + noCompact)
	assert.Zero(t, off.Totals.Compactions)
	assert.Positive(t, off.Totals.Failed, "without auto-compact the session outgrows 16k")
	assert.Equal(t, 200000, sim("--config="+noCompact, "--window=200000").ContextWindow, "--window overrides the file")

	for _, tc := range []struct{ body, want string }{
		{"[budget]\nmax_result_chars = \"many\"\n", "bad.toml: line 2 (last key \"budget.max_result_chars\"): incompatible types"},
		{"[cache]\nttl = \"1h\"\nttls = 3\n", "bad.toml: unknown key cache.ttls"},
		{"[cache\n", "bad.toml:2: expected '.' or ']' to end table name"},
		{"[cache]\nttl = \"2h\"\n", `Cache.TTL "2h" is not`},
		{"model = \"claude-sonnet-4-5\"\ncontext_window = -5\n", "--config: " + filepath.Join(dir, "bad.toml") + ": context_window -5 is negative"},
		{"max_output_tokens = -1\n", "bad.toml: max_output_tokens -1 is negative"},
		{"thinking = true\n", "bad.toml: thinking: want \"off\", \"adaptive\" or a budget in tokens, got true"},
		{"thinking = 100\n", "bad.toml: thinking: a thinking budget is at least 1024 tokens, got 100"},
	} {
		code, _, errOut := runCmd(t, "simulate", "--config="+write("bad.toml", tc.body), f)
		assert.Equal(t, 1, code, tc.body)
		assert.Contains(t, errOut, tc.want, tc.body)
	}
	code, _, errOut := runCmd(t, "simulate", "--config="+filepath.Join(dir, "missing.toml"), f)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--config: cannot read")
	code, _, errOut = runCmd(t, "simulate", "--window=-5", "--config="+noCompact, f)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--window must be positive, got -5")
}

// svgDoc is the part of the chart a test reads back.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Width   int      `xml:"width,attr"`
	Height  int      `xml:"height,attr"`
	Title   string   `xml:"title"`
	Paths   []struct {
		ID string `xml:"id,attr"`
		D  string `xml:"d,attr"`
	} `xml:"path"`
	Lines []struct {
		ID string  `xml:"id,attr"`
		Y1 float64 `xml:"y1,attr"`
		Y2 float64 `xml:"y2,attr"`
	} `xml:"line"`
	Groups []struct {
		ID    string `xml:"id,attr"`
		Lines []struct {
			Class string `xml:"class,attr"`
			Title string `xml:"title"`
		} `xml:"line"`
	} `xml:"g"`
}

// TestSimulateSVG: --svg writes one well-formed, self-contained SVG file with the input line
// (a point per turn), the cached area, the threshold line and one marker per compaction; it is
// rendered with headless Chromium when the machine has it.
func TestSimulateSVG(t *testing.T) {
	f := worktrees
	out := filepath.Join(t.TempDir(), "chart.svg")
	code, js, errOut := runCmd(t, "simulate", "--json", "--window=16000", "--system-tokens=0", "--svg="+out, f)
	require.Equal(t, 0, code, errOut)
	var sim simulation.Result
	require.NoError(t, json.Unmarshal([]byte(js), &sim))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var doc svgDoc
	require.NoError(t, xml.Unmarshal(data, &doc), "well-formed XML")
	assert.Equal(t, chartW, doc.Width)
	assert.Contains(t, doc.Title, "window 16000")
	for _, bad := range []string{"<script", "href", "@import", "url("} {
		assert.NotContains(t, string(data), bad, "self-contained")
	}
	paths := map[string]string{}
	for _, p := range doc.Paths {
		paths[p.ID] = p.D
	}
	assert.Equal(t, len(sim.Turns), strings.Count(paths["input"], "M")+strings.Count(paths["input"], "L"), "a point per turn")
	assert.True(t, strings.HasSuffix(paths["cached"], "Z"), "the cached share is a closed area")
	var threshold bool
	for _, l := range doc.Lines {
		if l.ID == "threshold" {
			threshold = true
			assert.Equal(t, l.Y1, l.Y2, "horizontal")
		}
	}
	assert.True(t, threshold, "the threshold line")
	markers := 0
	for _, g := range doc.Groups {
		if g.ID == "compactions" {
			for _, l := range g.Lines {
				assert.Equal(t, "compaction", l.Class)
				assert.Contains(t, l.Title, "compacted")
				markers++
			}
		}
	}
	assert.Equal(t, sim.Totals.Compactions, markers, "a marker per compaction")
	require.Positive(t, markers)

	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("%s not found: the chart is checked structurally only, not rendered", chromium)
	}
	shot := filepath.Join(t.TempDir(), "chart.png")
	cmd := exec.CommandContext(t.Context(), chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--window-size=960,400", "--screenshot="+shot, "file://"+out)
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, string(outb))
	pf, err := os.Open(shot)
	require.NoError(t, err)
	defer pf.Close()
	img, err := png.Decode(pf)
	require.NoError(t, err)
	colors := map[uint32]bool{}
	bounds := img.Bounds()
	for yy := bounds.Min.Y; yy < bounds.Max.Y; yy += 7 {
		for xx := bounds.Min.X; xx < bounds.Max.X; xx += 7 {
			r, g, b, _ := img.At(xx, yy).RGBA()
			colors[r>>8<<16|g>>8<<8|b>>8] = true
		}
	}
	assert.Greater(t, len(colors), 3, "the rendered chart is not blank")
}

// TestSimulateCorpus: simulate runs on every corpus session. Under the race detector it is
// left to the plain run: a replay calls Prepare once per turn, and the root package's
// TestSimulateCorpus covers a sample under the race detector.
func TestSimulateCorpus(t *testing.T) {
	if raceEnabled {
		t.Skip("the plain run replays every corpus session; under the race detector the root package's sample does")
	}
	for _, f := range sessions(t, true) {
		code, _, errOut := runCmd(t, "simulate", "--json", f)
		assert.Equal(t, 0, code, "%s: %s", f, errOut)
	}
}

// TestSimulateSVGHostileContent: control characters and markup in a session's model id (which
// reaches the chart's title) leave the SVG well-formed, without the markup.
func TestSimulateSVGHostileContent(t *testing.T) {
	dir := t.TempDir()
	sess, out := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "c.svg")
	require.NoError(t, os.WriteFile(sess, []byte(`{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","model":"claude-sonnet-4-5\u0007\u001b[31m<script>","role":"assistant","content":[{"type":"text","text":"ok"}]}}
`), 0o644))
	code, _, errOut := runCmd(t, "simulate", "--svg="+out, sess)
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(data, new(struct{})), "well-formed XML")
	assert.NotContains(t, string(data), "<script")
}

// TestSimulateReplayPolicy: by default the command replays the file with its compactions, a
// fixed prefix estimated from its first usage, figures in provider tokens and the session's
// own thinking setting, all reported; --replay policy leaves the file's compaction out and
// says so; --system, --system-tokens and --thinking set the prefix and the thinking, and bad
// values are usage errors.
func TestSimulateReplayPolicy(t *testing.T) {
	f := filepath.Join(repo, "testdata", "sessions", "codemie-code", "compacted-624a4a58.jsonl")
	sim := func(args ...string) simulation.Result {
		t.Helper()
		code, js, errOut := runCmd(t, append(append([]string{"simulate", "--json"}, args...), f)...)
		require.Equal(t, 0, code, errOut)
		var s simulation.Result
		require.NoError(t, json.Unmarshal([]byte(js), &s))
		return s
	}
	file := sim()
	assert.Equal(t, simulation.ReplayFile, file.Replay)
	require.NotNil(t, file.FixedPrefix)
	assert.Equal(t, simulation.PrefixEstimate, file.FixedPrefix.Source)
	assert.Positive(t, file.FixedPrefix.FirstPrompt)
	require.NotNil(t, file.Calibration)
	assert.True(t, file.Calibration.Scaled)
	assert.Equal(t, "session", file.ThinkingSource)
	require.NotNil(t, file.Real)
	assert.Equal(t, 1, file.Real.Compactions, "the file's own compaction")

	policy := sim("--replay=policy")
	assert.Equal(t, simulation.ReplayPolicy, policy.Replay)
	assert.Equal(t, *file.FixedPrefix, *policy.FixedPrefix, "the prefix is the file's first usage's either way")
	assert.Greater(t, policy.Totals.InputTokens, file.Totals.InputTokens, "without the file's summary the later turns send more")

	code, text, errOut := runCmd(t, "simulate", "--replay=policy", f)
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"replay policy: from the first record", "fixed prefix: a system prompt of", "calibration: ",
		"thinking ", "cache-read share", "cache misses", "policy ÷ real cost"} {
		assert.Contains(t, text, want)
	}

	dir := t.TempDir()
	prompt := filepath.Join(dir, "system.txt")
	require.NoError(t, os.WriteFile(prompt, []byte("You help with code. Keep it short."), 0o644))
	own := sim("--system=" + prompt)
	require.NotNil(t, own.FixedPrefix)
	assert.Equal(t, simulation.PrefixSystem, own.FixedPrefix.Source)
	assert.Equal(t, simulation.FixedPrefix{Tokens: 3000, Source: simulation.PrefixSystemTokens}, *sim("--system-tokens=3000").FixedPrefix)
	assert.Nil(t, sim("--system-tokens=0").FixedPrefix)

	th := sim("--thinking=2048")
	assert.Equal(t, "config", th.ThinkingSource)
	assert.Equal(t, 2048, th.Thinking.BudgetTokens)
	assert.Nil(t, sim("--thinking=off").Thinking)
	config := filepath.Join(dir, "adaptive.toml")
	require.NoError(t, os.WriteFile(config, []byte("thinking = \"adaptive\"\n"), 0o644))
	assert.Equal(t, "adaptive", sim("--config="+config).Thinking.Type)
	assert.Nil(t, sim("--config="+config, "--thinking=off").Thinking, "the flag overrides the file")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replay=both"}, `--replay must be policy or file, got "both"`},
		{[]string{"--system-tokens=-1"}, "--system-tokens must not be negative"},
		{[]string{"--system=" + prompt, "--system-tokens=5"}, "--system and --system-tokens both"},
		{[]string{"--thinking=lots"}, `--thinking: want off, adaptive or a budget in tokens, got "lots"`},
		{[]string{"--thinking=10"}, "--thinking: a thinking budget is at least 1024 tokens"},
	} {
		code, _, errOut := runCmd(t, append(append([]string{"simulate"}, tc.args...), f)...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, errOut, tc.want, tc.args)
	}
}
