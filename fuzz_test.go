package agentctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/require"
)

// FuzzPrepareInvariants checks Prepare's invariants on structured transcripts. The fuzz input
// is a program (see fuzzProgram): two header bytes choose the configuration, then every byte
// is one operation on a [tk] transcript builder (low nibble: the operation, high nibble: its
// argument; some operations draw one more byte). Raw-JSON fuzzing of the decoder is
// FuzzReadTranscript's job; this target reaches the pipeline with records that decode.
//
// Invariants:
//  1. Prepare does not panic and returns nil or ErrNoMessages, the latter only when the
//     active chain holds nothing to send (see chainHasSendable).
//  2. The request passes Validate with the provider's published limits (and the window check
//     when the input fits the window).
//  3. Prepare twice gives the same request bytes and the same records to append.
//  4. Prepare after appending Result.Append (through JSONL) gives the same request bytes and
//     nothing more to append.
//  5. Prepare does not modify the input records.
//  6. Prepare conserves every block of the active chain (see conservation).
func FuzzPrepareInvariants(f *testing.F) {
	const (
		opUser = iota
		opText
		opTools
		opResults
		opThinking
		opInterrupt
		opImage
		opUnknown
		opBadID
		opBranch
		opSnip
		opCollapse
		opCompact
		opAPIError
		opNoise
		opServerTool
	)
	op := func(code, arg int) byte { return byte(code | arg<<4) }
	res := func(mode, variant int) []byte { return []byte{op(opResults, mode), byte(variant)} }
	prog := func(h1, h2 byte, ops ...any) []byte {
		out := []byte{h1, h2}
		for _, o := range ops {
			switch o := o.(type) {
			case byte:
				out = append(out, o)
			case int:
				out = append(out, byte(o))
			case []byte:
				out = append(out, o...)
			}
		}
		return out
	}
	seeds := [][]byte{
		// Plain conversation.
		prog(0x00, 0x00, op(opUser, 1), op(opText, 1), op(opUser, 0)),
		// Parallel tool calls answered in reverse, then missing, duplicated and orphaned
		// results, then all pending results in one record; tight window.
		prog(0x01, 0x00, op(opUser, 0), op(opTools, 2), res(1, 0), op(opText, 0), op(opUser, 0),
			op(opTools, 6), res(2, 3), res(3, 1), res(4, 7), op(opText, 0), op(opUser, 0),
			op(opTools, 10), res(5, 2), op(opUser, 3)),
		// Thinking (valid, redacted, placeholder signature, trailing, combined) with thinking on.
		prog(0x02, 0x00, op(opUser, 0), op(opThinking, 0), op(opUser, 0), op(opThinking, 1), res(0, 0),
			op(opThinking, 2), op(opUser, 0), op(opThinking, 3), op(opThinking, 4), op(opUser, 0),
			op(opThinking, 5), op(opThinking, 1)),
		// The same with thinking off, and with a thinking budget.
		prog(0x00, 0x00, op(opUser, 0), op(opThinking, 0), op(opUser, 0), op(opThinking, 1), res(0, 0),
			op(opThinking, 2), op(opUser, 0), op(opThinking, 3), op(opThinking, 4), op(opUser, 0)),
		prog(0x06, 0x00, op(opUser, 2), op(opThinking, 1), res(0, 1), op(opThinking, 0), op(opUser, 0),
			op(opThinking, 1)),
		// Interrupts, images, unknown blocks.
		prog(0x00, 0x00, op(opUser, 0), op(opTools, 0), op(opInterrupt, 1), op(opUser, 0), op(opImage, 0),
			op(opUnknown, 0), op(opImage, 2), op(opUnknown, 1), op(opImage, 1), op(opTools, 0), op(opImage, 3),
			op(opUnknown, 2), op(opUnknown, 3), op(opInterrupt, 0)),
		// Tool ids and names the API rejects.
		prog(0x10, 0x00, op(opUser, 0), op(opBadID, 0), res(0, 0), op(opBadID, 5), op(opBadID, 2), res(5, 3),
			op(opBadID, 3), res(1, 0), op(opText, 0)),
		// Branching: a fork from an early record, and from a tool call.
		prog(0x00, 0x00, op(opUser, 0), op(opText, 0), op(opUser, 1), op(opText, 1), op(opBranch, 0), 1,
			op(opText, 0), op(opUser, 0), op(opTools, 1), res(0, 0), op(opBranch, 1), 9, op(opUser, 0)),
		// Snips over tool calls and messages.
		prog(0x00, 0x00, op(opUser, 0), op(opTools, 1), res(0, 0), op(opText, 0), op(opUser, 1),
			op(opSnip, 0), 2, op(opSnip, 1), 0x35, op(opText, 0), op(opUser, 0), op(opSnip, 0), 8),
		// Collapse commits, one over a tool call.
		prog(0x00, 0x00, op(opUser, 1), op(opText, 1), op(opUser, 0), op(opTools, 0), res(0, 0), op(opText, 0),
			op(opCollapse, 0), 0x31, op(opUser, 0), op(opCollapse, 1), 0x20, op(opUser, 0), op(opCollapse, 2), 0x55),
		// Compact boundary and summary, API errors, records the request does not show.
		prog(0x00, 0x00, op(opUser, 0), op(opTools, 0), op(opCompact, 0), res(0, 0), op(opText, 0), op(opUser, 0),
			op(opAPIError, 0), op(opNoise, 0), op(opNoise, 1), op(opNoise, 2), op(opNoise, 3), op(opUser, 0),
			op(opAPIError, 1)),
		// Microcompact after a long idle gap, large results, small budget caps, tags.
		prog(0x60, 0x09, op(opUser, 0), op(opTools, 2), res(0, 1), op(opText, 0), op(opUser, 0),
			op(opTools, 2), res(1, 6), op(opText, 0), op(opUser, 0)),
		// Cached microcompact with a low trigger, SkipCacheWrite, system and tools markers, 1h.
		prog(0x98, 0x13, op(opUser, 0), op(opTools, 2), res(0, 1), op(opText, 0), op(opUser, 0),
			op(opTools, 2), res(0, 1), op(opText, 0), op(opUser, 0)),
		prog(0x88, 0x03, op(opUser, 0), op(opTools, 2), res(0, 1), op(opText, 0), op(opUser, 0),
			op(opTools, 2), res(0, 1), op(opText, 0), op(opUser, 0), op(opTools, 2), res(0, 1)),
		// Cached microcompact with the cache disabled, large output cap.
		prog(0x08, 0x86, op(opUser, 2), op(opTools, 2), res(0, 1), op(opText, 2), op(opUser, 2),
			op(opTools, 2), res(0, 1), op(opText, 2), op(opUser, 0)),
		// Server tools, split and unpaired.
		prog(0x00, 0x00, op(opUser, 0), op(opServerTool, 0), op(opServerTool, 1), op(opServerTool, 2), op(opUser, 0)),
		// Tool references inside results, then a snip that reaches them.
		prog(0x00, 0x00, op(opUser, 0), op(opTools, 0), res(0, 5), op(opText, 0), op(opUser, 0), op(opSnip, 0), 1),
		// Nothing to send.
		{},
		prog(0x00, 0x00, op(opNoise, 0), op(opAPIError, 0)),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		prog := runFuzzProgram(data)
		k := prog.k
		dump := func() string {
			var b strings.Builder
			fmt.Fprintf(&b, "\nprogram % x\nconfig: %s\nops:\n", data, prog.cfgDesc)
			for i, s := range prog.trace {
				fmt.Fprintf(&b, "  %2d %s\n", i, s)
			}
			b.WriteString("transcript:\n")
			b.WriteString(encodeRecords(t, k.recs))
			return b.String()
		}
		p, err := New(prog.cfg)
		if err != nil {
			if th := prog.cfg.Thinking; th != nil && th.Type == "enabled" && prog.cfg.MaxOutputTokens > 0 && th.BudgetTokens >= prog.cfg.MaxOutputTokens {
				return // New rejects a thinking budget the maximum output cannot hold (4.8)
			}
			t.Fatalf("New: %v%s", err, dump())
		}
		before := encodeRecords(t, k.recs)
		in := prog.input(k.recs)
		ctx := t.Context()

		prepare := func(what string, in Input) (res Result, body string) {
			t.Helper()
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("invariant 1: %s: Prepare panicked: %v\n%s%s", what, r, debug.Stack(), dump())
				}
			}()
			res, err := p.Prepare(ctx, in)
			if ptl, ok := errors.AsType[*provider.PromptTooLongError](err); ok {
				// The request cannot be sent: the figures must say so, and the result is
				// still deterministic and replayable.
				if pr := res.Report.Pressure; pr.Level != LevelBlocking && res.Request.MaxTokens >= p.cfg.Pressure.minOutput(p.window, p.maxOutput) {
					t.Fatalf("invariant 1: %s: %v, but the pressure %d is %s and max_tokens %d\nreport:\n%s%s", what, ptl, pr.Tokens, pr.Level, res.Request.MaxTokens, res.Report.String(), dump())
				}
				err = nil
			}
			if err != nil {
				if !errors.Is(err, ErrNoMessages) {
					t.Fatalf("invariant 1: %s: Prepare: %v%s", what, err, dump())
				}
				chain, cerr := transcript.BuildChain(in.Records, transcript.ChainOptions{Leaf: in.Leaf})
				if cerr != nil || chainHasSendable(in.Records, chain) {
					t.Fatalf("invariant 1: %s: ErrNoMessages, but the chain's %d messages hold content to send (chain error %v)\nreport:\n%s%s",
						what, len(chain.Messages()), cerr, res.Report.String(), dump())
				}
				return res, ""
			}
			enc, err := res.Request.MarshalJSON()
			if err != nil {
				t.Fatalf("%s: request does not encode: %v%s", what, err, dump())
			}
			return res, string(enc)
		}

		res, body := prepare("first Prepare", in)

		// 5. The input is not modified.
		if after := encodeRecords(t, k.recs); after != before {
			t.Fatalf("invariant 5: Prepare modified its input records\nafter:\n%s%s", after, dump())
		}

		// 6. No block is lost without a reason.
		if vs := conservation(in, res); len(vs) > 0 {
			t.Fatalf("invariant 6: blocks lost:\n%s\nrequest:\n%s\nreport:\n%s%s",
				strings.Join(vs, "\n"), indentJSON(body), res.Report.String(), dump())
		}

		// 2. The request keeps the provider contract.
		if body != "" {
			opts := provider.ValidateOptions{}
			if res.Report.InputTokens < p.Window() && res.Report.Pressure.Level != LevelBlocking {
				opts.ContextWindow, opts.InputTokens = p.Window(), res.Report.InputTokens
			}
			if err := provider.Validate(res.Request, opts); err != nil {
				t.Fatalf("invariant 2: request breaks the contract:\n%v\nrequest:\n%s\nreport:\n%s%s",
					err, indentJSON(body), res.Report.String(), dump())
			}
		}

		// 3. Prepare is deterministic.
		again, body2 := prepare("second Prepare", prog.input(k.recs))
		if body2 != body {
			t.Fatalf("invariant 3: Prepare twice gives different requests\nfirst:\n%s\nsecond:\n%s%s",
				indentJSON(body), indentJSON(body2), dump())
		}
		app1, app2 := encodeRecords(t, res.Append), encodeRecords(t, again.Append)
		if app1 != app2 {
			t.Fatalf("invariant 3: Prepare twice gives different records to append\nfirst:\n%s\nsecond:\n%s%s", app1, app2, dump())
		}
		if after := encodeRecords(t, k.recs); after != before {
			t.Fatalf("invariant 5: the second Prepare modified its input records\nafter:\n%s%s", after, dump())
		}

		// 4. Appending the turn's decisions replays them byte for byte.
		resumed := append(append([]transcript.Record(nil), k.recs...), roundTrip(t, res.Append)...)
		next, body3 := prepare("Prepare after appending Result.Append", prog.input(resumed))
		if body3 != body {
			t.Fatalf("invariant 4: Prepare after appending Result.Append gives a different request\nappended:\n%s\nfirst:\n%s\nresumed:\n%s\nfirst report:\n%s\nresumed report:\n%s%s",
				app1, indentJSON(body), indentJSON(body3), res.Report.String(), next.Report.String(), dump())
		}
		if len(next.Append) > 0 {
			t.Fatalf("invariant 4: Prepare after appending Result.Append makes new decisions\nappended:\n%s\nnew:\n%s%s",
				app1, encodeRecords(t, next.Append), dump())
		}

		// 7. The next turn (an answer, a prompt) sends this turn's marked prefix again, byte
		// for byte, unless a decision it records, or the thinking rule of a turn in flight,
		// explains the change. Known exceptions are left out, each a rule of one assistant
		// message that a later response merged into it (across user messages that hold
		// nothing to send) changes: a message of unsupported blocks alone sent as a
		// placeholder, and thinking at its end dropped or, with thinking on, moved to the
		// front of the merged message; and, with cache editing, a recorded deletion whose
		// cache_reference the cache stage held back because normalize left the result at or
		// after the marker (a prompt with nothing to send after it), sent once the marker moves.
		placeholder := slices.ContainsFunc(res.Report.Stage("normalize").Actions, func(a Action) bool {
			return strings.HasSuffix(a.Detail, "replaced by a text placeholder") || strings.HasSuffix(a.Detail, "cannot end with thinking") ||
				strings.HasSuffix(a.Detail, "moved to the front of a merged assistant message")
		}) || slices.ContainsFunc(res.Report.Stage("cache").Actions, func(a Action) bool {
			return strings.HasSuffix(a.Detail, "not before the cache marker")
		})
		if body != "" && res.Report.Pressure.Level != LevelBlocking && !placeholder {
			k2 := *k
			k2.recs = slices.Clone(resumed)
			if res.Leaf != "" {
				k2.last = res.Leaf
			}
			k2.assistant(&transcript.Text{Text: "noted"})
			k2.user("go on")
			nres, nbody := prepare("the next turn", prog.input(k2.recs))
			if nbody != "" && nres.Report.Pressure.Level != LevelBlocking && !slices.ContainsFunc(nres.Append, changesView) &&
				nres.Report.ThinkingUnavailable == res.Report.ThinkingUnavailable {
				if err := samePrefix(&res.Request, &nres.Request); err != nil {
					t.Fatalf("invariant 7: the next turn breaks the cached prefix: %v\nfirst:\n%s\nnext:\n%s\nnext report:\n%s%s",
						err, indentJSON(body), indentJSON(nbody), nres.Report.String(), dump())
				}
			}
		}

		// 6. A manual compaction of the same records: no panic; when it installs, the records
		// are new, the request keeps the contract, and a resume gives its bytes.
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("invariant 6: Compact panicked: %v\n%s%s", r, debug.Stack(), dump())
				}
			}()
			cres, err := p.Compact(ctx, prog.input(k.recs), CompactOptions{})
			if c := cres.Report.Compaction; err != nil && (c == nil || c.Outcome != CompactCompacted) {
				return // skipped or failed: reported, nothing installed
			}
			have := map[string]bool{}
			for _, r := range k.recs {
				have[r.UUID] = true
			}
			for _, r := range cres.Append {
				if r.UUID == "" || have[r.UUID] {
					t.Fatalf("invariant 6: Compact appends a record whose uuid %q the transcript holds\n%s%s", r.UUID, encodeRecords(t, cres.Append), dump())
				}
			}
			if cres.Report.Pressure.Level != LevelBlocking {
				if err := provider.Validate(cres.Request, provider.ValidateOptions{}); err != nil {
					t.Fatalf("invariant 6: the compacted request breaks the contract:\n%v\nreport:\n%s%s", err, cres.Report.String(), dump())
				}
			}
			resumed := append(append([]transcript.Record(nil), k.recs...), roundTrip(t, cres.Append)...)
			after, body4 := prepare("Prepare after Compact's records", prog.input(resumed))
			if cb := string(requestBytes(t, cres.Request)); body4 != cb {
				t.Fatalf("invariant 6: Prepare after appending Compact's records gives a different request\ncompact:\n%s\nresumed:\n%s\ncompact report:\n%s\nresumed report:\n%s%s",
					indentJSON(cb), indentJSON(body4), cres.Report.String(), after.Report.String(), dump())
			}
		}()
	})
}

func indentJSON(s string) string {
	if s == "" {
		return "(no request)"
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// fuzzProgram is a decoded fuzz input: a transcript, a configuration and a trace of what was
// built, for failure messages.
type fuzzProgram struct {
	data    []byte
	pos     int
	k       *tk
	cfg     Config
	cfgDesc string
	system  bool // send a system prompt and tool definitions
	skip    bool // Input.SkipCacheWrite
	trace   []string

	pending []string // tool_use ids without a result yet
	used    []string // every tool_use id issued
	toolN   int
	sigN    int
}

const fuzzMaxOps = 64

// next returns the next program byte, or 0 past the end.
func (p *fuzzProgram) next() int {
	if p.pos >= len(p.data) {
		p.pos++
		return 0
	}
	b := p.data[p.pos]
	p.pos++
	return int(b)
}

func (p *fuzzProgram) logf(format string, args ...any) {
	p.trace = append(p.trace, fmt.Sprintf("[%d] ", len(p.k.recs))+fmt.Sprintf(format, args...))
}

func (p *fuzzProgram) input(recs []transcript.Record) Input {
	in := Input{Records: recs, SkipCacheWrite: p.skip}
	if p.system {
		in.System = []*transcript.Text{{Text: "You are a fuzzing assistant."}}
		in.Tools = []provider.Tool{
			{Name: "Read", Definition: json.RawMessage(`{"name":"Read","description":"Read a file","input_schema":{"type":"object"}}`)},
			{Name: "Bash", Definition: json.RawMessage(`{"name":"Bash","description":"Run a command","input_schema":{"type":"object"}}`)},
		}
	}
	return in
}

// fuzzText returns a text of one of four sizes: short, a sentence, long (≈3,000 characters,
// over the small budget caps and a good part of the tight window), whitespace-only.
func fuzzText(prefix string, size int) string {
	switch size & 3 {
	case 0:
		return prefix
	case 1:
		return prefix + ": " + strings.Repeat("lorem ipsum dolor ", 4)
	case 2:
		var b strings.Builder
		b.WriteString(prefix + ":\n")
		for i := range 150 {
			fmt.Fprintf(&b, "line %03d of output\n", i)
		}
		return b.String()
	default:
		return " \n\t "
	}
}

// A 1×1 PNG.
const fuzzPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

func (p *fuzzProgram) signature() string {
	p.sigN++
	return fmt.Sprintf("EqQBCkYIBxgCKkBfuzzSignature%04dAAAAAAAAAAAAAAAAAAAA+/==", p.sigN)
}

func (p *fuzzProgram) newToolUse(name string) *transcript.ToolUse {
	p.toolN++
	id := fmt.Sprintf("toolu_%03d", p.toolN)
	p.pending = append(p.pending, id)
	p.used = append(p.used, id)
	return &transcript.ToolUse{ID: id, Name: name, Input: json.RawMessage(fmt.Sprintf(`{"path":"f%d"}`, p.toolN))}
}

var fuzzToolNames = []string{"Read", "Bash", "Grep", "Custom"}

// conversation returns the indices of the user and assistant records built so far.
func (p *fuzzProgram) conversation() []int {
	var out []int
	for i := range p.k.recs {
		if p.k.recs[i].IsConversation() {
			out = append(out, i)
		}
	}
	return out
}

// assistantRecord appends one assistant record holding all of blocks (not split).
func (p *fuzzProgram) assistantRecord(blocks ...transcript.Block) *transcript.Record {
	k := p.k
	k.msgN++
	r := k.next(transcript.TypeAssistant)
	r.Message = &transcript.Message{ID: fmt.Sprintf("msg_%04d", k.msgN), Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
		Content: blocks, Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}
	return k.add(r)
}

// userBlocks appends a user record with array content.
func (p *fuzzProgram) userBlocks(blocks ...transcript.Block) *transcript.Record {
	r := p.k.next(transcript.TypeUser)
	r.Message = &transcript.Message{Role: transcript.RoleUser, Content: blocks}
	return p.k.add(r)
}

// resultContent builds a tool result for id; variant picks its content.
func (p *fuzzProgram) resultContent(id string, variant int) *transcript.ToolResult {
	switch variant & 7 {
	case 0:
		return result(id, "ok "+id)
	case 1:
		return result(id, fuzzText("output of "+id, 2))
	case 2:
		return &transcript.ToolResult{ToolUseID: id, Content: nil, StringContent: true}
	case 3:
		tr := result(id, "Error: failed")
		tr.IsError = true
		return tr
	case 4:
		return &transcript.ToolResult{ToolUseID: id, Content: []transcript.Block{&transcript.Text{Text: "screenshot"},
			&transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: fuzzPNG}}}}
	case 5:
		return &transcript.ToolResult{ToolUseID: id, Content: []transcript.Block{&transcript.ToolReference{ToolName: "Deferred"}}}
	case 6:
		return result(id, fuzzText("big "+id, 2)+fuzzText("more", 2))
	default:
		return result(id, " ")
	}
}

func runFuzzProgram(data []byte) *fuzzProgram {
	p := &fuzzProgram{data: data, k: newTK()}
	h1, h2 := p.next(), p.next()
	p.configure(h1, h2)
	for n := 0; p.pos < len(p.data) && n < fuzzMaxOps; n++ {
		b := p.next()
		p.step(b&15, b>>4)
	}
	now := p.k.at(time.Second)
	if h1&0x40 != 0 {
		now = p.k.at(3 * time.Hour)
	}
	p.cfg.Now = func() time.Time { return now }
	p.cfgDesc += fmt.Sprintf(" now=%s", now.Format(time.RFC3339))
	return p
}

func (p *fuzzProgram) configure(h1, h2 int) {
	cfg := Config{Model: "claude-sonnet-4-5", ContextWindow: 200_000, Tokens: EstimateCounter{}}
	cfg.Budget.Store = &MapStore{}
	cfg.Compact.Summarizer = summarize.Extractive{} // compacts whenever the small window overflows
	var desc []string
	if h1&0x01 != 0 {
		cfg.ContextWindow = 2_000
	}
	desc = append(desc, fmt.Sprintf("window=%d", cfg.ContextWindow))
	if h1&0x08 != 0 {
		cfg.Microcompact.Cached, cfg.Microcompact.CacheEditingBeta = true, testCacheBeta
		desc = append(desc, "microcompact.cached")
	}
	if h1&0x10 != 0 {
		p.skip = true
		desc = append(desc, "SkipCacheWrite")
	}
	if h1&0x20 != 0 {
		cfg.Budget.MaxResultChars, cfg.Budget.MaxMessageChars, cfg.Budget.PreviewBytes = 1_000, 2_500, 200
		desc = append(desc, "budget=small")
	}
	if h1&0x80 != 0 {
		p.system = true
		cfg.Cache.SystemMarker, cfg.Cache.ToolsMarker = true, true
		desc = append(desc, "system+tools markers")
	}
	if h2&0x01 != 0 {
		cfg.Microcompact.KeepRecent = 1
		desc = append(desc, "keepRecent=1")
	}
	if h2&0x02 != 0 {
		cfg.Microcompact.CachedTriggerTokens = 300
		desc = append(desc, "cachedTrigger=300")
	}
	if h2&0x04 != 0 {
		cfg.Cache.Disable = true
		desc = append(desc, "cache.disable")
	}
	if h2&0x08 != 0 {
		cfg.Snip.TagMessages = true
		desc = append(desc, "snip.tag")
	}
	if h2&0x10 != 0 {
		cfg.Cache.TTL = "1h"
		desc = append(desc, "ttl=1h")
	}
	if h2&0x20 != 0 {
		cfg.Budget.Disable = true
		desc = append(desc, "budget.disable")
	}
	if h2&0x40 != 0 {
		cfg.Microcompact.Disable = true
		desc = append(desc, "microcompact.disable")
	}
	if h2&0x80 != 0 {
		cfg.MaxOutputTokens = 1_000
		desc = append(desc, "maxOutput=1000")
	}
	switch (h1 >> 1) & 3 {
	case 1, 2:
		cfg.Thinking = &provider.Thinking{Type: "adaptive"}
	case 3:
		cfg.Thinking = &provider.Thinking{Type: "enabled", BudgetTokens: 1024}
	}
	if cfg.Thinking != nil {
		desc = append(desc, fmt.Sprintf("thinking=%+v", *cfg.Thinking))
	}
	p.cfg = cfg
	p.cfgDesc = strings.Join(desc, " ")
}

func (p *fuzzProgram) step(code, arg int) {
	k := p.k
	switch code {
	case 0: // user prompt
		if arg&8 != 0 {
			// A transcript block carrying cache_control: the cache stage owns every marker.
			p.logf("user prompt size %d with cache_control", arg&3)
			p.userBlocks(&transcript.Text{Text: fuzzText("prompt", arg), CacheControl: &transcript.CacheControl{Type: "ephemeral", TTL: "1h"}})
			return
		}
		p.logf("user prompt size %d", arg&3)
		k.user(fuzzText("prompt", arg))

	case 1: // assistant text
		p.logf("assistant text size %d", arg&3)
		k.assistant(text(fuzzText("answer", arg)))

	case 2: // assistant with 1–3 tool_use blocks
		n := arg&3%3 + 1
		var blocks []transcript.Block
		if arg&4 != 0 {
			blocks = append(blocks, text("Let me look."))
		}
		for i := range n {
			blocks = append(blocks, p.newToolUse(fuzzToolNames[(arg>>3+i)&3]))
		}
		if arg&8 != 0 && n > 1 {
			p.logf("assistant %d tool_use in one record", n)
			p.assistantRecord(blocks...)
		} else {
			p.logf("assistant %d tool_use split", n)
			k.assistant(blocks...)
		}

	case 3: // tool results
		variant := p.next()
		switch arg % 6 {
		case 0, 1: // every pending result, in order or reversed, split records
			ids := append([]string(nil), p.pending...)
			if arg%6 == 1 {
				for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
					ids[i], ids[j] = ids[j], ids[i]
				}
			}
			p.logf("results %v (variant %d)", ids, variant&7)
			for i, id := range ids {
				k.results(p.resultContent(id, variant+i))
			}
			p.pending = nil
		case 2: // the first pending one only
			if len(p.pending) == 0 {
				p.logf("results: none pending")
				return
			}
			id := p.pending[0]
			p.pending = p.pending[1:]
			p.logf("result %s only (variant %d)", id, variant&7)
			k.results(p.resultContent(id, variant))
		case 3: // a duplicate of an issued id
			if len(p.used) == 0 {
				p.logf("duplicate result: no tool use yet")
				return
			}
			id := p.used[variant%len(p.used)]
			p.logf("result %s again", id)
			k.results(p.resultContent(id, variant>>3))
		case 4: // an orphan
			id := fmt.Sprintf("toolu_orphan_%d", variant)
			p.logf("orphan result %s", id)
			k.results(p.resultContent(id, variant>>3))
		case 5: // every pending result in one user record
			var trs []transcript.Block
			for i, id := range p.pending {
				trs = append(trs, p.resultContent(id, variant+i))
			}
			p.logf("results %v in one record", p.pending)
			p.pending = nil
			if len(trs) == 0 {
				return
			}
			p.userBlocks(trs...)
		}

	case 4: // thinking
		sig := p.signature()
		switch arg % 7 {
		case 0:
			p.logf("thinking + text")
			k.assistant(&transcript.Thinking{Thinking: "hmm", Signature: sig}, text(fuzzText("answer", arg>>2)))
		case 1:
			p.logf("thinking + tool_use")
			k.assistant(&transcript.Thinking{Thinking: "need a tool", Signature: sig}, p.newToolUse("Read"))
		case 2:
			p.logf("redacted_thinking + text")
			k.assistant(&transcript.RedactedThinking{Data: sig}, text("answer"))
		case 3:
			p.logf("thinking with a placeholder signature + text")
			k.assistant(&transcript.Thinking{Thinking: "hmm", Signature: "[REDACTED_SIGNATURE]"}, text("answer"))
		case 4:
			p.logf("thinking alone")
			k.assistant(&transcript.Thinking{Thinking: "only thinking", Signature: sig})
		case 5:
			p.logf("thinking + text in one record")
			p.assistantRecord(&transcript.Thinking{Thinking: "hmm", Signature: sig}, text("answer"))
		case 6:
			p.logf("empty thinking text + tool_use")
			k.assistant(&transcript.Thinking{Signature: sig}, p.newToolUse("Bash"))
		}

	case 5: // interrupt notice
		if arg&1 == 0 {
			p.logf("interrupt notice")
			p.userBlocks(text("[Request interrupted by user]"))
		} else {
			p.logf("interrupt notice for tool use")
			p.userBlocks(text("[Request interrupted by user for tool use]"))
		}

	case 6: // image
		switch arg & 3 {
		case 0:
			p.logf("user image (base64)")
			p.userBlocks(&transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: fuzzPNG}}, text("look"))
		case 1:
			p.logf("user image (url) alone")
			p.userBlocks(&transcript.Image{Source: transcript.MediaSource{Type: "url", URL: "https://example.com/a.png"}})
		case 2:
			p.logf("image in assistant message")
			k.assistant(&transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: fuzzPNG}})
		default:
			if len(p.pending) == 0 {
				p.logf("image result: none pending")
				return
			}
			id := p.pending[0]
			p.pending = p.pending[1:]
			p.logf("image result for %s", id)
			k.results(p.resultContent(id, 4))
		}

	case 7: // unknown block type
		ub := &transcript.UnknownBlock{Type: "future_block", JSON: json.RawMessage(`{"type":"future_block","x":1}`)}
		switch arg & 3 {
		case 0:
			p.logf("unknown block in user message")
			p.userBlocks(ub, text("and text"))
		case 1:
			p.logf("unknown block alone in assistant message")
			k.assistant(ub)
		case 2:
			p.logf("unknown block alone in user message")
			p.userBlocks(ub)
		default:
			p.logf("search_result in assistant message")
			k.assistant(&transcript.UnknownBlock{Type: transcript.KindSearchResult, JSON: json.RawMessage(`{"type":"search_result","source":"s","title":"t","content":[{"type":"text","text":"x"}]}`)})
		}

	case 8: // tool id (and name) the API rejects
		p.toolN++
		ids := []string{"toolu bad:%d", "toolu_é%d", "call.%d/x", "%d"}
		id := fmt.Sprintf(ids[arg&3], p.toolN)
		name := "Read"
		if arg&4 != 0 {
			name = "my tool!"
		}
		p.pending = append(p.pending, id)
		p.used = append(p.used, id)
		p.logf("tool_use with id %q name %q", id, name)
		k.assistant(&transcript.ToolUse{ID: id, Name: name, Input: json.RawMessage(`{}`)})

	case 9: // branch from an earlier record
		at := p.next()
		if len(k.recs) == 0 {
			p.logf("branch: no records")
			k.user("root")
			return
		}
		from := k.recs[at%len(k.recs)].UUID
		k.last = from
		if arg&1 == 0 {
			p.logf("branch from %s: user", from)
			k.user(fuzzText("fork prompt", arg>>1))
		} else {
			p.logf("branch from %s: assistant", from)
			k.assistant(text("fork answer"))
		}

	case 10: // snip
		conv := p.conversation()
		a := p.next()
		if len(conv) == 0 {
			p.logf("snip: no messages")
			return
		}
		ids := []string{k.recs[conv[a%len(conv)]].UUID}
		if arg&1 != 0 {
			ids = append(ids, k.recs[conv[(a>>4)%len(conv)]].UUID)
		}
		rec, err := NewSnip(k.recs, ids, "fuzz", k.at(0))
		if err != nil {
			p.logf("snip %v: %v", ids, err)
			return
		}
		p.logf("snip %v", ids)
		k.decision(rec)

	case 11: // collapse commit
		conv := p.conversation()
		a := p.next()
		if len(conv) == 0 {
			p.logf("collapse: no messages")
			return
		}
		i, j := conv[(a&15)%len(conv)], conv[(a>>4)%len(conv)]
		if i > j {
			i, j = j, i
		}
		first, last := k.recs[i].UUID, k.recs[j].UUID
		rec, err := NewCollapseCommit(k.recs, first, last, fuzzText("summary of the span", arg), k.at(0))
		if err != nil {
			p.logf("collapse %s..%s: %v", first, last, err)
			return
		}
		p.logf("collapse %s..%s", first, last)
		k.decision(rec)

	case 12: // compact boundary + summary
		p.logf("compact boundary + summary")
		b := k.next(transcript.TypeSystem)
		b.Subtype, b.LogicalParentUUID, b.ParentUUID = transcript.SubtypeCompactBoundary, b.ParentUUID, ""
		b.Content, b.Level = mustJSON("Conversation compacted"), "info"
		b.CompactMetadata = &transcript.CompactMetadata{Trigger: "auto", PreTokens: 150_000}
		k.add(b)
		s := k.user("This session is being continued from a previous conversation. Summary: " + fuzzText("work so far", arg))
		s.IsCompactSummary, s.IsVisibleInTranscriptOnly = true, true
		if arg&4 != 0 {
			p.pending = nil // tool calls before the boundary are gone
		}

	case 13: // API error
		p.logf("API error assistant record")
		r := k.assistant(text("API Error: 529 overloaded"))
		r.IsAPIErrorMessage = true
		r.Message.Model = transcript.SyntheticModel
		if arg&1 != 0 {
			r.Message.Usage = &transcript.Usage{}
		}

	case 14: // records the request does not show
		switch arg % 4 {
		case 0:
			p.logf("meta user record")
			k.user("<command-name>/clear</command-name>").IsMeta = true
		case 1:
			p.logf("system turn_duration record")
			r := k.next(transcript.TypeSystem)
			r.Subtype, r.Content, r.Level = transcript.SubtypeTurnDuration, mustJSON("1s"), "info"
			k.add(r)
		case 2:
			p.logf("progress record")
			r := k.next(transcript.TypeProgress)
			r.Data = json.RawMessage(`{"type":"hook_progress"}`)
			k.add(r)
		default:
			p.logf("display-only user record")
			k.user("shown only").IsVisibleInTranscriptOnly = true
		}

	case 15: // server tool use
		p.toolN++
		id := fmt.Sprintf("srvtoolu_%03d", p.toolN)
		use := &transcript.ServerToolUse{ID: id, Name: "web_search", Input: json.RawMessage(`{"query":"go"}`)}
		res := &transcript.ServerToolResult{Type: "web_search_tool_result", ToolUseID: id, Content: json.RawMessage(`[]`)}
		switch arg % 3 {
		case 0:
			p.logf("server tool use + result split, then text")
			k.assistant(use, res, text("found it"))
		case 1:
			p.logf("server tool use without result")
			k.assistant(use, text("searching"))
		default:
			p.logf("server tool result without use")
			k.assistant(text("here"), res)
		}
	}
}

// chainHasSendable reports whether the active chain holds something the provider must be
// sent, judged on the records alone: a block that normalize keeps (or turns into a placeholder)
// in a message that is neither snipped (SnippedUUIDs, closure included) nor one of the records
// the provider never sees (synthetic, virtual, display-only). Blank text, thinking, server
// tool blocks and tool results may all vanish legitimately (dropped, trailing or unpaired).
func chainHasSendable(records []transcript.Record, c *transcript.Chain) bool {
	snipped := SnippedUUIDs(records)
	for _, r := range c.Messages() {
		if snipped[r.UUID] || neverSent(r) {
			continue
		}
		for _, b := range r.Message.Content {
			switch b := b.(type) {
			case *transcript.Text:
				if !wire.IsBlank(b.Text) {
					return true
				}
			case *transcript.Image, *transcript.Document, *transcript.ToolUse, *transcript.UnknownBlock, *transcript.ToolReference:
				// Kept, or a "[unsupported block: TYPE]" placeholder where the role does
				// not accept it and dropping it would empty the message.
				return true
			}
		}
	}
	return false
}

// fuzzNow is the clock of the fuzz targets that read raw transcripts: late enough for
// microcompact to clear old results.
var fuzzNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// FuzzPrepareRawTranscript reads arbitrary bytes as a transcript, as transcript's
// FuzzReadTranscript does, and runs what decodes through Prepare: it loses no block.
func FuzzPrepareRawTranscript(f *testing.F) {
	for _, s := range []string{
		"",
		userLine("a") + "\n" + userLine("b") + "\n",
		userLine("a") + "\n" + `{"type":"us` + "\n" + userLine("b"),
		`{"type":"brand-new","foo":{"bar":[1,2.5e3,null]},"uuid":"x"}`,
		`{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"future_block","x":1},{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":1,"output_tokens":2,"service_tier":"standard"}},"parentUuid":null,"isMeta":false}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"x"}],"is_error":true}]},"toolUseResult":"Error: x"}`,
		`{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"x","compactMetadata":{"trigger":"auto","preTokens":167117,"extra":1}}`,
		`{"type":"user","parentUuid":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := transcript.Read(bytes.NewReader(data), "fuzz.jsonl", transcript.ReadOptions{MaxLineBytes: 8 << 10})
		require.NoError(t, err)
		if len(tr.Records) == 0 {
			return
		}
		p := newTestPipeline(t, Config{Budget: BudgetConfig{Store: &MapStore{}}}, fuzzNow)
		in := Input{Records: tr.Records}
		res, err := p.Prepare(t.Context(), in)
		if !errors.Is(err, ErrNoMessages) {
			require.NoError(t, err)
		}
		checkConservation(t, "fuzz.jsonl", in, res)
	})
}
