package agentctx_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// BenchmarkSteady measures a steady turn at 10, 200, 2,000 and 5,000 turns of generated
// history (default tiktoken counter), side by side with what encoding its request costs:
//
//   - turn: Prepare and Request.MarshalJSON of one new exchange, the Pipeline warm (what a
//     live session pays per turn for the request body);
//   - marshal: Request.MarshalJSON of the same request alone, with no memo (a Request the
//     caller assembled itself);
//   - floor: encoding/json on plain structs that give exactly the same bytes (checked before
//     timing), the cost of any typed encoder of this request.
//
// The ratios turn ÷ marshal and turn ÷ floor are the figures of issue 12.
func BenchmarkSteady(b *testing.B) {
	tc := agentctx.DefaultTokenCounter()
	for _, turns := range []int{10, 200, 2000, 5000} {
		// The session is set up once, by the first of its benchmarks that runs.
		var s *steadySession
		setup := func(b *testing.B) *steadySession {
			if s == nil {
				s = newSteadySession(b, tc, turns)
			}
			return s
		}
		b.Run(fmt.Sprintf("turns=%d/turn", turns), func(b *testing.B) {
			s := setup(b)
			b.ReportAllocs()
			b.SetBytes(int64(len(s.body)))
			i := 0
			for b.Loop() {
				i++
				res, err := s.p.Prepare(b.Context(), s.next(i))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := res.Request.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("turns=%d/marshal", turns), func(b *testing.B) {
			s := setup(b)
			b.ReportAllocs()
			b.SetBytes(int64(len(s.body)))
			for b.Loop() {
				if _, err := s.bare.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("turns=%d/floor", turns), func(b *testing.B) {
			s := setup(b)
			b.ReportAllocs()
			b.SetBytes(int64(len(s.body)))
			for b.Loop() {
				s.floor.encode(b)
			}
		})
	}
}

// steadySession is a generated session of BenchmarkSteady with its Pipeline warm.
type steadySession struct {
	p     *agentctx.Pipeline
	recs  []transcript.Record
	input []transcript.Record // recs and room for one new record
	body  []byte              // the request body of a turn
	bare  provider.Request    // that request, as a caller would assemble it
	floor *floorRequest       // that request as plain structs
}

func newSteadySession(b *testing.B, tc agentctx.TokenCounter, turns int) *steadySession {
	s := &steadySession{recs: testkit.Generate(turns, testkit.Options{Seed: 1})}
	p, err := agentctx.New(agentctx.Config{
		Model: "claude-sonnet-4-5",
		// A window the 5,000-turn history never reaches: this benchmark measures a growing
		// session; BenchmarkCompact measures the compacted one.
		ContextWindow: 40_000_000,
		Tokens:        tc,
		Budget:        agentctx.BudgetConfig{Store: &agentctx.MapStore{}},
		Now:           func() time.Time { return benchNow },
	})
	if err != nil {
		b.Fatal(err)
	}
	s.p = p
	res, err := p.Prepare(b.Context(), s.next(0))
	if err != nil {
		b.Fatal(err)
	}
	if s.body, err = res.Request.MarshalJSON(); err != nil {
		b.Fatal(err)
	}
	r := res.Request
	var bare []byte
	s.bare, bare = memoless(b, r)
	if !bytes.Equal(bare, s.body) {
		b.Fatal("the request encodes differently without the memo")
	}
	s.floor = floorOf(b, r, s.body)
	return s
}

// next is the session's input for turn i: the history and one new prompt, in a slice the
// session reuses (Prepare does not retain it), as a caller appends to its own.
func (s *steadySession) next(i int) agentctx.Input {
	if s.input == nil {
		s.input = append(make([]transcript.Record, 0, len(s.recs)+1), s.recs...)
	}
	return agentctx.Input{Records: append(s.input[:len(s.recs)], testkit.Prompt("bench", i, s.recs[len(s.recs)-1].UUID))}
}

// floorRequest and its parts are plain structs that encoding/json encodes to a request's
// bytes: one struct for every block kind the generated sessions hold, its fields in an order
// each kind's keys follow, zero fields omitted.
type floorRequest struct {
	Model      string               `json:"model"`
	MaxTokens  int                  `json:"max_tokens"`
	System     []floorBlock         `json:"system,omitempty"`
	Messages   []floorMessage       `json:"messages"`
	Tools      []json.RawMessage    `json:"tools,omitempty"`
	ToolChoice *provider.ToolChoice `json:"tool_choice,omitempty"`
	Thinking   *provider.Thinking   `json:"thinking,omitempty"`
}

type floorMessage struct {
	Role    string       `json:"role"`
	Content []floorBlock `json:"content"`
}

type floorBlock struct {
	Type         string                   `json:"type"`
	Text         string                   `json:"text,omitempty"`
	ID           string                   `json:"id,omitempty"`
	Name         string                   `json:"name,omitempty"`
	Input        json.RawMessage          `json:"input,omitempty"`
	ToolUseID    string                   `json:"tool_use_id,omitempty"`
	Content      any                      `json:"content,omitempty"` // a string or []floorBlock
	IsError      bool                     `json:"is_error,omitempty"`
	Thinking     string                   `json:"thinking,omitempty"`
	Signature    string                   `json:"signature,omitempty"`
	CacheControl *transcript.CacheControl `json:"cache_control,omitempty"`
}

func (f *floorRequest) encode(b *testing.B) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		b.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// memoless returns r as a caller would assemble it, without the Pipeline's encode memo, and
// its bytes.
func memoless(b *testing.B, r provider.Request) (provider.Request, []byte) {
	bare := provider.Request{Model: r.Model, MaxTokens: r.MaxTokens, System: r.System, Messages: r.Messages,
		Tools: r.Tools, ToolChoice: r.ToolChoice, Thinking: r.Thinking, Betas: r.Betas}
	body, err := bare.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return bare, body
}

// floorOf returns the typed floor of r, failing unless it gives body, r's bytes.
func floorOf(b *testing.B, r provider.Request, body []byte) *floorRequest {
	fr := toFloor(b, r)
	if got := fr.encode(b); !bytes.Equal(got, body) {
		b.Fatalf("the floor's bytes differ from the request's (%d and %d bytes)", len(got), len(body))
	}
	return fr
}

func toFloor(b *testing.B, r provider.Request) *floorRequest {
	f := &floorRequest{Model: r.Model, MaxTokens: r.MaxTokens, ToolChoice: r.ToolChoice, Thinking: r.Thinking}
	for _, t := range r.System {
		f.System = append(f.System, floorBlockOf(b, t))
	}
	for _, m := range r.Messages {
		fm := floorMessage{Role: string(m.Role)}
		for _, bl := range m.Content {
			fm.Content = append(fm.Content, floorBlockOf(b, bl))
		}
		f.Messages = append(f.Messages, fm)
	}
	for _, t := range r.Tools {
		if t.CacheControl != nil {
			b.Fatal("floor: a tool with a cache marker")
		}
		f.Tools = append(f.Tools, t.Definition)
	}
	return f
}

func floorBlockOf(b *testing.B, bl transcript.Block) floorBlock {
	switch bl := bl.(type) {
	case *transcript.Text:
		return floorBlock{Type: "text", Text: bl.Text, CacheControl: bl.CacheControl}
	case *transcript.ToolUse:
		return floorBlock{Type: "tool_use", ID: bl.ID, Name: bl.Name, Input: bl.Input, CacheControl: bl.CacheControl}
	case *transcript.Thinking:
		return floorBlock{Type: "thinking", Thinking: bl.Thinking, Signature: bl.Signature}
	case *transcript.ToolResult:
		fb := floorBlock{Type: "tool_result", ToolUseID: bl.ToolUseID, IsError: bl.IsError, CacheControl: bl.CacheControl}
		if t, ok := bl.Content[0].(*transcript.Text); ok && bl.StringContent && len(bl.Content) == 1 {
			fb.Content = t.Text
		} else {
			var cs []floorBlock
			for _, c := range bl.Content {
				cs = append(cs, floorBlockOf(b, c))
			}
			fb.Content = cs
		}
		return fb
	}
	b.Fatalf("floor: no plain struct for a %s block", bl.Kind())
	return floorBlock{}
}
