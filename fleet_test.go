package agentctx_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// fleet is N sessions and the Pipelines that serve them: one shared, or one each.
type fleet struct {
	now      time.Time
	sessions []*fleetSession
	stats    int64 // the bytes the Pipelines' MemoStats report after setting up
}

type fleetSession struct {
	p    *agentctx.Pipeline
	recs []transcript.Record
	leaf string
	last time.Time
	n    int
}

// liveHeap returns the live heap after a collection.
func liveHeap() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}

// newFleet sets up n sessions of the given turns on one shared Pipeline or one each, its
// memos bounded at memoBytes (0: the default).
func newFleet(tb testing.TB, n, turns int, shared bool, memoBytes int64) *fleet {
	f := &fleet{}
	for i := range n {
		recs := testkit.Generate(turns, testkit.Options{Seed: uint64(i + 1)})
		for k := range recs { // no provider usage: the pressure is the counted size
			if m := recs[k].Message; m != nil && m.Usage != nil {
				mm := *m
				mm.Usage = nil
				recs[k].Message = &mm
			}
		}
		last, err := time.Parse(time.RFC3339Nano, recs[len(recs)-1].Timestamp)
		if err != nil {
			tb.Fatal(err)
		}
		f.sessions = append(f.sessions, &fleetSession{recs: slices.Clip(recs), last: last, n: len(recs)})
	}
	cfg := agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 200_000, Tokens: agentctx.EstimateCounter{},
		Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}}, MemoBytes: memoBytes,
		Now: func() time.Time { return f.now }}
	var one *agentctx.Pipeline
	for _, s := range f.sessions {
		s.p = one
		if s.p == nil {
			p, err := agentctx.New(cfg)
			if err != nil {
				tb.Fatal(err)
			}
			s.p = p
			if shared {
				one = p
			}
		}
	}
	for _, s := range f.sessions {
		f.now = s.last.Add(5 * time.Second)
		res, err := s.p.Prepare(tb.Context(), agentctx.Input{Records: s.recs})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := res.Request.MarshalJSON(); err != nil {
			tb.Fatal(err)
		}
		s.recs, s.leaf = append(s.recs, res.Append...), res.Leaf
	}
	for range 2 {
		for i := range f.sessions {
			f.turn(tb, i)
		}
	}
	for i, s := range f.sessions {
		if shared && i > 0 {
			break
		}
		f.stats += s.p.MemoStats().Bytes
	}
	return f
}

// drop drops the Pipelines and returns the live heap it freed: the library's state, the
// records kept.
func (f *fleet) drop() float64 {
	with := liveHeap()
	for _, s := range f.sessions {
		s.p = nil
	}
	return with - liveHeap()
}

// turn adds one exchange to session i (an assistant's text and Bash call, and its result) and
// prepares and encodes the next request.
func (f *fleet) turn(tb testing.TB, i int) {
	s := f.sessions[i]
	add := func(r transcript.Record) {
		s.n++
		r.UUID = fmt.Sprintf("%08x-1111-4000-8000-%012x", i, s.n)
		r.ParentUUID, r.SessionID = s.leaf, s.recs[0].SessionID
		s.last = s.last.Add(10 * time.Second)
		r.Timestamp = s.last.Format("2006-01-02T15:04:05.000Z")
		s.recs = append(s.recs, r)
		s.leaf = r.UUID
	}
	id := fmt.Sprintf("toolu_fleet_%d_%d", i, s.n)
	in, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: fmt.Sprintf("msg_fleet_%d_%d", i, s.n), Type: "message",
		Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("session %d: running the tests again", i)}, &transcript.ToolUse{ID: id, Name: "Bash", Input: in}}}})
	add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser,
		Content: []transcript.Block{&transcript.ToolResult{ToolUseID: id, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("ok  \tpkg/%d\t0.%03ds\nPASS", i, s.n%1000)}}}}}})
	f.now = s.last.Add(5 * time.Second)
	res, err := s.p.Prepare(tb.Context(), agentctx.Input{Records: s.recs})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := res.Request.MarshalJSON(); err != nil {
		tb.Fatal(err)
	}
	s.recs, s.leaf = append(s.recs, res.Append...), res.Leaf
}
