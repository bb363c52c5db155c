package summarize

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"
)

// Summarizer writes the summary that replaces a conversation's history when it is compacted.
// It is called from [github.com/agentctx/agentctx.Pipeline.Prepare] (auto-compact) and [github.com/agentctx/agentctx.Pipeline.Compact] with their ctx,
// once per attempt, and must be safe for concurrent use when one Pipeline serves several
// conversations. A model-backed Summarizer sends req.Request (or builds its own prompt from
// req.View and req.Instructions) with no tools allowed and one turn, and returns the model's
// text. When the provider rejects the request as too long it returns a [*provider.PromptTooLongError]
// (with the provider's figures when it gave them): the library then leaves out the oldest
// rounds of the conversation and calls again, at most 3 times. Any other error fails the
// attempt, which is recorded (see [github.com/agentctx/agentctx.CompactConfig]).
type Summarizer interface {
	Summarize(ctx context.Context, req Request) (Summary, error)
}

// Func adapts a function to a [Summarizer].
type Func func(ctx context.Context, req Request) (Summary, error)

// Summarize calls f(ctx, req).
func (f Func) Summarize(ctx context.Context, req Request) (Summary, error) {
	return f(ctx, req)
}

// Request is what a [Summarizer] is asked to summarize.
type Request struct {
	// Request is a provider-ready request built to share the conversation's prompt cache: the
	// conversation's system prompt, tools and messages as this turn's request has them (images
	// and documents replaced by text markers, attachments that compaction re-injects left out),
	// one cache marker at the end of that shared prefix, and the instruction as the last user
	// content; tool_choice "none" and MaxTokens = MaxOutputTokens. It passes [provider.Validate].
	Request provider.Request
	// View is the conversation to summarize, message by message, in the same state as in
	// Request; for summarizers that write their own prompt or read the structure.
	View []Message
	// Instructions is the instruction text ending Request: the library's summary prompt with
	// Custom appended.
	Instructions string
	// Custom holds the extra instructions of the caller ([github.com/agentctx/agentctx.CompactOptions.Instructions]) and of
	// pre-compact hooks, or "".
	Custom string
	// MaxOutputTokens caps the summary's length, in tokens.
	MaxOutputTokens int
	// Trigger says what asked for the summary: "auto" (the pressure crossed the threshold),
	// "manual" (a compaction asked for), "collapse" (the collapse producer folding a span) or
	// "session_memory" (a session-memory extraction).
	Trigger string
	// Attempt counts the calls for this compaction: 1, then 2 to 4 after prompt-too-long.
	Attempt int
	// Omitted is how many of the oldest messages were left out of View and Request to fit (a
	// text marker in their place says so); 0 when none were.
	Omitted int
}

// Summary is a [Summarizer]'s answer.
type Summary struct {
	// Text is the reply: optionally an <analysis>…</analysis> draft, then the summary inside
	// <summary>…</summary>. The draft is removed before the summary is installed; a reply
	// without a complete, non-empty <summary> element fails the attempt.
	Text string
	// Usage is the provider's usage for the summary call, when there was one.
	Usage *transcript.Usage
	// By names the summarizer in the compaction's records (e.g. the model); empty: "summarizer".
	By string
}

// Message is one message of a view handed to a [Summarizer].
type Message struct {
	// UUID is the record's uuid, or a content-derived one for a synthesized message.
	UUID string
	// Role is the message's role.
	Role transcript.Role
	// Source says where the message comes from: "" for a message of the transcript, or one of
	// the Source* constants.
	Source Source
	// Meta is true for messages the runtime injected rather than a person or the model wrote:
	// isMeta records (hook context, reminders), summaries, base context.
	Meta bool
	// Time is the record's timestamp; zero when unknown.
	Time time.Time
	// Content holds the message's blocks. They are shared with the view: do not modify them.
	Content []transcript.Block
}

// Source says where a [Message] that does not come from the transcript as written
// comes from.
type Source string

// The Source values of a [Message] that does not come from the transcript as written.
const (
	SourceCompactSummary Source = "compact_summary" // the summary of an earlier compaction
	SourceCollapse       Source = "collapse"        // a collapse commit's summary
	SourceContext        Source = "context"         // the base user context
	SourcePinned         Source = "pinned"          // pinned content re-placed after a summary
	SourceReminder       Source = "reminder"        // a reminder the pipeline put after an input
	SourceOmitted        Source = "omitted"         // the marker for messages left out to fit
)

// ErrNoSummary is what the errors of [FromReply] match (errors.Is): the reply holds no usable
// summary.
var ErrNoSummary = errors.New("summarize: no usable summary in the reply")

// noSummary is an error of [FromReply]: its text says what is wrong with the reply, and it
// matches [ErrNoSummary].
type noSummary string

func (e noSummary) Error() string        { return string(e) }
func (e noSummary) Is(target error) bool { return target == ErrNoSummary }

// FromReply returns the summary in a [Summarizer]'s reply as a compaction reads it: the text
// between the first <summary> and the last </summary> once every <analysis> draft is removed
// (a summary may quote the tags), trimmed. A reply without a complete, non-empty <summary>
// element gives an error matching [ErrNoSummary].
func FromReply(text string) (string, error) {
	for {
		a := strings.Index(text, "<analysis>")
		if a < 0 {
			break
		}
		z := strings.Index(text[a:], "</analysis>")
		if z < 0 {
			text = text[:a]
			break
		}
		text = text[:a] + text[a+z+len("</analysis>"):]
	}
	_, body, ok := strings.Cut(text, "<summary>")
	if !ok {
		return "", noSummary("no complete <summary>…</summary> in the reply")
	}
	end := strings.LastIndex(body, "</summary>")
	if end < 0 {
		return "", noSummary("the summary was cut off: no closing </summary> tag")
	}
	body = strings.TrimSpace(body[:end])
	if body == "" {
		return "", noSummary("the summary is empty")
	}
	return body, nil
}
