package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// History is a conversation as a host on the SDK keeps it: the system prompt and the
// message params it sends, each answer appended with the SDK's Message.ToParam.
//
// [HistoryOf] makes one of transcript records and [History.Records] makes records of one,
// so a host that keeps its messages in the SDK's types passes them to a Pipeline, and
// brings the records the library writes (a compaction's summary) into its list, with no
// conversion of its own. The blocks go both ways through the SDK's own JSON, so everything
// a block holds survives: text with citations and cache_control, images and documents of
// every source, tool_use and tool_result (bare-string content included), thinking with its
// signature, redacted_thinking, server tool calls and results, and any field or block the
// SDK has no type for.
//
// What a message param cannot hold does not survive records → History → records: a
// record's uuid, parent, timestamp and session (made again by [History.Records]); an
// answer's id, model, stop_reason and usage (the pressure gauge's anchor: attach it from
// the SDK's Message with [MessageFromAnswer]); the record flags Claude Code writes (isMeta,
// isCompactSummary, sidechains) and every record that is no message (compact boundaries,
// the library's decisions); a message's bare-string content, which becomes one text block.
// Within a conversation's chain each record's content is kept whole: the records of one
// answer, which Claude Code writes one block each, stay one message each.
type History struct {
	// System is the system prompt (MessageNewParams.System).
	System []sdk.TextBlockParam
	// Messages are the conversation's messages (MessageNewParams.Messages).
	Messages []sdk.MessageParam
	// Meta, when not nil, holds for each of Messages (same index) what its record knows and
	// a message param does not; shorter than Messages, or nil, leaves the rest without.
	Meta []MessageMeta
}

// MessageMeta is what a record of a message knows besides the message param: when it was
// written and, for an answer, the fields of the SDK's Message it came as ([MetaOf]). The
// pipeline reads them: the time for the idle gap after which old tool results are cleared,
// the usage to anchor its token count on, the id to join the records of one answer.
type MessageMeta struct {
	// Time is when the message was written; the zero time writes none.
	Time time.Time
	// ID, Model, StopReason and StopSequence are an answer's.
	ID, Model, StopReason, StopSequence string
	// Usage is an answer's usage, with every field the provider reported.
	Usage *transcript.Usage
	// Injected marks a user message the host wrote itself rather than the user (a reminder,
	// a hook's output): the record's isMeta. A compaction's summary does not quote it.
	Injected bool
	// CompactSummary marks the summary message a compaction wrote (the record's
	// isCompactSummary), which the next compaction summarizes again rather than quotes.
	CompactSummary bool
	// StringContent says the record held its text as a bare string, as Claude Code writes
	// a typed prompt, where the param holds one text block: the pipeline counts the two
	// forms apart, so a round trip keeps the record's.
	StringContent bool
	// SourceToolUseID names the tool call whose output an injected user message is (the
	// record's sourceToolUseID): a skill's instructions, which a compaction re-injects.
	SourceToolUseID string
}

// MetaOf returns the meta of an answer: its id, model, stop reason and usage, read as
// [MessageFromAnswer] reads them, at time at.
func MetaOf(m *sdk.Message, at time.Time) (MessageMeta, error) {
	tm, err := MessageFromAnswer(m)
	if err != nil {
		return MessageMeta{}, err
	}
	return MessageMeta(hostrec.AnswerMeta(tm, at)), nil
}

// RecordOptions say how [History.Records] makes records of a host's messages.
type RecordOptions struct {
	// SessionID is written on every record and seeds their uuids.
	SessionID string
	// Parent is the uuid the first record names as its parent: the last record of the
	// history converted before, when the host converts only what it added. "" makes the
	// first record a root.
	Parent string
	// Time is the timestamp of every record whose message has no time of its own
	// ([MessageMeta.Time]); the zero time writes none.
	Time time.Time
	// Cwd is the session's working directory, written on every record: a compaction
	// re-reads the files the conversation read from it, and its summary names paths
	// relative to it.
	Cwd string
}

// HistoryOf converts a conversation's records and the system prompt a Pipeline takes
// ([agentctx.Input.System]) into the SDK's params: the messages of the conversation the
// records hold (the chain [transcript.BuildChain] rebuilds from their last message, from
// its latest compact boundary on), one MessageParam per user or assistant record, each
// block converted as [Params] converts a request's.
func HistoryOf(system []*transcript.Text, records []transcript.Record) (History, error) {
	var h History
	for i, t := range system {
		tb, err := textParam(t)
		if err != nil {
			return h, fmt.Errorf("agentctx/anthropic: system[%d]: %w", i, err)
		}
		h.System = append(h.System, tb)
	}
	chain, err := transcript.BuildChain(records, transcript.ChainOptions{})
	if err != nil {
		return h, fmt.Errorf("agentctx/anthropic: %w", err)
	}
	for _, r := range chain.Messages() {
		if r.IsVirtual || r.IsVisibleInTranscriptOnly && !r.IsCompactSummary {
			continue // shown to the user only: no request carries it
		}
		mp, err := messageParam(r.Message.Role, r.Message.Content)
		if err != nil {
			return h, fmt.Errorf("agentctx/anthropic: record %s (line %d): %w", r.UUID, r.Line, err)
		}
		h.Messages = append(h.Messages, mp)
		h.Meta = append(h.Meta, MessageMeta(hostrec.RecordMeta(r)))
	}
	return h, nil
}

// messageParam converts one message's role and content blocks.
func messageParam(role transcript.Role, content []transcript.Block) (sdk.MessageParam, error) {
	blocks := make([]sdk.ContentBlockParamUnion, 0, len(content))
	for j, b := range content {
		cb, err := blockParam(b)
		if err != nil {
			return sdk.MessageParam{}, fmt.Errorf("content[%d]: %w", j, err)
		}
		blocks = append(blocks, cb)
	}
	switch role {
	case transcript.RoleUser:
		return sdk.NewUserMessage(blocks...), nil
	case transcript.RoleAssistant:
		return sdk.NewAssistantMessage(blocks...), nil
	}
	return sdk.MessageParam{}, fmt.Errorf("role %q is neither user nor assistant", role)
}

// Records converts the history into what a Pipeline takes: the system prompt for
// [agentctx.Input.System] and one user or assistant record per message, chained by
// parentUuid, for [agentctx.Input.Records]. A record's uuid is derived from the session
// id, its parent's uuid and its message, so the same history gives the same records, and a
// history that only grows keeps its prefix's uuids (and the decisions recorded against
// them). Each message and system block is read from the JSON the SDK sends for it, so
// nothing the SDK would send is lost. Errors name the message or system block.
func (h History) Records(opts RecordOptions) ([]*transcript.Text, []transcript.Record, error) {
	system := make([]*transcript.Text, 0, len(h.System))
	for i, tb := range h.System {
		raw, err := hostrec.JSON(tb)
		if err != nil {
			return nil, nil, fmt.Errorf("agentctx/anthropic: system[%d]: %w", i, err)
		}
		b, err := transcript.UnmarshalBlock(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("agentctx/anthropic: system[%d]: %w", i, err)
		}
		t, ok := b.(*transcript.Text)
		if !ok {
			return nil, nil, fmt.Errorf("agentctx/anthropic: system[%d]: a %s block, not text", i, b.Kind())
		}
		system = append(system, t)
	}
	records := make([]transcript.Record, 0, len(h.Messages))
	for i, mp := range h.Messages {
		where := fmt.Sprintf("agentctx/anthropic: messages[%d]", i)
		raw, err := hostrec.JSON(mp)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		m := new(transcript.Message)
		if err := json.Unmarshal(raw, m); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where, err)
		}
		var mm MessageMeta
		if i < len(h.Meta) {
			mm = h.Meta[i]
			hostrec.Meta(mm).SetAnswer(m)
			m.StringContent = mm.StringContent && len(m.Content) <= 1 && (len(m.Content) == 0 || m.Content[0].Kind() == transcript.KindText)
		}
		r, err := hostrec.Record(m, hostrec.Meta(mm).Flags(), where)
		if err != nil {
			return nil, nil, err
		}
		records = append(records, r)
	}
	err := hostrec.Chain(records, hostrec.Options{SessionID: opts.SessionID, Parent: opts.Parent, Time: opts.Time, Cwd: opts.Cwd},
		func(i int) string { return fmt.Sprintf("agentctx/anthropic: messages[%d]", i) })
	return system, records, err
}

// MessageFromAnswer converts an answer of the SDK (Messages.New, or a streamed message
// accumulated with Message.Accumulate) into the message an assistant record carries, as
// [Client.Send] returns it: its content blocks, id, model, stop reason and usage with the
// cache figures, and every field the library does not model, read from the answer's JSON
// as it came (as the SDK serializes it when m was not decoded from an answer). An error
// object in place of the message gives an [*Error] with its class.
func MessageFromAnswer(m *sdk.Message) (*transcript.Message, error) {
	if m == nil {
		return nil, &Error{Class: provider.ClassFatal, Message: "there is no message", Err: errors.New("nil message")}
	}
	raw := []byte(m.RawJSON())
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(m); err != nil {
			return nil, &Error{Class: provider.ClassFatal, Message: err.Error(), Err: err}
		}
	}
	return decodeAnswer(raw)
}

// decodeAnswer decodes an answer's JSON into an assistant message; an error object in a
// 200 answer is classified as the API's own error, anything else that is no message is the
// provider's fault (fatal).
func decodeAnswer(raw []byte) (*transcript.Message, error) {
	m, err := transcript.DecodeResponse(raw)
	if err != nil {
		if ae, ok := errors.AsType[*transcript.APIError](err); ok {
			return nil, classifyAPIError(ae)
		}
		return nil, &Error{Class: provider.ClassFatal, StatusCode: 200, Message: err.Error(), Err: err}
	}
	return m, nil
}
