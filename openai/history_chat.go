package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
)

// ChatHistory is a conversation as a host on Chat Completions keeps it: the messages it
// sends (system or developer prompt, user messages with text, image and file parts,
// assistant messages with their tool calls, tool messages), each answer appended with the
// SDK's ChatCompletionMessage.ToParam.
//
// [ChatHistoryOf] makes one of transcript records and [ChatHistory.Records] makes records of
// one, so a host that keeps its messages in the SDK's types passes them to a Pipeline, and
// brings the records the library writes (a compaction's summary) into its list, with no
// conversion of its own. Each direction is the conversion the package already has:
// records become messages as [ChatParams] converts a request's messages, and an assistant
// message becomes a record as [MessageFromChat] converts an answer (a compatible server's
// reasoning_content among the message's extra fields included).
//
// What Chat Completions cannot carry does not survive records → ChatHistory → records, as
// [ChatParams] documents: thinking (it is dropped, and reported), the split of an assistant
// message's or a system prompt's text into blocks (one text, joined by blank lines), and
// the blocks [ChatParams] drops. The stand-ins it writes are read back: a failed call's
// prefix as is_error, the text standing for no output or for media alone as no text, and
// the media a tool returned, carried in the next user message, as the tool result's again.
// A record's uuid, parent, timestamp and session are made again by [ChatHistory.Records];
// an answer's id, model, stop reason and usage ride in [ChatHistory.Meta].
type ChatHistory struct {
	// Messages are the conversation's messages (ChatCompletionNewParams.Messages).
	Messages []sdk.ChatCompletionMessageParamUnion
	// Meta, when not nil, holds for each of Messages (same index) what its record knows and
	// a message cannot; shorter than Messages, or nil, leaves the rest without. The messages
	// of one record (its tool messages and the user message after them) share it.
	Meta []MessageMeta
}

// ChatHistoryOf converts a conversation's records and the system prompt a Pipeline takes
// into Chat Completions messages: the messages of the conversation the records hold (the
// chain [transcript.BuildChain] rebuilds from their last message, from its latest compact
// boundary on), each record converted as [ChatParams] converts a request's message (a
// user record with tool results makes a tool message per result, then a user message), and
// the system prompt first. The drops are those of [ChatParams], their paths counting the
// conversation's records.
func ChatHistoryOf(system []*transcript.Text, records []transcript.Record) (ChatHistory, []Drop, error) {
	var h ChatHistory
	if s := systemText(provider.Request{System: system}); s != "" {
		h.Messages = append(h.Messages, sdk.SystemMessage(s))
		h.Meta = append(h.Meta, MessageMeta{})
	}
	msgs, metas, drops, err := historyOf(records, chatUser, chatAssistant, func(m sdk.ChatCompletionMessageParamUnion) (string, bool) {
		if m.OfTool == nil {
			return "", false
		}
		return m.OfTool.ToolCallID, true
	})
	h.Messages, h.Meta = append(h.Messages, msgs...), append(h.Meta, metas...)
	return h, drops, err
}

// chatMessage is the JSON of a Chat Completions message, read.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	raw        []byte
}

// Records converts the history into what a Pipeline takes: the system prompt (the text of
// the system and developer messages, one block each) for [agentctx.Input.System], and one
// user or assistant record per message — a tool message and those right after it make one
// user record, with the user message after them when it opens with the media a tool
// returned, as [ChatParams] carries them — chained by parentUuid, for
// [agentctx.Input.Records]. A record's uuid is derived from the session id, its parent's
// uuid and its message, so the same history gives the same records, and a history that only
// grows keeps its prefix's uuids (and the decisions recorded against them). Errors name the
// message.
func (h ChatHistory) Records(opts RecordOptions) ([]*transcript.Text, []transcript.Record, error) {
	where := func(i int) string { return fmt.Sprintf("agentctx/openai: messages[%d]", i) }
	msgs := make([]chatMessage, len(h.Messages))
	var system []*transcript.Text
	var groups []group
	for i, mp := range h.Messages {
		m := &msgs[i]
		var err error
		if m.raw, err = decode(mp, m); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", where(i), err)
		}
		afterTool := len(groups) > 0 && groups[len(groups)-1].last == i-1 && i > 0 && msgs[i-1].Role == "tool"
		switch m.Role {
		case "system", "developer":
			if system, err = systemTexts(system, m.Content); err != nil {
				return nil, nil, fmt.Errorf("%s.content: %w", where(i), err)
			}
		case "assistant":
			groups = append(groups, group{role: transcript.RoleAssistant, first: i, last: i})
		case "tool", "user":
			if afterTool && (m.Role == "tool" || carries(m.Content, msgs[groups[len(groups)-1].first:i])) {
				groups[len(groups)-1].last = i
				continue
			}
			groups = append(groups, group{role: transcript.RoleUser, first: i, last: i})
		case "function":
			return nil, nil, fmt.Errorf("%s.role: a function message (deprecated) answers no tool call by id: use tool messages", where(i))
		default:
			return nil, nil, fmt.Errorf("%s.role: %q is no role of a Chat Completions message", where(i), m.Role)
		}
	}
	recs, err := records(groups, h.Meta, opts, where, func(g group) (*transcript.Message, error) {
		if g.role == transcript.RoleAssistant {
			return chatAnswer(msgs[g.first].raw, where(g.first))
		}
		return chatUserMessage(msgs[g.first:g.last+1], g.first, where, h.Meta)
	})
	return system, recs, err
}

// chatAnswer converts an assistant message as [MessageFromChat] converts the answer that
// holds it: its text parts make the content (joined by blank lines), its refusal parts the
// refusal, and every other field, extra ones included, goes as it is; the calls' arguments
// are kept as the history holds them.
func chatAnswer(raw []byte, where string) (*transcript.Message, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if c := obj["content"]; len(c) > 0 && c[0] == '[' {
		var parts []struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		}
		if err := json.Unmarshal(c, &parts); err != nil {
			return nil, fmt.Errorf("%s.content: %w", where, err)
		}
		var texts, refusals []string
		for _, p := range parts {
			if p.Type == "refusal" {
				refusals = append(refusals, p.Refusal)
			} else {
				texts = append(texts, p.Text)
			}
		}
		obj["content"] = jsonText(strings.Join(texts, "\n\n"))
		if len(refusals) > 0 {
			obj["refusal"] = jsonText(strings.Join(refusals, "\n\n"))
		}
	}
	msg, err := hostrec.JSON(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	body := fmt.Appendf(nil, `{"id":"","object":"chat.completion","created":0,"model":"","choices":[{"index":0,"finish_reason":"","message":%s}]}`, msg)
	var cc sdk.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	m, err := MessageFromChat(&cc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	args := map[string]string{}
	for _, tc := range cc.Choices[0].Message.ToolCalls {
		args[tc.ID] = tc.Function.Arguments
	}
	verbatimArguments(m, args)
	return m, nil
}

// chatPart is the JSON of a content part of a user message, read.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
	File struct {
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	} `json:"file"`
}

// chatUserMessage converts tool messages and the user message after them (or a user message
// alone) into one user message: a tool_result per tool message, with the media the user
// message carries for it, then the user message's own content.
func chatUserMessage(msgs []chatMessage, first int, where func(int) string, all []MessageMeta) (*transcript.Message, error) {
	var ids, texts []string
	var strs []bool
	media := map[string][]transcript.Block{}
	var own []transcript.Block
	for k, m := range msgs {
		at := where(first + k)
		if m.Role == "tool" {
			t, err := textOf(m.Content)
			if err != nil {
				return nil, fmt.Errorf("%s.content: %w", at, err)
			}
			ids, texts = append(ids, m.ToolCallID), append(texts, strings.Join(t, "\n\n"))
			strs = append(strs, metaAt(all, first+k).StringContent)
			continue
		}
		if len(m.Content) > 0 && m.Content[0] == '"' {
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				return nil, fmt.Errorf("%s.content: %w", at, err)
			}
			own = append(own, &transcript.Text{Text: s})
			continue
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(m.Content, &raws); err != nil {
			return nil, fmt.Errorf("%s.content: neither a string nor a list of parts: %w", at, err)
		}
		carrying := "" // the call whose media the parts are
		for j, raw := range raws {
			var p chatPart
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, fmt.Errorf("%s.content[%d]: %w", at, j, err)
			}
			var b transcript.Block
			switch p.Type {
			case "text":
				carrying = carriedFor(p.Text, ids)
				if carrying != "" {
					continue
				}
				b = &transcript.Text{Text: p.Text}
			case "image_url":
				b = &transcript.Image{Source: mediaSource(p.ImageURL.URL)}
			case "file":
				if p.File.FileData == "" {
					var err error
					if b, err = unknown(raw); err != nil {
						return nil, fmt.Errorf("%s.content[%d]: %w", at, j, err)
					}
					break
				}
				b = &transcript.Document{Source: mediaSource(p.File.FileData), Title: fileTitle(p.File.Filename)}
			default:
				var err error
				if b, err = unknown(raw); err != nil {
					return nil, fmt.Errorf("%s.content[%d]: %w", at, j, err)
				}
			}
			if carrying != "" {
				media[carrying] = append(media[carrying], b)
				continue
			}
			own = append(own, b)
		}
	}
	content := make([]transcript.Block, 0, len(ids)+len(own))
	for k, id := range ids {
		content = append(content, toolResult(id, texts[k], media[id], strs[k]))
	}
	return &transcript.Message{Role: transcript.RoleUser, Content: append(content, own...)}, nil
}

// carriedFor is the call whose media a text introduces (see resultImagesIntro), or "".
func carriedFor(text string, ids []string) string {
	for _, id := range ids {
		if text == fmt.Sprintf(resultImagesIntro, id) {
			return id
		}
	}
	return ""
}

// carries reports whether a user message's content opens with the media of one of the tool
// messages' calls (see resultImagesIntro).
func carries(content json.RawMessage, tools []chatMessage) bool {
	var parts []chatPart
	if json.Unmarshal(content, &parts) != nil || len(parts) == 0 || parts[0].Type != "text" {
		return false
	}
	ids := make([]string, 0, len(tools))
	for _, m := range tools {
		ids = append(ids, m.ToolCallID)
	}
	return carriedFor(parts[0].Text, ids) != ""
}
