package openai

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// MessageMeta is what a record of a message knows besides the SDK's message or item: when it
// was written and, for an answer, what [MessageFromChat] or [MessageFromResponse] read from
// it ([ChatMetaOf], [ResponseMetaOf]). The pipeline reads them: the time for the idle gap
// after which old tool results are cleared, the usage to anchor its token count on, the id
// to join the records of one answer.
type MessageMeta struct {
	// Time is when the message was written; the zero time writes none.
	Time time.Time
	// ID, Model, StopReason and StopSequence are an answer's, as the conversions of answers
	// map them.
	ID, Model, StopReason, StopSequence string
	// Usage is an answer's usage, with the cached tokens counted apart from the input.
	Usage *transcript.Usage
	// Injected marks a user message the host wrote itself rather than the user (a reminder,
	// a hook's output): the record's isMeta. A compaction's summary does not quote it.
	Injected bool
	// CompactSummary marks the summary message a compaction wrote (the record's
	// isCompactSummary), which the next compaction summarizes again rather than quotes.
	CompactSummary bool
	// StringContent says the record held its text as a bare string rather than one text
	// block, and, on a tool message or a function_call_output item, that the tool result
	// held its output so: the pipeline counts the two forms apart, so a round trip keeps the
	// record's.
	StringContent bool
	// SourceToolUseID names the tool call whose output an injected user message is (the
	// record's sourceToolUseID): a skill's instructions, which a compaction re-injects.
	SourceToolUseID string
}

// recordMeta is the meta of a record's message.
func recordMeta(r *transcript.Record) MessageMeta { return MessageMeta(hostrec.RecordMeta(r)) }

// zero reports whether mm says nothing.
func (mm MessageMeta) zero() bool {
	return mm.Time.IsZero() && mm.ID == "" && mm.Model == "" && mm.StopReason == "" && mm.StopSequence == "" &&
		mm.Usage == nil && !mm.Injected && !mm.CompactSummary && !mm.StringContent && mm.SourceToolUseID == ""
}

// RecordOptions say how [ChatHistory.Records] and [ResponsesHistory.Records] make records of
// a host's messages.
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
	// Cwd is the session's working directory, written on every record.
	Cwd string
}

// conversation returns the records of the conversation records hold that a request carries:
// the chain [transcript.BuildChain] rebuilds from their last message, from its latest compact
// boundary on, without the records shown to the user only.
func conversation(records []transcript.Record) ([]*transcript.Record, error) {
	chain, err := transcript.BuildChain(records, transcript.ChainOptions{})
	if err != nil {
		return nil, fmt.Errorf("agentctx/openai: %w", err)
	}
	var out []*transcript.Record
	for _, r := range chain.Messages() {
		if r.IsVirtual || r.IsVisibleInTranscriptOnly && !r.IsCompactSummary {
			continue // shown to the user only: no request carries it
		}
		out = append(out, r)
	}
	return out, nil
}

// historyOf converts the conversation records hold (see [conversation]) into a host's
// messages or items, one record at a time with user or assistant (the request conversions'
// own), each with its record's meta; the one that carries a call's output (callID says
// which) has the meta of that tool result.
func historyOf[T any](records []transcript.Record, user, assistant func(int, []transcript.Block, *[]Drop) []T, callID func(T) (string, bool)) ([]T, []MessageMeta, []Drop, error) {
	var out []T
	var metas []MessageMeta
	var drops []Drop
	recs, err := conversation(records)
	if err != nil {
		return nil, nil, nil, err
	}
	for i, r := range recs {
		convert := user
		switch r.Message.Role {
		case transcript.RoleUser:
		case transcript.RoleAssistant:
			convert = assistant
		default:
			return nil, nil, nil, fmt.Errorf("agentctx/openai: record %s (line %d): role %q is neither user nor assistant", r.UUID, r.Line, r.Message.Role)
		}
		for _, x := range convert(i, r.Message.Content, &drops) {
			out = append(out, x)
			if id, ok := callID(x); ok {
				metas = append(metas, resultMeta(r, id))
			} else {
				metas = append(metas, recordMeta(r))
			}
		}
	}
	return out, metas, drops, nil
}

// group is the messages or items of a host's history that make one record: their indexes,
// from first to last.
type group struct {
	role        transcript.Role
	first, last int
}

// groupMeta is the meta of a group's record: that of its last message with any (an answer's
// records carry their usage on the last).
func groupMeta(all []MessageMeta, g group) MessageMeta {
	for i := min(g.last, len(all)-1); i >= g.first; i-- {
		if !all[i].zero() {
			return all[i]
		}
	}
	return MessageMeta{}
}

// records makes one record per group of messages, chained; content gives a group's
// message; where names a message in an error.
func records(groups []group, all []MessageMeta, opts RecordOptions, where func(int) string, content func(group) (*transcript.Message, error)) ([]transcript.Record, error) {
	out := make([]transcript.Record, 0, len(groups))
	for _, g := range groups {
		m, err := content(g)
		if err != nil {
			return nil, err
		}
		mm := groupMeta(all, g)
		hostrec.Meta(mm).SetAnswer(m)
		m.StringContent = mm.StringContent && len(m.Content) == 1 && m.Content[0].Kind() == transcript.KindText
		r, err := hostrec.Record(m, hostrec.Meta(mm).Flags(), where(g.first))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	groupOf := func(i int) string { return where(groups[i].first) }
	return out, hostrec.Chain(out, hostrec.Options{SessionID: opts.SessionID, Parent: opts.Parent, Time: opts.Time, Cwd: opts.Cwd}, groupOf)
}

// mediaSource reads the URL of an image or file part: a data URL is inline base64 data, any
// other a URL source.
func mediaSource(u string) transcript.MediaSource {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if mt, data, ok := strings.Cut(rest, ";base64,"); ok {
			return transcript.MediaSource{Type: "base64", MediaType: mt, Data: data}
		}
	}
	return transcript.MediaSource{Type: "url", URL: u}
}

// fileTitle is the title of a document sent under name: none for the name [fileName] gives
// a document without one.
func fileTitle(name string) string {
	if name == "document.pdf" {
		return ""
	}
	return name
}

// toolResult makes the tool_result of a tool's output as the conversions send it: text (the
// error prefix says the call failed; the stand-ins for no output and for media alone are
// left out, tool references read back) and the media the tool returned; str says the
// content was a bare string.
func toolResult(id, text string, media []transcript.Block, str bool) *transcript.ToolResult {
	r := &transcript.ToolResult{ToolUseID: id, StringContent: str && len(media) == 0}
	if rest, ok := strings.CutPrefix(text, errorResultPrefix); ok {
		r.IsError, text = true, rest
	}
	switch refs := toolReferences(text); {
	case refs != nil:
		r.Content = append(r.Content, refs...)
	case text != emptyResultText && (len(media) == 0 || text != fmt.Sprintf(imageResultText, len(media))):
		r.Content = append(r.Content, &transcript.Text{Text: text})
	}
	r.Content = append(r.Content, media...)
	return r
}

// unknown keeps a part or item the conversion has no block for, verbatim.
func unknown(raw json.RawMessage) (transcript.Block, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	return &transcript.UnknownBlock{Type: transcript.BlockKind(head.Type), JSON: raw}, nil
}

// textOf reads a content that is a string or a list of parts with text: the string, or
// each part's text.
func textOf(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("content is neither a string nor a list of parts: %w", err)
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out, nil
}

// toolReferences reads back the tool references of a tool's output: a text that is nothing
// but toolReferenceText for each, apart by blank lines, as resultParts joins them; nil for
// any other text.
func toolReferences(text string) []transcript.Block {
	prefix, suffix, _ := strings.Cut(toolReferenceText, "%s")
	var out []transcript.Block
	for line := range strings.SplitSeq(text, "\n\n") {
		name, ok := strings.CutPrefix(line, prefix)
		if name, ok = strings.CutSuffix(name, suffix); !ok || !validToolName(name) {
			return nil
		}
		out = append(out, &transcript.ToolReference{ToolName: name})
	}
	return out
}

// validToolName reports whether name can be a tool's: 1 to 128 letters, digits, _ and -.
func validToolName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// resultMeta is the meta of the message or item that carries a record's output: the
// record's, and whether the tool_result of the call held its content as a bare string.
func resultMeta(r *transcript.Record, callID string) MessageMeta {
	mm := recordMeta(r)
	mm.StringContent = false
	for _, b := range r.Message.Content {
		if tr, ok := b.(*transcript.ToolResult); ok && tr.ToolUseID == callID {
			mm.StringContent = tr.StringContent
		}
	}
	return mm
}

// metaAt is the meta of the message or item at i; none when there is none.
func metaAt(all []MessageMeta, i int) MessageMeta {
	if i < len(all) {
		return all[i]
	}
	return MessageMeta{}
}

// verbatimArguments sets the input of each call of m to its arguments as the host's history
// holds them (args, by call id), when they are a JSON object with nothing around it: the
// conversion of an answer compacts them, as a live answer's are recorded, but a host sends
// its history's bytes, and so must the requests made of the records of it.
func verbatimArguments(m *transcript.Message, args map[string]string) {
	for _, b := range m.Content {
		tu, ok := b.(*transcript.ToolUse)
		if !ok {
			continue
		}
		a, ok := args[tu.ID]
		if ok && a != "" && a[0] == '{' && a[len(a)-1] == '}' && json.Valid([]byte(a)) {
			tu.Input = json.RawMessage(a)
		}
	}
}

// ChatMetaOf returns the meta of a Chat Completions answer: its id, model, stop reason and
// usage, read as [MessageFromChat] reads them, at time at.
func ChatMetaOf(cc *sdk.ChatCompletion, at time.Time) (MessageMeta, error) {
	m, err := MessageFromChat(cc)
	if err != nil {
		return MessageMeta{}, err
	}
	return MessageMeta(hostrec.AnswerMeta(m, at)), nil
}

// ResponseMetaOf returns the meta of a Responses answer, read as [MessageFromResponse]
// reads it, at time at: every output item of the response shares it.
func ResponseMetaOf(r *responses.Response, at time.Time) (MessageMeta, error) {
	m, err := MessageFromResponse(r)
	if err != nil {
		return MessageMeta{}, err
	}
	return MessageMeta(hostrec.AnswerMeta(m, at)), nil
}

// decode reads the JSON the SDK sends for v into out, and returns that JSON.
func decode(v, out any) ([]byte, error) {
	raw, err := hostrec.JSON(v)
	if err != nil {
		return nil, err
	}
	return raw, json.Unmarshal(raw, out)
}

// systemTexts appends to system the text of a system or developer message's content, a
// block for each part.
func systemTexts(system []*transcript.Text, content json.RawMessage) ([]*transcript.Text, error) {
	texts, err := textOf(content)
	for _, s := range texts {
		system = append(system, &transcript.Text{Text: s})
	}
	return system, err
}
