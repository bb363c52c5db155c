package simulate_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkSimulation asserts what holds for every simulation: each sent turn's cache parts sum
// to its input tokens (scaled by the calibration ratio when the figures are), a failed turn
// reads, writes and costs nothing, and the totals are the sums of the turns (the real ones of
// the turns with usage), the cache misses the turns reading less than the previous sent one
// read and wrote.
func checkSimulation(t *testing.T, sim *simulate.Result, name string) {
	t.Helper()
	var want, real simulate.Totals
	cached, realCached := -1, -1
	for _, tu := range sim.Turns {
		if tu.Error != "" {
			want.Failed++
			assert.Zero(t, tu.Usage, "%s turn %d: a failed turn sends nothing", name, tu.Turn)
		} else {
			if c := sim.Calibration; c != nil && c.Scaled {
				assert.InDelta(t, float64(tu.InputTokens)*c.Ratio, tu.Input(), 1, "%s turn %d: uncached + writes + read = input × ratio", name, tu.Turn)
			} else {
				assert.Equal(t, tu.InputTokens, tu.Input(), "%s turn %d: uncached + writes + read = input", name, tu.Turn)
			}
			assert.InDelta(t, sim.Price.Cost(tu.Uncached, tu.CacheWrite5m, tu.CacheWrite1h, tu.CacheRead, tu.Output), tu.Cost, 1e-12, name)
			sum(&want, tu.Turn, tu.Usage)
			if cached >= 0 && tu.CacheRead < cached {
				want.Misses++
			}
			cached = tu.CacheRead + tu.CacheWrite5m + tu.CacheWrite1h
		}
		if c := tu.Compaction; c != nil && c.Outcome == agentctx.CompactCompacted {
			want.Compactions++
		} else if c != nil && c.Outcome == agentctx.CompactFailed {
			want.CompactFailures++
		}
		if u := tu.Real; u != nil {
			sum(&real, tu.Turn, *u)
			if realCached >= 0 && u.CacheRead < realCached {
				real.Misses++
			}
			realCached = u.CacheRead + u.CacheWrite5m + u.CacheWrite1h
		}
		if b := tu.PrefixBreak; b != nil {
			assert.Empty(t, tu.Error, "%s turn %d: only a sent request breaks a prefix", name, tu.Turn)
			assert.GreaterOrEqual(t, b.Kept, 0, name)
			assert.Positive(t, b.Kept+b.Lost, "%s turn %d: a break is in a marked prefix", name, tu.Turn)
			want.PrefixBreaks++
			if b.Cause == "" {
				want.Unexplained++
			}
		}
	}
	assert.Equal(t, want, sim.Totals, "%s: the totals sum the turns", name)
	assert.Equal(t, sim.Responses, len(sim.Turns), name)
	if real.Turns == 0 {
		assert.Nil(t, sim.Real, name)
	} else if assert.NotNil(t, sim.Real, name) {
		real.Compactions = sim.Real.Compactions // the file's boundaries: no turn says
		assert.Equal(t, real, *sim.Real, "%s: the real totals sum the turns' usage", name)
	}
}

// sum adds a turn's usage to totals, as a reader of the per-turn figures would.
func sum(tot *simulate.Totals, turn int, u simulate.Usage) {
	tot.Turns++
	tot.Uncached += u.Uncached
	tot.CacheWrite5m += u.CacheWrite5m
	tot.CacheWrite1h += u.CacheWrite1h
	tot.CacheRead += u.CacheRead
	tot.Output += u.Output
	tot.Cost += u.Cost
	tot.InputTokens += u.Input()
	if u.Input() > tot.PeakTokens {
		tot.PeakTokens, tot.PeakTurn = u.Input(), turn
	}
}

// simJSON is the simulation as the CLI's --json prints it.
func simJSON(t *testing.T, sim *simulate.Result) []byte {
	t.Helper()
	b, err := json.MarshalIndent(sim, "", "  ")
	require.NoError(t, err)
	return append(b, '\n')
}

// TestSimulateCache plays a three-turn session whose last prompt comes after an idle gap of
// ten minutes: the second request reads the whole first one from the cache, and the third
// reads nothing with the default 5-minute TTL (the entries expired) but the second request's
// prefix with a 1-hour TTL, which also writes at the 1-hour price.
func TestSimulateCache(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var recs []transcript.Record
	add := func(role transcript.Role, text string, at time.Duration) {
		r := transcript.Record{Type: transcript.RecordType(role), UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", len(recs)+1),
			SessionID: "11111111-1111-4111-8111-111111111111", Timestamp: t0.Add(at).Format(time.RFC3339Nano),
			Message: &transcript.Message{Role: role, Content: []transcript.Block{&transcript.Text{Text: text}}}}
		if len(recs) > 0 {
			r.ParentUUID = recs[len(recs)-1].UUID
		}
		if role == transcript.RoleAssistant {
			r.Message.ID, r.Message.Model = fmt.Sprintf("msg_%d", len(recs)), "claude-sonnet-4-5"
			r.Message.Usage = &transcript.Usage{InputTokens: 10, OutputTokens: 5}
		}
		recs = append(recs, r)
	}
	// The first prompt holds a spec long enough to be cached (Sonnet 4.5 caches prefixes of
	// 1,024 tokens and more).
	add(transcript.RoleUser, strings.Repeat("The config format has sections, keys and values. ", 70)+"Write a parser for the config format.", 0)
	add(transcript.RoleAssistant, "Here is a first parser.", 20*time.Second)
	add(transcript.RoleUser, "Now add tests for it.", time.Minute)
	add(transcript.RoleAssistant, "Tests added.", 80*time.Second)
	add(transcript.RoleUser, "And a benchmark, please.", 11*time.Minute)
	add(transcript.RoleAssistant, "Benchmark added.", 12*time.Minute)

	for _, tc := range []struct {
		ttl     string
		expired bool
	}{{"", true}, {"5m", true}, {"1h", false}} {
		t.Run("ttl="+tc.ttl, func(t *testing.T) {
			cfg := agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}, Cache: agentctx.CacheConfig{TTL: tc.ttl}}
			sim, err := simulate.Run(t.Context(), recs, cfg, simulate.Options{})
			require.NoError(t, err)
			checkSimulation(t, sim, "ttl "+tc.ttl)
			require.Len(t, sim.Turns, 3)
			t1, t2, t3 := sim.Turns[0], sim.Turns[1], sim.Turns[2]
			write := func(u simulate.Usage) int { return u.CacheWrite5m + u.CacheWrite1h }
			assert.Zero(t, t1.CacheRead)
			assert.Equal(t, t1.InputTokens, write(t1.Usage), "the first request writes all of itself")
			assert.Equal(t, t1.InputTokens, t2.CacheRead, "the second reads the first")
			assert.Equal(t, t2.InputTokens-t1.InputTokens, write(t2.Usage))
			assert.Equal(t, tc.expired, t3.Expired)
			if tc.expired {
				assert.Zero(t, t3.CacheRead, "ten idle minutes expire a 5-minute entry")
				assert.Equal(t, t3.InputTokens, t3.CacheWrite5m)
			} else {
				assert.Equal(t, t2.InputTokens, t3.CacheRead, "a 1-hour entry survives ten minutes")
				assert.Equal(t, t3.InputTokens-t2.InputTokens, t3.CacheWrite1h)
				assert.Zero(t, t3.CacheWrite5m)
			}
			assert.Equal(t, 5, t3.Output, "the output is the response's reported output")
			assert.Equal(t, recs[4].Time(), t3.Time, "the clock is the prompt's timestamp")
			assert.Zero(t, sim.Skipped)
			price := simulate.DefaultPrices()["claude-sonnet-4-5"]
			assert.Equal(t, price, sim.Price)
			assert.True(t, sim.Priced)
			require.NotNil(t, sim.Real)
			assert.Equal(t, 30, sim.Real.Uncached, "three responses reported 10 input tokens each")
		})
	}
}

// TestSimulateSkips: a subagent's sidechain response (two records of one message) and an API
// error the client wrote are no turns of the main conversation: they count as two skipped
// responses, and the main conversation's two responses are the turns.
func TestSimulateSkips(t *testing.T) {
	const session = `{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"Look around."}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-03-01T10:00:04Z","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Starting a helper."}]}}
{"type":"assistant","uuid":"s1","parentUuid":null,"isSidechain":true,"timestamp":"2026-03-01T10:00:05Z","message":{"id":"msg_s","role":"assistant","content":[{"type":"text","text":"Helper here."}]}}
{"type":"assistant","uuid":"s2","parentUuid":"s1","isSidechain":true,"timestamp":"2026-03-01T10:00:06Z","message":{"id":"msg_s","role":"assistant","content":[{"type":"text","text":"Done."}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-03-01T10:01:00Z","message":{"role":"user","content":"Go on."}}
{"type":"assistant","uuid":"e1","parentUuid":"u2","isApiErrorMessage":true,"timestamp":"2026-03-01T10:01:01Z","message":{"id":"msg_e","role":"assistant","content":[{"type":"text","text":"API Error: overloaded"}]}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-03-01T10:01:30Z","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"Going on."}]}}
`
	tr, err := transcript.Read(strings.NewReader(session), "skips.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	sim, err := simulate.Run(t.Context(), tr.Records, agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}}, simulate.Options{})
	require.NoError(t, err)
	checkSimulation(t, sim, "skips")
	assert.Equal(t, 2, sim.Skipped)
	require.Len(t, sim.Turns, 2)
	assert.Equal(t, []string{"a1", "a2"}, []string{sim.Turns[0].UUID, sim.Turns[1].UUID})
	assert.Equal(t, 7, sim.Turns[1].Line)
	assert.Nil(t, sim.Real, "no response carries usage")
	assert.Positive(t, sim.Turns[1].Output, "without usage the output is the response's counted size")
}

// TestSimulateCompactionRelinks: a window that forces compactions replays the whole session
// on the compacted transcript — every later turn is built on the compaction's records (its
// request is far smaller than the uncompacted one), and the simulation appends the
// compaction's records rather than losing the file's.
func TestSimulateCompactionRelinks(t *testing.T) {
	recs := testkit.Generate(120, testkit.Options{Seed: 7})
	// The generator's tools, declared up front: otherwise normalize declares the tools the
	// view uses, a list that changes after a compaction and with it the cached prefix.
	var opts simulate.Options
	for _, name := range []string{"Read", "Bash", "Grep", "Glob", "Edit", "Write", "WebFetch", "TodoWrite"} {
		opts.Tools = append(opts.Tools, provider.Tool{Name: name, Definition: json.RawMessage(
			`{"name":"` + name + `","description":"The ` + name + ` tool.","input_schema":{"type":"object"}}`)})
	}
	full, err := simulate.Run(t.Context(), recs, agentctx.Config{Model: "claude-sonnet-4-5", Tokens: agentctx.EstimateCounter{}}, opts)
	require.NoError(t, err)
	checkSimulation(t, full, "200k")
	assert.Zero(t, full.Totals.Compactions)

	small, err := simulate.Run(t.Context(), recs, agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 30000, Tokens: agentctx.EstimateCounter{}}, opts)
	require.NoError(t, err)
	checkSimulation(t, small, "30k")
	require.Positive(t, small.Totals.Compactions)
	assert.Zero(t, small.Totals.Failed, "every request fits after its compaction")
	last := len(small.Turns) - 1
	assert.Less(t, small.Turns[last].InputTokens, full.Turns[last].InputTokens/2, "the last turn is built on the compacted transcript")
	assert.Less(t, small.Totals.PeakTokens, 30000)
	checked := 0
	for i, tu := range small.Turns[:last] {
		if tu.Compaction == nil || tu.Compaction.Outcome != agentctx.CompactCompacted {
			continue
		}
		assert.Positive(t, tu.Appended, "a compaction appends records")
		assert.Zero(t, tu.CacheRead, "turn %d: the summary starts a new prefix", tu.Turn)
		if next := small.Turns[i+1]; next.Compaction == nil {
			assert.Equal(t, tu.InputTokens, next.CacheRead, "turn %d reads the compacted request of turn %d", next.Turn, tu.Turn)
			checked++
		}
	}
	assert.Positive(t, checked)
}

var update = flag.Bool("update", false, "rewrite testdata/*.json")

// TestSimulateGolden replays three sessions the root package bundles (../testdata/sessions) —
// one with a real compaction in the file and an idle gap that expires the cache, one whose
// first prompts are under the minimum cacheable prefix, one compacted by the simulation's
// small window — and compares the JSON of the simulation with testdata/NAME.json (rewritten by
// go test -run Golden -update). The same records give the same bytes twice.
func TestSimulateGolden(t *testing.T) {
	for _, tc := range []struct {
		file   string
		window int
		check  func(t *testing.T, sim *simulate.Result)
	}{
		{"codemie-code/compacted-624a4a58.jsonl", 0, func(t *testing.T, sim *simulate.Result) {
			require.NotNil(t, sim.Real)
			expired := 0
			for _, tu := range sim.Turns {
				if tu.Expired {
					expired++
					assert.Zero(t, tu.CacheRead, "turn %d: nothing is read after the entry expired", tu.Turn)
				}
			}
			assert.Positive(t, expired, "an idle gap expires the cache")
		}},
		{"codemie-code/mid-call-turn-1.jsonl", 0, func(t *testing.T, sim *simulate.Result) {
			short := 0
			for _, tu := range sim.Turns {
				if tu.InputTokens < agentctx.DefaultModels()["claude-sonnet-4-5"].MinCacheTokens { // Sonnet 4.5's minimum cacheable prefix
					short++
					assert.Zero(t, tu.CacheWrite5m+tu.CacheWrite1h+tu.CacheRead, "turn %d: a prefix under the minimum is not cached", tu.Turn)
					assert.Equal(t, tu.InputTokens, tu.Uncached, "turn %d", tu.Turn)
				}
			}
			assert.Positive(t, short, "the session starts under the minimum cacheable prefix")
		}},
		{"claude-code-log/worktrees-ef958aa1.jsonl", 16000, func(t *testing.T, sim *simulate.Result) {
			assert.Positive(t, sim.Totals.Compactions)
		}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			if raceEnabled && tc.window == 0 && strings.Contains(tc.file, "compacted") {
				t.Skip("a 55-turn replay; the plain run compares it, the race detector has nothing concurrent to find in it")
			}
			tr, err := transcript.ReadFile(filepath.Join("..", "testdata", "sessions", tc.file), transcript.ReadOptions{})
			require.NoError(t, err)
			cfg := agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: tc.window}
			sim, err := simulate.Run(t.Context(), tr.Records, cfg, simulate.Options{})
			require.NoError(t, err)
			checkSimulation(t, sim, tc.file)
			tc.check(t, sim)
			got := simJSON(t, sim)
			again, err := simulate.Run(t.Context(), tr.Records, cfg, simulate.Options{})
			require.NoError(t, err)
			require.Equal(t, string(got), string(simJSON(t, again)), "the same records give the same bytes")

			path := filepath.Join("testdata", strings.TrimSuffix(filepath.Base(tc.file), ".jsonl")+".json")
			if *update {
				require.NoError(t, os.WriteFile(path, got, 0o644))
				t.Logf("updated %s", path)
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "missing golden file: run go test -run Golden -update and review the diff")
			assert.Equal(t, string(want), string(got), "golden %s differs (go test -run Golden -update rewrites it)", path)
		})
	}
}

// TestSimulateCorpus replays a sample of the corpus (one session in three; the race
// detector's quarter of that): every simulation holds its invariants, and the simulated cache
// figures are shown beside the real ones where the file has usage.
func TestSimulateCorpus(t *testing.T) {
	compared := 0
	for _, f := range corpusSample(t) {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		sim, err := simulate.Run(t.Context(), tr.Records, agentctx.Config{Model: "claude-sonnet-4-5"}, simulate.Options{})
		require.NoError(t, err, f)
		checkSimulation(t, sim, f)
		if r := sim.Real; r != nil {
			compared++
			s := sim.Totals
			t.Logf("%s: %d turns; simulated input %d (read %d, write %d, uncached %d) $%.4f; real input %d (read %d, write %d, uncached %d) $%.4f",
				filepath.Base(f), len(sim.Turns), s.InputTokens, s.CacheRead, s.CacheWrite5m+s.CacheWrite1h, s.Uncached, s.Cost,
				r.InputTokens, r.CacheRead, r.CacheWrite5m+r.CacheWrite1h, r.Uncached, r.Cost)
		}
	}
	assert.Positive(t, compared, "some corpus sessions carry real usage")
}

// TestPrices: dated and provider-prefixed ids find their price by longest prefix, unknown
// models none; a negative price in the table is refused naming the model and the field.
func TestPrices(t *testing.T) {
	ps := simulate.DefaultPrices()
	for _, tc := range []struct {
		model string
		input float64
		ok    bool
	}{
		{"claude-sonnet-4-5-20250929", 3, true},
		{"us.anthropic.claude-opus-4-1@20250805", 15, true},
		{"claude-opus-4-6[1m]", 5, true},
		{"claude-haiku-4-5", 1, true},
		{"gpt-5", 0, false},
	} {
		p, ok := ps.Lookup(tc.model)
		assert.Equal(t, tc.ok, ok, tc.model)
		assert.Equal(t, tc.input, p.Input, tc.model)
		if ok {
			assert.Equal(t, p.Input*1.25, p.CacheWrite5m, tc.model)
			assert.Equal(t, p.Input*2, p.CacheWrite1h, tc.model)
			assert.Equal(t, p.Input/10, p.CacheRead, tc.model)
		}
	}
	bad := simulate.DefaultPrices()
	bad["claude-sonnet-4-5"] = simulate.Price{Input: 3, CacheRead: -1}
	_, err := simulate.Run(t.Context(), nil, agentctx.Config{Model: "claude-sonnet-4-5"}, simulate.Options{Prices: bad})
	require.EqualError(t, err, `simulate: price of "claude-sonnet-4-5": CacheRead -1 is not a finite price of zero or more`)
	bad["claude-haiku-4-5"] = simulate.Price{Input: math.NaN()}
	bad["claude-opus-4-1"] = simulate.Price{Output: math.Inf(1)}
	for range 5 { // several bad prices: the same one, by name, every time
		_, err = simulate.Run(t.Context(), nil, agentctx.Config{Model: "claude-sonnet-4-5"}, simulate.Options{Prices: bad})
		require.EqualError(t, err, `simulate: price of "claude-haiku-4-5": Input NaN is not a finite price of zero or more`)
	}
	sim, err := simulate.Run(t.Context(), nil, agentctx.Config{Model: "gpt-5", ContextWindow: 100000}, simulate.Options{})
	require.NoError(t, err)
	assert.False(t, sim.Priced, "an unknown model is not priced")
	assert.Empty(t, sim.Turns)
}

// BenchmarkSimulate replays generated sessions of 200, 2,000 and 5,000 turns under the
// default config (tiktoken counter, extractive summaries), the 5,000-turn one overflowing the
// window: one Prepare per turn, each on the transcript as it stood, so the time grows with
// the square of the turns; Prepare at the session's end is the floor each turn is measured
// against.
func BenchmarkSimulate(b *testing.B) {
	for _, turns := range []int{200, 2000, 5000} {
		recs := testkit.Generate(turns, testkit.Options{Seed: 1})
		cfg := agentctx.Config{Model: "claude-sonnet-4-5"}
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := simulate.Run(b.Context(), recs, cfg, simulate.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("turns=%d/prepare-last", turns), func(b *testing.B) {
			p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}}, Budget: agentctx.BudgetConfig{Store: &agentctx.MapStore{}}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Prepare(b.Context(), agentctx.Input{Records: recs}); err != nil && !errors.Is(err, agentctx.ErrNoMessages) {
					var ptl *provider.PromptTooLongError
					if !errors.As(err, &ptl) {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// corpusSample returns one Claude Code session in three of the shared corpus
// (../../shared/corpus, sorted; one in twelve under the race detector), and every Codex
// rollout outside the race detector; it skips the test when the corpus is absent.
func corpusSample(t *testing.T) []string {
	t.Helper()
	stride := 3
	if raceEnabled {
		stride = 12
	}
	return corpusFiles(t, stride)
}

// corpusFiles returns one Claude Code session in stride of the shared corpus
// (../../shared/corpus, sorted), and every Codex rollout outside the race detector; it skips
// the test when the corpus is absent.
func corpusFiles(t *testing.T, stride int) []string {
	t.Helper()
	root := filepath.Join("..", "..", "shared", "corpus")
	walk := func(dir string) []string {
		var files []string
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
				files = append(files, path)
			}
			return err
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		slices.Sort(files)
		return files
	}
	var files []string
	for i, f := range walk("claude-code") {
		if i%stride == 0 {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Skip("no .jsonl files under ../../shared/corpus/claude-code; whole-corpus tests skipped")
	}
	if !raceEnabled {
		files = append(files, walk("codex")...)
	}
	return files
}

// TestSimulateObserve: Options.Observe sees every turn once, in order, with the Turn that
// Result.Turns keeps, the records Prepare was given (the file's before the response, plus
// what earlier turns appended) and what Prepare returned.
func TestSimulateObserve(t *testing.T) {
	records := testkit.Generate(120, testkit.Options{Seed: 3})
	var steps []simulate.Step
	sim, err := simulate.Run(t.Context(), records, agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 16_000},
		simulate.Options{Observe: func(s *simulate.Step) {
			c := *s
			c.Turn = new(*s.Turn)
			steps = append(steps, c)
		}})
	require.NoError(t, err)
	require.Positive(t, sim.Totals.Compactions)
	require.Len(t, steps, len(sim.Turns))
	for i, s := range steps {
		assert.Equal(t, sim.Turns[i], *s.Turn)
		assert.Equal(t, s.Turn.InputTokens, s.Result.Report.InputTokens, "turn %d", i+1)
		assert.Len(t, s.Result.Append, s.Turn.Appended, "turn %d", i+1)
		assert.Equal(t, s.Pipeline.Breakdown(s.Result).InputTokens(), s.Turn.InputTokens, "turn %d: the pipeline measures the result", i+1)
		if i == 0 {
			continue
		}
		prev := steps[i-1]
		require.GreaterOrEqual(t, len(s.Input.Records), len(prev.Input.Records)+len(prev.Result.Append), "turn %d", i+1)
		uuids := map[string]bool{}
		for _, r := range s.Input.Records {
			uuids[r.UUID] = true
		}
		for _, r := range prev.Result.Append {
			assert.True(t, uuids[r.UUID], "turn %d: turn %d's record %s is in the transcript", i+1, i, r.UUID)
		}
	}
}
