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
	// libBytes is what the live heap grew by from before the Pipelines were made to after the
	// fleet was set up: the library's state (the records are the same slices throughout).
	libBytes float64
	stats    int64 // what the Pipelines' MemoStats estimate after setting up
}

// fleetSession is a session of the fleet: its records (base of them as set up, with room for
// one exchange more) and the Pipeline that serves it.
type fleetSession struct {
	p     *agentctx.Pipeline
	recs  []transcript.Record
	base  int
	leaf  string
	last  time.Time
	turns int
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
	base := 0.0
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
		f.sessions = append(f.sessions, &fleetSession{recs: slices.Grow(recs, 8), last: last})
	}
	base = liveHeap()
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
	for _, s := range f.sessions {
		if cap(s.recs)-len(s.recs) < 2 {
			s.recs = slices.Grow(s.recs, 2)
		}
		s.base = len(s.recs)
	}
	for range 2 {
		for i := range f.sessions {
			f.turn(tb, i, true)
		}
	}
	f.libBytes = liveHeap() - base
	f.stats = f.memoBytes()
	return f
}

// memoBytes returns what the fleet's Pipelines' MemoStats estimate they hold.
func (f *fleet) memoBytes() int64 {
	var n int64
	for i, s := range f.sessions {
		if i > 0 && s.p == f.sessions[0].p {
			break
		}
		n += s.p.MemoStats().Bytes
	}
	return n
}

// turn prepares and encodes session i's next request: its records and one new exchange (an
// assistant's text and Bash call, and its result). With rewind the exchange is written over
// the previous turn's, after the records as set up, as a host that rewinds does (see
// [agentctx.Input.Records]), so that every turn of a session costs the same however many
// the benchmark runs; else it is appended, and the records kept.
func (f *fleet) turn(tb testing.TB, i int, rewind bool) {
	s := f.sessions[i]
	s.turns++
	recs := s.recs
	if rewind {
		recs = s.recs[: s.base : s.base+2]
	}
	leaf, last := s.leaf, s.last
	add := func(r transcript.Record) {
		r.UUID = fmt.Sprintf("%08x-1111-4000-8000-%012x", i, s.turns*2+len(recs)%2)
		r.ParentUUID, r.SessionID = leaf, recs[0].SessionID
		last = last.Add(10 * time.Second)
		r.Timestamp = last.Format("2006-01-02T15:04:05.000Z")
		recs = append(recs, r)
		leaf = r.UUID
	}
	id := fmt.Sprintf("toolu_fleet_%d_%d", i, s.turns)
	in, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: fmt.Sprintf("msg_fleet_%d_%d", i, s.turns), Type: "message",
		Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("session %d: running the tests again", i)}, &transcript.ToolUse{ID: id, Name: "Bash", Input: in}}}})
	add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser,
		Content: []transcript.Block{&transcript.ToolResult{ToolUseID: id, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("ok  \tpkg/%d\t0.%03ds\nPASS", i, s.turns%1000)}}}}}})
	f.now = last.Add(5 * time.Second)
	res, err := s.p.Prepare(tb.Context(), agentctx.Input{Records: recs})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := res.Request.MarshalJSON(); err != nil {
		tb.Fatal(err)
	}
	if !rewind {
		s.recs, s.leaf, s.last = append(recs, res.Append...), res.Leaf, last
	}
}
