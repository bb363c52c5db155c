// Package testkit generates deterministic Claude Code-shaped transcripts for benchmarks and
// fuzzing.
package testkit

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentctx/agentctx/transcript"
)

// Options shapes a generated transcript. The zero value gives a typical coding session.
type Options struct {
	// Seed selects the transcript; the same seed gives the same records.
	Seed uint64
	// Start is the first record's time. Zero: 2026-01-02T03:04:05Z.
	Start time.Time
	// MaxParallel is the most tool calls in one response. Zero: 3.
	MaxParallel int
	// Continue makes the transcript go on from another one: its first record hangs off
	// Continue.Parent instead of starting a conversation. Nil: a new conversation.
	Continue *Continuation
}

// Continuation says where a generated transcript picks up another, such as a compacted
// session that keeps going.
type Continuation struct {
	// Parent is the uuid of the record the first generated record hangs off.
	Parent string
	// First numbers the generated records, messages and tool calls from First on, so that
	// none of their ids repeats one of the transcript continued (give its record count).
	First int
	// Tokens is the input figure the request before the first generated record stood at (a
	// compaction's PostTokens, say). Each response reports it grown by what was written since,
	// at about four bytes a token, as a provider's usage grows with the request, instead of
	// the new conversation's faster growth.
	Tokens int
}

// Generate returns a transcript of the given number of turns. A turn is one API round: a
// user message (a prompt, or the results of the previous response's tool calls) and the
// assistant's response (text, and usually parallel tool calls, written one record per block
// sharing message.id, as Claude Code writes them; results are parented on their own tool_use
// records). Tool results are sized like real ones: mostly a few hundred bytes of code or logs,
// one in forty between 4 and 20 KB. Assistant records carry usage, so totals can be anchored.
// The last response has no tool calls, so the transcript ends between turns.
func Generate(turns int, o Options) []transcript.Record {
	g := &gen{rng: rand.New(rand.NewPCG(o.Seed, 0x5eed)), t: o.Start, maxPar: o.MaxParallel}
	if g.t.IsZero() {
		g.t = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	if g.maxPar == 0 {
		g.maxPar = 3
	}
	if c := o.Continue; c != nil {
		g.last, g.n, g.msgN, g.tokens, g.measured = c.Parent, c.First, c.First, c.Tokens, true
	}
	var pending []string // uuids of the records holding the last response's tool calls
	for i := range turns {
		if len(pending) == 0 {
			u := g.next(transcript.TypeUser, g.last)
			u.Message = &transcript.Message{Role: transcript.RoleUser, StringContent: true,
				Content: []transcript.Block{&transcript.Text{Text: g.prose(5 + g.rng.IntN(35))}}}
		} else {
			g.results(pending)
		}
		calls := 1 + g.rng.IntN(g.maxPar)
		if i == turns-1 || g.rng.IntN(4) == 0 {
			calls = 0
		}
		pending = g.response(calls)
	}
	return g.recs
}

type gen struct {
	rng    *rand.Rand
	t      time.Time
	recs   []transcript.Record
	n      int
	last   string
	msgN   int
	tokens int
	maxPar int
	// measured: responses report tokens grown by the bytes written since the previous one
	// (see Continuation.Tokens); written counts them.
	measured bool
	written  int
}

var tools = []string{"Read", "Bash", "Grep", "Glob", "Edit", "Write", "WebFetch", "TodoWrite"}

func (g *gen) next(typ transcript.RecordType, parent string) *transcript.Record {
	g.n++
	g.t = g.t.Add(time.Duration(5+g.rng.IntN(25)) * time.Second)
	g.recs = append(g.recs, transcript.Record{
		Type:       typ,
		UUID:       fmt.Sprintf("%08x-0000-4000-8000-%012x", g.rng.Uint32(), g.n),
		ParentUUID: parent,
		SessionID:  "9b1f4a52-3c0e-4d7a-8e21-5f6b7c8d9e0a",
		Timestamp:  g.t.Format("2006-01-02T15:04:05.000Z"),
	})
	r := &g.recs[len(g.recs)-1]
	g.last = r.UUID
	return r
}

// grow returns by how much the next response's input figure grows, and starts counting what
// is written for the one after.
func (g *gen) grow() int {
	if !g.measured {
		return 400 + g.rng.IntN(3000)
	}
	n := 0
	for i := g.written; i < len(g.recs); i++ {
		if m := g.recs[i].Message; m != nil {
			for _, b := range m.Content {
				n += blockBytes(b)
			}
		}
	}
	g.written = len(g.recs)
	return n / 4
}

// blockBytes is the length of the text a generated block holds.
func blockBytes(b transcript.Block) int {
	switch b := b.(type) {
	case *transcript.Text:
		return len(b.Text)
	case *transcript.ToolUse:
		return len(b.Name) + len(b.Input)
	case *transcript.ToolResult:
		n := 0
		for _, c := range b.Content {
			n += blockBytes(c)
		}
		return n
	}
	return 0
}

// response writes one response with text and calls parallel tool calls, and returns the uuids
// of the records holding the tool calls.
func (g *gen) response(calls int) []string {
	blocks := []transcript.Block{&transcript.Text{Text: g.prose(5 + g.rng.IntN(40))}}
	for i := range calls {
		name := tools[g.rng.IntN(len(tools))]
		input, _ := json.Marshal(map[string]string{"file_path": fmt.Sprintf("/src/pkg%d/file%d.go", g.rng.IntN(20), i), "pattern": g.word()})
		blocks = append(blocks, &transcript.ToolUse{ID: fmt.Sprintf("toolu_%06d_%d", g.n, i), Name: name, Input: input})
	}
	return g.assistant(blocks)[1:]
}

// results writes one result record per tool call, parented on the record holding the call.
func (g *gen) results(holders []string) {
	for _, h := range holders {
		var tu *transcript.ToolUse
		for i := len(g.recs) - 1; i >= 0; i-- {
			if g.recs[i].UUID == h {
				tu = g.recs[i].Message.Content[0].(*transcript.ToolUse)
				break
			}
		}
		r := g.next(transcript.TypeUser, h)
		r.SourceToolAssistantUUID = h
		r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{
			&transcript.ToolResult{ToolUseID: tu.ID, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: g.output()}}},
		}}
	}
}

// assistant writes one record per block, all sharing a message id, and returns their uuids.
func (g *gen) assistant(blocks []transcript.Block) []string {
	g.msgN++
	id := fmt.Sprintf("msg_%08d", g.msgN)
	g.tokens += g.grow()
	var uuids []string
	for i, b := range blocks {
		r := g.next(transcript.TypeAssistant, g.last)
		r.Message = &transcript.Message{ID: id, Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: []transcript.Block{b},
			Usage:   &transcript.Usage{InputTokens: 3, CacheReadInputTokens: g.tokens, OutputTokens: 20 * (i + 1)}}
		uuids = append(uuids, r.UUID)
	}
	return uuids
}

var words = strings.Fields(`the a function returns error value context request token cache message
tool result file line test build package import struct field method interface pointer slice map
channel goroutine mutex deadline cancel retry budget snip compact summary window prompt model`)

func (g *gen) word() string { return words[g.rng.IntN(len(words))] }

func (g *gen) prose(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.word())
	}
	b.WriteByte('.')
	return b.String()
}

// output is a tool result: source code or log lines, 80 B to 700 B, with a 1-in-40 chance of
// 4–20 KB.
func (g *gen) output() string {
	size := 80 + g.rng.IntN(620)
	if g.rng.IntN(40) == 0 {
		size = 4000 + g.rng.IntN(16000)
	}
	var b strings.Builder
	for line := 1; b.Len() < size; line++ {
		if g.rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "%5d\tfunc (s *%s) %s(ctx context.Context) error { return s.%s }\n", line, g.word(), g.word(), g.word())
		} else {
			fmt.Fprintf(&b, "2026-01-02T03:04:%02d.%03dZ INFO %s %s=%d\n", line%60, g.rng.IntN(1000), g.prose(6), g.word(), g.rng.IntN(100000))
		}
	}
	return b.String()
}

// Prompt is the i-th new prompt of a steady-turn benchmark or test: a user record with uuid
// prefix-i whose parent is parent, holding one short typed question.
func Prompt(prefix string, i int, parent string) transcript.Record {
	return transcript.Record{Type: transcript.TypeUser, UUID: fmt.Sprintf("%s-%d", prefix, i), ParentUUID: parent,
		Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: fmt.Sprintf("next question number %d: what does the test print?", i)}}}}
}
