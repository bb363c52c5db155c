package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/openai/openai-go/v3/responses"
)

// ResponsesHistory is a conversation as a host on the Responses API keeps it, stateless
// (store off, no previous_response_id): the instructions and the input items it sends —
// user and assistant messages, function_call and function_call_output items, reasoning
// items with their encrypted content, compaction items — each response's output items
// appended to the input.
//
// [ResponsesHistoryOf] makes one of transcript records and [ResponsesHistory.Records]
// makes records of one, with no conversion of the host's own. Each direction is the
// conversion the package already has: records become items as [ResponsesParams] converts
// a request's messages, and the output items of one answer become a record as
// [MessageFromResponse] converts the response that holds them. A reasoning item survives
// both ways: it is a thinking block holding the item's fields, which [ResponsesParams]
// sends back as the same item (a Pipeline keeps it with
// [agentctx.NormalizeConfig.KeepReasoningItems]).
//
// What the input items cannot carry does not survive records → ResponsesHistory →
// records, as [ResponsesParams] documents: Anthropic's thinking (dropped, and reported),
// the split of an assistant message's or the system prompt's text into blocks, and the
// blocks [ResponsesParams] drops. The stand-ins it writes in a function_call_output are
// read back as [ChatHistory.Records] reads them.
type ResponsesHistory struct {
	// Instructions is the system prompt (ResponseNewParams.Instructions).
	Instructions string
	// Input are the conversation's items (ResponseNewParams.Input's item list).
	Input responses.ResponseInputParam
	// Meta, when not nil, holds for each of Input (same index) what its record knows and an
	// item cannot; shorter than Input, or nil, leaves the rest without. The items of one
	// record (an answer's reasoning, message and calls) share it.
	Meta []MessageMeta
}

// ResponsesHistoryOf converts a conversation's records and the system prompt a Pipeline
// takes into Responses input items and instructions: the messages of the conversation the
// records hold (as [ChatHistoryOf] reads them), each record converted as
// [ResponsesParams] converts a request's message. The drops are those of
// [ResponsesParams], their paths counting the conversation's records.
func ResponsesHistoryOf(system []*transcript.Text, records []transcript.Record) (ResponsesHistory, []Drop, error) {
	h := ResponsesHistory{Instructions: systemText(provider.Request{System: system})}
	var drops []Drop
	var err error
	h.Input, h.Meta, drops, err = historyOf(records, responsesUser, responsesAssistant, func(it responses.ResponseInputItemUnionParam) (string, bool) {
		if it.OfFunctionCallOutput == nil {
			return "", false
		}
		return it.OfFunctionCallOutput.CallID.Value, true
	})
	return h, drops, err
}

// inputItem is the JSON of an input item, read.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
	raw     []byte
}

// userSide reports whether the item is one a user record holds.
func (it *inputItem) userSide() bool {
	return it.Type == "function_call_output" || it.Type == "message" && it.Role == "user"
}

// Records converts the history into what a Pipeline takes: the system prompt (the
// instructions, then the text of system and developer message items, one block each) for
// [agentctx.Input.System], and the records, chained by parentUuid, for
// [agentctx.Input.Records]: the items of one answer (reasoning, assistant messages,
// function calls, compaction and any other output item, up to the next user-side item or
// the next answer's id in Meta) make one assistant record; function_call_output items in a
// row make one user record, and a user message makes one. Uuids are derived as [ChatHistory.Records] derives them. Errors name the item.
func (h ResponsesHistory) Records(opts RecordOptions) ([]*transcript.Text, []transcript.Record, error) {
	where := func(i int) string { return fmt.Sprintf("agentctx/openai: input[%d]", i) }
	var system []*transcript.Text
	if h.Instructions != "" {
		system = append(system, &transcript.Text{Text: h.Instructions})
	}
	items := make([]inputItem, len(h.Input))
	var groups []group
	for i, ip := range h.Input {
		it := &items[i]
		var err error
		if it.raw, err = decode(ip, it); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where(i), err)
		}
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		if it.Type == "message" && (it.Role == "system" || it.Role == "developer") {
			if system, err = systemTexts(system, it.Content); err != nil {
				return nil, nil, fmt.Errorf("%s.content: %w", where(i), err)
			}
			continue
		}
		role := transcript.RoleAssistant
		switch {
		case it.userSide():
			role = transcript.RoleUser
		case it.Type == "message" && it.Role != "assistant":
			return nil, nil, fmt.Errorf("%s.role: %q is no role of a Responses message", where(i), it.Role)
		}
		groups = append(groups, group{role: role, first: i, last: i})
	}
	recs, err := records(groups, h.Meta, opts, where, func(g group) (*transcript.Message, error) {
		if g.role == transcript.RoleAssistant {
			return responsesAnswer(items[g.first:g.last+1], g.first, where)
		}
		return responsesUserMessage(items[g.first:g.last+1], g.first, where, h.Meta)
	})
	return system, recs, err
}

// responsesAnswer converts the output items of one answer as [MessageFromResponse]
// converts the response that holds them, the calls' arguments kept as the history holds
// them; an assistant message item's content (a string, or output_text and refusal parts)
// is put in the shape of an output message.
func responsesAnswer(items []inputItem, first int, where func(int) string) (*transcript.Message, error) {
	var out bytes.Buffer
	out.WriteString(`{"id":"","object":"response","created_at":0,"model":"","status":"completed","output":[`)
	for k, it := range items {
		if k > 0 {
			out.WriteByte(',')
		}
		if it.Type != "message" {
			out.Write(it.raw)
			continue
		}
		msg, err := outputMessage(it.Content)
		if err != nil {
			return nil, fmt.Errorf("%s.content: %w", where(first+k), err)
		}
		out.Write(msg)
	}
	out.WriteString(`]}`)
	var r responses.Response
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", where(first), err)
	}
	m, err := MessageFromResponse(&r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where(first), err)
	}
	args := map[string]string{}
	for _, it := range r.Output {
		if it.Type == "function_call" {
			fc := it.AsFunctionCall()
			args[fc.CallID] = fc.Arguments
		}
	}
	verbatimArguments(m, args)
	return m, nil
}

// outputMessage is an assistant message item's content as an output message.
func outputMessage(content json.RawMessage) ([]byte, error) {
	type part struct {
		Type        string          `json:"type"`
		Text        string          `json:"text,omitempty"`
		Refusal     string          `json:"refusal,omitempty"`
		Annotations json.RawMessage `json:"annotations,omitempty"`
	}
	var parts []part
	var s string
	if json.Unmarshal(content, &s) == nil {
		parts = []part{{Type: "output_text", Text: s}}
	} else if err := json.Unmarshal(content, &parts); err != nil {
		return nil, fmt.Errorf("neither a string nor a list of parts: %w", err)
	}
	for i := range parts {
		if parts[i].Type != "refusal" {
			parts[i].Type = "output_text"
		}
	}
	return hostrec.JSON(struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Status  string `json:"status"`
		Content []part `json:"content"`
	}{"message", "assistant", "completed", parts})
}

// inputPart is the JSON of an input content part (of a user message or of a function's
// output), read.
type inputPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Filename string `json:"filename"`
}

// block converts an input content part; one the conversion has no block for is kept
// verbatim.
func (p *inputPart) block(raw json.RawMessage) (transcript.Block, error) {
	switch {
	case p.Type == "input_text":
		return &transcript.Text{Text: p.Text}, nil
	case p.Type == "input_image" && p.ImageURL != "":
		return &transcript.Image{Source: mediaSource(p.ImageURL)}, nil
	case p.Type == "input_file" && p.FileData != "":
		return &transcript.Document{Source: mediaSource(p.FileData), Title: fileTitle(p.Filename)}, nil
	case p.Type == "input_file" && p.FileURL != "":
		return &transcript.Document{Source: transcript.MediaSource{Type: "url", URL: p.FileURL}}, nil
	}
	return unknown(raw)
}

// parts converts a content that is a string or a list of input parts; field names it in an
// error.
func parts(content json.RawMessage, field string) ([]transcript.Block, error) {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []transcript.Block{&transcript.Text{Text: s}}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(content, &raws); err != nil {
		return nil, fmt.Errorf("%s: neither a string nor a list of parts: %w", field, err)
	}
	out := make([]transcript.Block, 0, len(raws))
	for j, raw := range raws {
		var p inputPart
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, j, err)
		}
		b, err := p.block(raw)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, j, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// responsesUserMessage converts function_call_output items in a row, or a user message,
// into one user message.
func responsesUserMessage(items []inputItem, first int, where func(int) string, all []MessageMeta) (*transcript.Message, error) {
	m := &transcript.Message{Role: transcript.RoleUser}
	for k, it := range items {
		at := where(first + k)
		if it.Type == "message" {
			own, err := parts(it.Content, "content")
			if err != nil {
				return nil, fmt.Errorf("%s.%w", at, err)
			}
			m.Content = append(m.Content, own...)
			continue
		}
		out, err := parts(it.Output, "output")
		if err != nil {
			return nil, fmt.Errorf("%s.%w", at, err)
		}
		var texts []string
		var media []transcript.Block
		for _, b := range out {
			if t, ok := b.(*transcript.Text); ok && len(media) == 0 {
				texts = append(texts, t.Text)
				continue
			}
			media = append(media, b)
		}
		m.Content = append(m.Content, toolResult(it.CallID, strings.Join(texts, "\n\n"), media, metaAt(all, first+k).StringContent))
	}
	return m, nil
}
