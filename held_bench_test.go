package agentctx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/internal/testkit/compacted"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// compactedSession returns testkit.Generate(turns) as a live session at the given window
// would have written it: each response prepared for with the library's own auto-compaction
// (the extractive summarizer, the bytes estimate) and hung off the turn's Result.Leaf, its
// usage the input the turn's request counted, the records each turn appended kept. At a small
// window it compacts every few hundred turns, as a long session does. With decisions, the
// session is also one with the decisions a turn reads from the whole transcript (see
// heldConfig): the first two user messages pinned a tenth of the way in, and a recovery
// decision (a prompt too long by the provider's count) a third of the way in.
func compactedSession(tb testing.TB, turns, window int, decisions bool) (records []transcript.Record, compactions int) {
	src := testkit.Generate(turns, testkit.Options{Seed: 1})
	opts := compacted.Options{Config: heldConfig(window, decisions, nil)}
	if decisions {
		opts.Before = func(p *agentctx.Pipeline, recs []transcript.Record, i int, now time.Time) ([]transcript.Record, error) {
			return addHeldDecisions(tb, p, recs, i, len(src), now), nil
		}
	}
	records, compactions, err := compacted.ReplayWith(context.Background(), src, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return records, compactions
}

// heldConfig is the configuration of a compacted session's turns at window (now: the clock;
// compacted.ReplayWith sets its own): with decisions, the markers' time to live is "auto", so
// that each turn reads the latest TTL decision and weighs the session's responses.
func heldConfig(window int, decisions bool, now func() time.Time) agentctx.Config {
	c := agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: window, Tokens: agentctx.EstimateCounter{},
		Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}}, Now: now}
	if decisions {
		c.Cache.TTL = "auto"
	}
	return c
}

// addHeldDecisions appends to recs, before the turn prepared at source record i of n, the pin
// of the first two user messages at a tenth of the way and the recovery from a prompt the
// provider found too long at a third.
func addHeldDecisions(tb testing.TB, p *agentctx.Pipeline, recs []transcript.Record, i, n int, now time.Time) []transcript.Record {
	switch {
	case i > n/10 && !slices.ContainsFunc(recs, func(r transcript.Record) bool { return r.Pin != nil }):
		var uuids []string
		for j := 0; j < len(recs) && len(uuids) < 2; j++ {
			if recs[j].Type == transcript.TypeUser && !recs[j].IsMeta && recs[j].Message != nil && transcript.TextOf(recs[j].Message.Content) != "" {
				uuids = append(uuids, recs[j].UUID)
			}
		}
		pin, err := p.Pin(recs, uuids, "the task's statement", now)
		if err != nil {
			tb.Fatal(err)
		}
		return append(recs, pin)
	case i > n/3 && !slices.ContainsFunc(recs, func(r transcript.Record) bool { return r.Recovery != nil }):
		res, err := p.Recover(context.Background(), agentctx.Input{Records: recs}, &provider.PromptTooLongError{Tokens: 29_000, Limit: 28_000})
		if err != nil {
			tb.Fatal(err)
		}
		return append(recs, res.Append...)
	}
	return recs
}

// heldSessionEnv names a transcript file BenchmarkSteadyHeld reads instead of generating one.
const heldSessionEnv = "AGENTCTX_HELD_SESSION"

// BenchmarkSteadyHeld measures a steady turn (Prepare and the encoding of one new exchange's
// request: a new body each turn by MarshalJSON, body=new, or the last turn's buffer reused by
// AppendJSON, body=reused) on a compacted session, side by side whether the caller holds all
// its records or only the active tail (read from the latest compaction's kept head on, as
// transcript.ReadOptions.TailMinBytes reads it): the same requests, so the turn should cost
// the same. The session is compactedSession(6,000 turns) at a 30,000-token window (about 70
// compactions, 23,000 records, 800 of them in the tail); the steady turns run at 200,000
// tokens, compacting about every 3,000 turns. Under -short: 1,500 turns. With
// $AGENTCTX_HELD_SESSION set, the session is that file instead (a long one written by
// internal/testkit/cmd/gencompacted), and compactions reports the compact boundaries among the
// records held; with $AGENTCTX_HELD_BALLAST_MB, a block of that size is held beside it.
func BenchmarkSteadyHeld(b *testing.B) { benchSteadyHeld(b, false) }

// BenchmarkSteadyHeldDecisions is BenchmarkSteadyHeld on a session with the decisions a turn
// reads from the whole transcript (see compactedSession): pinned messages the compactions
// left behind, a recovery decision, and the markers' time to live "auto". Its generated
// session is written with those decisions, and AGENTCTX_HELD_SESSION is not read.
func BenchmarkSteadyHeldDecisions(b *testing.B) { benchSteadyHeld(b, true) }

// benchSteadyHeld is BenchmarkSteadyHeld, on a session with decisions or without.
func benchSteadyHeld(b *testing.B, decisions bool) {
	path, compactions := os.Getenv(heldSessionEnv), 0
	if decisions {
		path = ""
	}
	if path == "" {
		turns := 6000
		if testing.Short() {
			turns = 1500
		}
		var recs []transcript.Record
		recs, compactions = compactedSession(b, turns, 30_000, decisions)
		data, err := testkit.JSONL(recs)
		if err != nil {
			b.Fatal(err)
		}
		path = filepath.Join(b.TempDir(), "session.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	var first []byte
	for _, held := range []struct {
		name string
		tail int64
	}{{"all", 0}, {"tail", 1}} {
		b.Run("held="+held.name, func(b *testing.B) {
			for _, reuse := range []bool{false, true} {
				name := map[bool]string{false: "body=new", true: "body=reused"}[reuse]
				b.Run(name, func(b *testing.B) {
					f, err := transcript.ReadFile(path, transcript.ReadOptions{TailMinBytes: held.tail})
					if err != nil {
						b.Fatal(err)
					}
					s := &heldSession{recs: f.Records, decisions: decisions, reuse: reuse}
					body := s.warm(b)
					if decisions && (!bytes.Contains(body, []byte("The runtime pinned these messages")) ||
						!slices.ContainsFunc(f.Records, func(r transcript.Record) bool { return r.Recovery != nil })) {
						b.Fatal("the session has no pinned text in its request, or no recovery decision")
					}
					if first == nil {
						first = body
					} else if !bytes.Equal(first, body) {
						b.Fatal("the tail's request differs from the whole session's")
					}
					ballast := heldBallast(b)
					b.ReportAllocs()
					gc := gcCPU()
					for b.Loop() {
						s.turn(b)
					}
					b.ReportMetric((gcCPU()-gc)*1e9/float64(b.N), "gc-ns/op")
					b.ReportMetric(float64(len(f.Records)), "records")
					n := compactions
					if os.Getenv(heldSessionEnv) != "" && !decisions {
						n = 0
						for i := range f.Records {
							if f.Records[i].IsCompactBoundary() {
								n++
							}
						}
					}
					b.ReportMetric(float64(n), "compactions")
					b.ReportMetric(float64(s.compacted), "compacted")
					runtime.KeepAlive(ballast)
				})
			}
		})
	}
}

// heldBallastEnv names a size in MB that BenchmarkSteadyHeld holds beside the session, as
// one pointer-free block the turns never read: a heap as large as the one all the records
// make, which the collector does not scan, so that what a large heap costs the turn's
// allocations can be told from what marking the records costs.
const heldBallastEnv = "AGENTCTX_HELD_BALLAST_MB"

// heldBallast returns the block $AGENTCTX_HELD_BALLAST_MB asks for, its pages touched, or nil.
func heldBallast(tb testing.TB) []byte {
	v := os.Getenv(heldBallastEnv)
	if v == "" {
		return nil
	}
	mb, err := strconv.Atoi(v)
	if err != nil || mb < 0 {
		tb.Fatalf("$%s: %q is not a size in MB", heldBallastEnv, v)
	}
	ballast := make([]byte, mb<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	return ballast
}

// heldSession is a compacted session's records and the Pipeline serving its steady turns.
type heldSession struct {
	p    *agentctx.Pipeline
	recs []transcript.Record
	// decisions is set for a session compactedSession wrote with decisions.
	decisions bool
	leaf      string
	last      time.Time
	now       time.Time
	tokens    int
	n         int
	// compacted counts the timed turns that compacted: the view grows turn by turn.
	compacted int
	// reuse: each turn's body is appended to the last one's buffer (Request.AppendJSON), as a
	// caller that keeps one buffer for its requests does, instead of a new one (MarshalJSON).
	reuse bool
	body  []byte
	// window is the steady turns' context window; 0: 200,000 tokens.
	window int
}

// warm prepares the session's next request with a new Pipeline and returns its bytes.
func (s *heldSession) warm(tb testing.TB) []byte {
	last, err := time.Parse(time.RFC3339Nano, s.recs[len(s.recs)-1].Timestamp)
	if err != nil {
		tb.Fatal(err)
	}
	s.last, s.now = last, last.Add(5*time.Second)
	window := s.window
	if window == 0 {
		window = 200_000
	}
	s.p, err = agentctx.New(heldConfig(window, s.decisions, func() time.Time { return s.now }))
	if err != nil {
		tb.Fatal(err)
	}
	res, err := s.p.Prepare(tb.Context(), agentctx.Input{Records: s.recs})
	if err != nil {
		tb.Fatal(err)
	}
	body, err := res.Request.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	// Room to append to, as a caller appending turn by turn has on average: the timed turns
	// do not pay for copying every record held once.
	s.recs = slices.Grow(append(s.recs, res.Append...), max(len(s.recs)/4, 4096))
	s.leaf, s.tokens = res.Leaf, res.Report.InputTokens
	return body
}

// turn adds one exchange and prepares and encodes the next request.
func (s *heldSession) turn(tb testing.TB) {
	s.exchange()
	s.prepare(tb)
}

// exchange adds one exchange: an assistant's text and Bash call with its usage, and the
// result.
func (s *heldSession) exchange() {
	sid := s.recs[0].SessionID
	add := func(r transcript.Record) {
		s.n++
		r.UUID = fmt.Sprintf("5eed0000-0000-4000-8000-%012x", s.n)
		r.ParentUUID, r.SessionID = s.leaf, sid
		s.last = s.last.Add(10 * time.Second)
		r.Timestamp = s.last.Format("2006-01-02T15:04:05.000Z")
		s.recs = append(s.recs, r)
		s.leaf = r.UUID
	}
	id := fmt.Sprintf("toolu_held_%d", s.n)
	in, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: fmt.Sprintf("msg_held_%d", s.n), Type: "message",
		Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5", Usage: &transcript.Usage{InputTokens: s.tokens, OutputTokens: 40},
		Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("step %d: running the tests again", s.n)}, &transcript.ToolUse{ID: id, Name: "Bash", Input: in}}}})
	add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser,
		Content: []transcript.Block{&transcript.ToolResult{ToolUseID: id, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("ok  \tpkg/x\t0.%03ds\nPASS %d", s.n%1000, s.n)}}}}}})
	s.now = s.last.Add(5 * time.Second)
}

// prepare prepares and encodes the next request, appends the records it returns and reports
// whether it compacted.
func (s *heldSession) prepare(tb testing.TB) (compacted bool) {
	res, err := s.p.Prepare(tb.Context(), agentctx.Input{Records: s.recs})
	if err != nil {
		tb.Fatal(err)
	}
	if s.reuse {
		s.body, err = res.Request.AppendJSON(s.body[:0])
	} else {
		_, err = res.Request.MarshalJSON()
	}
	if err != nil {
		tb.Fatal(err)
	}
	if c := res.Report.Compaction; c != nil && c.Outcome == agentctx.CompactCompacted {
		s.compacted++
		compacted = true
	}
	s.recs, s.leaf, s.tokens = append(s.recs, res.Append...), res.Leaf, res.Report.InputTokens
	return compacted
}

// gcCPU returns the CPU time the collector has spent in this process, in seconds
// (runtime/metrics: an estimate the runtime keeps, updated at each collection).
func gcCPU() float64 {
	m := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(m)
	return m[0].Value.Float64()
}
