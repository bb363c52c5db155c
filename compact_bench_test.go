package agentctx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	. "github.com/agentctx/agentctx/transcript"
)

// BenchmarkCompact measures compaction on the 2,000-turn generated session (779k counted
// tokens; a 200k window), with the default tiktoken counter, side by side:
//
//   - extractive: the extractive summarizer alone, on the session's summary view;
//   - compact: a whole compaction (Pipeline.Compact with the extractive summarizer): the view,
//     the summary, the installation and the request built from it;
//   - steady-after: one new exchange on the compacted session, memo warm, Prepare and
//     Request.MarshalJSON (what each turn after the compaction pays);
//   - marshal-after: json.Marshal of that turn's request (through Request.MarshalJSON and
//     its memo, then compacted again by encoding/json);
//   - encode-after: Request.MarshalJSON of that request with no memo (assembled by a caller);
//   - floor-after: encoding/json on plain structs that give that request's exact bytes;
//   - steady-grown, encode-grown, floor-grown: the same three after the compacted session went
//     on for another 220 turns (generated as its continuation, usage growing with what was
//     written), a request of about half the window, under the auto-compact threshold: the
//     steady turn of a long session that compacts, measured at a realistic size;
//   - paired-after, paired-grown: steady, encode and floor alternating in one loop, reporting
//     the ratios of their times (steady/encode, steady/floor), the figures least moved by the
//     machine's load.
func BenchmarkCompact(b *testing.B) {
	now := time.Date(2026, 1, 2, 3, 30, 0, 0, time.UTC)
	recs := testkit.Generate(2000, testkit.Options{Seed: 1})
	tc := DefaultTokenCounter()
	cfg := Config{Model: "claude-sonnet-4-5", Tokens: tc, Budget: BudgetConfig{Store: &MapStore{}},
		Compact: CompactConfig{Summarizer: summarize.Extractive{}}, Now: func() time.Time { return now }}
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	// The summary request of this session, as the extractive summarizer gets it.
	var req summarize.Request
	capture, err := New(Config{Model: cfg.Model, Tokens: tc, Budget: cfg.Budget, Now: cfg.Now,
		Compact: CompactConfig{Summarizer: summarize.Func(func(ctx context.Context, r summarize.Request) (summarize.Summary, error) {
			req = r
			return summarize.Extractive{}.Summarize(ctx, r)
		})}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := capture.Compact(b.Context(), Input{Records: recs}, CompactOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Run("turns=2000/extractive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := (summarize.Extractive{}).Summarize(b.Context(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("turns=2000/compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := p.Compact(b.Context(), Input{Records: recs}, CompactOptions{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(res.Report.Compaction.PreTokens), "pre-tokens")
			b.ReportMetric(float64(res.Report.Compaction.PostTokens), "post-tokens")
		}
	})
	res, err := p.Prepare(b.Context(), Input{Records: recs})
	if err != nil {
		b.Fatal(err)
	}
	// The compacted transcript, with room for one new record that each turn overwrites (Prepare
	// does not retain its input), as a caller appends to its own slice.
	compacted := append(append(make([]Record, 0, len(recs)+len(res.Append)+1), recs...), res.Append...)
	next := func(i int) Input {
		u := Record{Type: TypeUser, UUID: fmt.Sprintf("bench-%d", i), ParentUUID: res.Leaf,
			Message: &Message{Role: RoleUser, StringContent: true,
				Content: []Block{&Text{Text: fmt.Sprintf("next question number %d: what does the test print?", i)}}}}
		return Input{Records: append(compacted, u)}
	}
	var last Result
	b.Run("turns=2000/steady-after", func(b *testing.B) { last = benchSteadyTurn(b, p, next) })
	b.Run("turns=2000/marshal-after", func(b *testing.B) {
		if last.Request.Messages == nil {
			r, err := p.Prepare(b.Context(), next(1))
			if err != nil {
				b.Fatal(err)
			}
			last = r
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(last.Request); err != nil {
				b.Fatal(err)
			}
		}
	})
	if last.Request.Messages == nil {
		// encode-after and floor-after run without steady-after: build the turn they encode.
		r, err := p.Prepare(b.Context(), next(1))
		if err != nil {
			b.Fatal(err)
		}
		last = r
	}
	benchEncodeFloor(b, "turns=2000/encode-after", "turns=2000/floor-after", last.Request)
	b.Run("turns=2000/paired-after", func(b *testing.B) { benchPaired(b, p, next, last.Request) })

	// The compacted session goes on: 220 more turns, each response's usage grown by what was
	// written since the one before.
	more := testkit.Generate(220, testkit.Options{Seed: 2, Start: time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC),
		Continue: &testkit.Continuation{Parent: res.Leaf, First: len(compacted) + 1, Tokens: res.Report.Compaction.PostTokens}})
	grown := append(append(make([]Record, 0, len(compacted)+len(more)+1), compacted...), more...)
	leaf := grown[len(grown)-1].UUID
	nextGrown := func(i int) Input {
		return Input{Records: append(grown, testkit.Prompt("grown", i, leaf))}
	}
	b.Run("turns=2000/steady-grown", func(b *testing.B) { last = benchSteadyTurn(b, p, nextGrown) })
	if last.Report.Compaction != nil || len(last.Request.Messages) < 400 {
		// The grown benchmarks ran without steady-grown: build the turn they encode.
		r, err := p.Prepare(b.Context(), nextGrown(1))
		if err != nil {
			b.Fatal(err)
		}
		if r.Report.Compaction != nil {
			b.Fatal("the grown session compacted again")
		}
		last = r
	}
	benchEncodeFloor(b, "turns=2000/encode-grown", "turns=2000/floor-grown", last.Request)
	b.Run("turns=2000/paired-grown", func(b *testing.B) { benchPaired(b, p, nextGrown, last.Request) })
}

// benchPaired measures, in each iteration, a steady turn on p (steadyTurn, as
// benchSteadyTurn measures it), then Request.MarshalJSON of r with no
// memo, then the typed floor of r, and reports the ratios of their summed times as
// steady/encode and steady/floor. The three alternate within one loop, so a change of the
// machine's load during the run weighs on all alike: the ratios are the figures to read, where
// separate benchmarks can run under different loads.
func benchPaired(b *testing.B, p *Pipeline, next func(int) Input, r provider.Request) {
	bare, body := memoless(b, r)
	fr := floorOf(b, r, body)
	if _, err := p.Prepare(b.Context(), next(0)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var steady, encode, floor time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		steadyTurn(b, p, next(i))
		t1 := time.Now()
		if _, err := bare.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		fr.encode(b)
		steady, encode, floor = steady+t1.Sub(t0), encode+t2.Sub(t1), floor+time.Since(t2)
	}
	if i > 0 && encode > 0 && floor > 0 {
		b.ReportMetric(float64(steady.Nanoseconds())/float64(i), "steady-ns/op")
		b.ReportMetric(float64(encode.Nanoseconds())/float64(i), "encode-ns/op")
		b.ReportMetric(float64(floor.Nanoseconds())/float64(i), "floor-ns/op")
		b.ReportMetric(float64(steady)/float64(encode), "steady/encode")
		b.ReportMetric(float64(steady)/float64(floor), "steady/floor")
	}
}

// benchSteadyTurn measures a steady turn on p: Prepare of next(i), warm from next(0), and
// MarshalJSON of its request, reporting the tokens and bytes of the body. It fails when a turn
// compacts, and returns the last turn's result.
func benchSteadyTurn(b *testing.B, p *Pipeline, next func(int) Input) Result {
	if _, err := p.Prepare(b.Context(), next(0)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var last Result
	i := 0
	for b.Loop() {
		i++
		r, body := steadyTurn(b, p, next(i))
		last = r
		b.ReportMetric(float64(r.Report.InputTokens), "tokens/op")
		b.ReportMetric(float64(len(body)), "body-bytes/op")
	}
	return last
}

// steadyTurn is one steady turn on p: Prepare of in and MarshalJSON of its request. It fails
// when the turn compacts, and returns the result and the body.
func steadyTurn(b *testing.B, p *Pipeline, in Input) (Result, []byte) {
	r, err := p.Prepare(b.Context(), in)
	if err != nil {
		b.Fatal(err)
	}
	body, err := r.Request.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	if r.Report.Compaction != nil {
		b.Fatal("a steady turn compacted again")
	}
	return r, body
}

// benchEncodeFloor runs, under the two names given, Request.MarshalJSON of r's request with
// no memo (as a caller would assemble it) and the typed floor that gives the same bytes.
func benchEncodeFloor(b *testing.B, encodeName, floorName string, r provider.Request) {
	bare, body := memoless(b, r)
	b.Run(encodeName, func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := bare.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	fr := floorOf(b, r, body)
	b.Run(floorName, func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			fr.encode(b)
		}
	})
}
