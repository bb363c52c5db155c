package agentctx

import (
	"github.com/agentctx/agentctx/internal/wire"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// Request counts a request's input: system blocks, tool definitions and messages (each with
// [Counter.MessageOverhead] of framing). The result is an estimate of what the provider will
// bill as input (it cannot know the provider's own tokenizer); it is what the report's figures
// and the max_tokens clamp use.
func (c *Counter) Request(r *provider.Request) int {
	n := 0
	for _, b := range r.System {
		n += c.Block(b)
	}
	for _, t := range r.Tools {
		n += c.textBytes(t.Definition)
	}
	msgs := r.Messages
	counts := countScratch(len(msgs))
	c.sequence(seqRequest, len(msgs), func(i int) (transcript.Role, []transcript.Block) { return msgs[i].Role, msgs[i].Content }, *counts)
	for _, k := range *counts {
		n += messageOverheadTokens + k
	}
	putCountScratch(counts)
	return n
}

// RequestBreakdown is the counted size of a turn's request by part, as [Pipeline.Breakdown]
// measures it, in tokens of the pipeline's [TokenCounter]. System + Tools + BaseContext +
// Messages.Total() is the request's counted size, [Report.InputTokens]; that plus Free and
// Buffer is the context window whenever the request fits in it. The zero value is an empty
// request.
type RequestBreakdown struct {
	// System is the system prompt the caller gave ([Input.System]), without the base context.
	System int
	// Tools is the tool definitions: the caller's and those normalize declared as unavailable.
	Tools int
	// BaseContext is what the context stage injected ([ContextConfig]): the system context
	// block appended to the system prompt and the user context message, with its framing
	// ([Counter.MessageOverhead]) when it is a message of its own rather than merged into the
	// first user message.
	BaseContext int
	// Messages is the rest of the messages by [Category]; its System is 0 and its Other holds
	// the framing of each message and unknown blocks. The tool results in CacheDeleted are
	// not in it.
	Messages Breakdown
	// CacheDeleted is what the tool results the request's cache_edits delete count
	// ([Report.CacheDeletedTokens]): they are sent, but the provider no longer holds them, so
	// they are left out of every other figure.
	CacheDeleted int
	// Free is the room left below the auto-compact threshold:
	// [Report.AutoCompactThreshold] − InputTokens, or 0.
	Free int
	// Buffer is the rest of the window: [Report.ContextWindow] − InputTokens − Free, or 0. It is
	// the auto-compact buffer (the window above the threshold, which keeps room for the output
	// and the compaction) less any part of it the request already takes.
	Buffer int
}

// InputTokens returns the request's counted size: System + Tools + BaseContext +
// Messages.Total(). It equals the Report.InputTokens of the Result it was measured on.
func (b RequestBreakdown) InputTokens() int {
	return b.System + b.Tools + b.BaseContext + b.Messages.Total()
}

// Breakdown measures res.Request by part: the system prompt, the tool definitions, the base
// context and the messages by category, plus the free space and the auto-compact buffer of the
// window (see [RequestBreakdown]). res must come from p ([Pipeline.Prepare] or
// [Pipeline.Compact]), whose counter counted it: the parts then sum exactly to
// res.Report.InputTokens. The figures are counted, not calibrated: the pressure figure
// ([Report.Pressure]) is the provider's count, anchored on its reported usage.
//
// Prepare does not compute the breakdown, so that a turn pays nothing for it; Breakdown walks
// the request once more, counting each block from the counter's memo. It does not modify res
// and is safe for concurrent use.
func (p *Pipeline) Breakdown(res *Result) RequestBreakdown {
	var b RequestBreakdown
	c := p.counter
	req := &res.Request
	for i, s := range req.System {
		if i+1 == res.base.system {
			b.BaseContext += c.Block(s)
		} else {
			b.System += c.Block(s)
		}
	}
	for _, t := range req.Tools {
		b.Tools += c.textBytes(t.Definition)
	}
	deleted := cacheDeletedRefs(req)
	user := ""
	if res.base.user != "" {
		user, _ = wire.ValidUTF8(res.base.user) // as normalize repairs it
	}
	for _, m := range req.Messages {
		var mb Breakdown
		base, rest := 0, false
		for _, blk := range m.Content {
			if tr, ok := blk.(*transcript.ToolResult); ok && deleted[tr.CacheReference] {
				delete(deleted, tr.CacheReference) // as cacheEditing counts it: once
				b.CacheDeleted += c.Block(tr)
				continue
			}
			if tx, ok := blk.(*transcript.Text); ok && user != "" && m.Role == transcript.RoleUser && tx.Text == user {
				user = "" // the context stage injects one message
				base += c.Block(tx)
				continue
			}
			if blk.Kind() != transcript.KindCacheEdits {
				rest = true
			}
			c.addBlock(&mb, m.Role, blk)
		}
		if base > 0 && !rest {
			base += messageOverheadTokens
		} else {
			mb.Other += messageOverheadTokens
		}
		b.BaseContext += base
		b.Messages = b.Messages.Add(mb)
	}
	in := b.InputTokens()
	window, threshold := res.Report.ContextWindow, res.Report.AutoCompactThreshold
	b.Free = max(0, min(threshold, window)-in)
	b.Buffer = max(0, window-in-b.Free)
	return b
}
