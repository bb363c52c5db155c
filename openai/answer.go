package openai

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// MessageFromChat converts a Chat Completions answer into the message an assistant record
// carries: the library's record model is the Anthropic Messages response, so the message
// has the answer's id, type "message", role assistant, its model, and:
//
//   - the reasoning text compatible servers send beside the content ("reasoning_content"
//     from vLLM, llama.cpp and DeepSeek-style servers, "reasoning" from Ollama and newer
//     vLLM) as a thinking block without a signature. It stays in the transcript, but no
//     request carries it again: thinking without a provider's signature is dropped from
//     every later view (see [agentctx.Pipeline]), and [ChatParams] drops thinking anyway;
//   - the content as a text block (none when it is empty or only whitespace), and a
//     refusal as a text block;
//   - each tool call as a tool_use block: its id (one derived from the answer when the
//     server gave none), its function's name, and its arguments as the input, compacted as
//     the transcript stores JSON, so that the next request sends back the same call live
//     and after a resume. Arguments that are not a JSON object cannot be carried faithfully
//     (a tool_use input is an object, and a request repairs any other input to {}), so they
//     make an [*Error] of class [provider.ClassRetryable] naming the field
//     ("choices[0].message.tool_calls[1].function.arguments"): the request was fine, and
//     another answer to it usually is. Empty arguments are {}. In an answer cut short
//     (finish_reason "length" or "content_filter") the last call is usually cut too: its
//     arguments are kept as a JSON string, which a request repairs to {} and reports, and
//     which [agentctx.Pipeline.Recover] withholds with the rest of the cut answer. A tool
//     call of another type than "function" (custom tools, which the conversions never
//     declare) is kept verbatim as an unknown block, which requests leave out;
//   - finish_reason as stop_reason: "stop" → "end_turn" ("stop_sequence" with the
//     sequence when vLLM names the stop string it met; "tool_use" when the answer holds tool
//     calls anyway, as some servers answer; "refusal" for a refusal), "tool_calls" and
//     "function_call" → "tool_use", "length" → "max_tokens" (so [transcript.Message.Truncated]
//     holds and the runtime passes [provider.ErrOutputTruncated] to Recover),
//     "content_filter" → "refusal"; any other value is kept as it is;
//   - the usage with Anthropic's meaning: prompt_tokens count the cached tokens and
//     input_tokens do not, so InputTokens is prompt_tokens − cached_tokens,
//     CacheReadInputTokens is prompt_tokens_details.cached_tokens and OutputTokens is
//     completion_tokens (reasoning included); no usage when the answer reports none, so the
//     pipeline counts the conversation instead of anchoring on zeros.
//
// Only the first choice is read: the conversions never ask for more than one (n). An
// answer with no choice, or an error object in place of the completion, gives an [*Error]
// with its class ([provider.ClassOf]). cc must be the SDK's decoding of the answer (as every
// completion the SDK returns is): the fields it does not model (the reasoning, vLLM's
// stop_reason, an error object) are read from it.
func MessageFromChat(cc *sdk.ChatCompletion) (*transcript.Message, error) {
	if cc == nil {
		return nil, malformed(provider.ClassFatal, "there is no chat completion", nil)
	}
	if raw := cc.RawJSON(); raw != "" {
		if e := answerError([]byte(raw)); e != nil {
			return nil, e
		}
	}
	if len(cc.Choices) == 0 {
		return nil, malformed(provider.ClassFatal, "the answer has no choices", nil)
	}
	ch := cc.Choices[0]
	msg := ch.Message
	m := &transcript.Message{ID: cc.ID, Type: "message", Role: transcript.RoleAssistant, Model: cc.Model}
	if s := chatReasoning(msg); s != "" {
		m.Content = append(m.Content, &transcript.Thinking{Thinking: s})
	}
	if strings.TrimSpace(msg.Content) != "" {
		t := &transcript.Text{Text: msg.Content}
		if len(msg.Annotations) > 0 && msg.JSON.Annotations.Raw() != "" {
			t.Extra = map[string]json.RawMessage{"annotations": json.RawMessage(msg.JSON.Annotations.Raw())}
		}
		m.Content = append(m.Content, t)
	}
	refused := msg.Refusal != ""
	if refused {
		m.Content = append(m.Content, &transcript.Text{Text: msg.Refusal})
	}
	cut := ch.FinishReason == "length" || ch.FinishReason == "content_filter"
	calls := 0
	for j, tc := range msg.ToolCalls {
		if tc.Type != "function" && tc.Type != "" {
			m.Content = append(m.Content, &transcript.UnknownBlock{Type: transcript.BlockKind(tc.Type), JSON: unknownJSON(tc.RawJSON(), tc)})
			continue
		}
		at := fmt.Sprintf("choices[0].message.tool_calls[%d]", j)
		tu, err := toolUse(at+".function", tc.ID, tc.Function.Name, tc.Function.Arguments, cut)
		if err != nil {
			return nil, err
		}
		if tu.ID == "" {
			tu.ID = derivedCallID(cc.ID, cc.Created, j, tu)
		}
		m.Content = append(m.Content, tu)
		calls++
	}
	if fc := msg.FunctionCall; fc.Name != "" || fc.Arguments != "" {
		// The deprecated single function call: no id of its own.
		tu, err := toolUse("choices[0].message.function_call", "", fc.Name, fc.Arguments, cut)
		if err != nil {
			return nil, err
		}
		tu.ID = derivedCallID(cc.ID, cc.Created, len(msg.ToolCalls), tu)
		m.Content = append(m.Content, tu)
		calls++
	}
	m.StopReason, m.StopSequence = chatStopReason(ch, calls > 0, refused)
	m.Usage = chatUsage(cc.Usage)
	if m.ID == "" {
		m.ID = derivedID("chatcmpl-", cc.Created, m)
	}
	return m, nil
}

// MessageFromResponse converts a Responses API answer into the message an assistant
// record carries, as [MessageFromChat] does a Chat Completions answer:
//
//   - a reasoning item is a thinking block holding its summary (its reasoning text when it
//     has no summary) and, among the block's unknown fields, the rest of the item — id,
//     encrypted_content when asked for — as the Codex reader keeps one; with its encrypted
//     content, [ResponsesParams] sends it back as the same item when the Pipeline keeps it
//     ([agentctx.NormalizeConfig.KeepReasoningItems]); otherwise, like any thinking not
//     signed by Anthropic, no later request carries it;
//   - a message item's output_text parts are text blocks (their annotations kept among the
//     block's unknown fields), a refusal part a text block;
//   - a function_call item is a tool_use block: call_id as its id, the name, the arguments
//     as for Chat Completions (an [*Error] naming "output[N].arguments" when they are not a
//     JSON object, except in an incomplete response), and the item's status among the
//     block's unknown fields (not its item id, which no request needs);
//   - any other item (a hosted tool's call, which the conversions never declare) is kept
//     verbatim as an unknown block, which requests leave out;
//   - status "completed" is stop_reason "end_turn", or "tool_use" when the response calls
//     functions, or "refusal" for a refusal; "incomplete" is "max_tokens" when the reason
//     is max_output_tokens (so [transcript.Message.Truncated] holds), "refusal" for
//     content_filter;
//   - usage: InputTokens is input_tokens − input_tokens_details.cached_tokens,
//     CacheReadInputTokens the cached tokens, OutputTokens output_tokens.
//
// A failed response, or an error object in place of the response, gives an [*Error] with
// its class; so does a response that has not finished (queued, in progress, cancelled). r
// must be the SDK's decoding of the answer, as every response the SDK returns is.
func MessageFromResponse(r *responses.Response) (*transcript.Message, error) {
	if r == nil {
		return nil, malformed(provider.ClassFatal, "there is no response", nil)
	}
	if raw := r.RawJSON(); raw != "" {
		if e := answerError([]byte(raw)); e != nil {
			return nil, e
		}
	}
	switch r.Status {
	case responses.ResponseStatusCompleted, responses.ResponseStatusIncomplete, "":
	case responses.ResponseStatusFailed:
		if r.Error.Message != "" || r.Error.Code != "" {
			e := &Error{StatusCode: http.StatusOK, Code: string(r.Error.Code), Message: r.Error.Message, Err: errors.New(r.Error.Message)}
			e.classify(codeStatus("", e.Code), nil)
			return nil, e
		}
		return nil, malformed(provider.ClassFatal, "the response failed without an error", nil)
	default:
		return nil, malformed(provider.ClassFatal, fmt.Sprintf("the response has status %q: it has not finished", r.Status), nil)
	}
	m := &transcript.Message{ID: r.ID, Type: "message", Role: transcript.RoleAssistant, Model: string(r.Model)}
	cut := r.Status == responses.ResponseStatusIncomplete
	calls, refused := 0, false
	for i, it := range r.Output {
		at := fmt.Sprintf("output[%d]", i)
		switch it.Type {
		case "message":
			for _, c := range it.AsMessage().Content {
				switch c.Type {
				case "output_text":
					if strings.TrimSpace(c.Text) == "" {
						continue
					}
					t := &transcript.Text{Text: c.Text}
					if len(c.Annotations) > 0 && c.JSON.Annotations.Raw() != "" {
						t.Extra = map[string]json.RawMessage{"annotations": json.RawMessage(c.JSON.Annotations.Raw())}
					}
					m.Content = append(m.Content, t)
				case "refusal":
					refused = true
					m.Content = append(m.Content, &transcript.Text{Text: c.Refusal})
				default:
					m.Content = append(m.Content, &transcript.UnknownBlock{Type: transcript.BlockKind(c.Type), JSON: unknownJSON(c.RawJSON(), c)})
				}
			}
		case "reasoning":
			rs := it.AsReasoning()
			var texts []string
			for _, s := range rs.Summary {
				texts = append(texts, s.Text)
			}
			if len(texts) == 0 {
				for _, c := range rs.Content {
					texts = append(texts, c.Text)
				}
			}
			m.Content = append(m.Content, &transcript.Thinking{Thinking: strings.Join(texts, "\n\n"), Extra: itemFields(it.RawJSON(), "type")})
		case "function_call":
			fc := it.AsFunctionCall()
			tu, err := toolUse(at, fc.CallID, fc.Name, fc.Arguments, cut)
			if err != nil {
				return nil, err
			}
			if tu.ID == "" {
				tu.ID = derivedCallID(r.ID, int64(r.CreatedAt), i, tu)
			}
			// The item's own id is left out: a tool_use's id is the call_id, and a block's
			// unknown fields must not repeat its known ones.
			tu.Extra = itemFields(it.RawJSON(), "type", "call_id", "name", "arguments", "id")
			m.Content = append(m.Content, tu)
			calls++
		default:
			m.Content = append(m.Content, &transcript.UnknownBlock{Type: transcript.BlockKind(it.Type), JSON: unknownJSON(it.RawJSON(), it)})
		}
	}
	switch {
	case cut:
		switch reason := r.IncompleteDetails.Reason; reason {
		case "max_output_tokens", "":
			m.StopReason = "max_tokens"
		case "content_filter":
			m.StopReason = "refusal"
		default:
			m.StopReason = reason
		}
	case calls > 0:
		m.StopReason = "tool_use"
	case refused:
		m.StopReason = "refusal"
	default:
		m.StopReason = "end_turn"
	}
	u := r.Usage
	if u.InputTokens != 0 || u.OutputTokens != 0 {
		cached := int(u.InputTokensDetails.CachedTokens)
		m.Usage = &transcript.Usage{InputTokens: max(0, int(u.InputTokens)-cached), CacheReadInputTokens: cached, OutputTokens: int(u.OutputTokens)}
	}
	if m.ID == "" {
		m.ID = derivedID("resp_", int64(r.CreatedAt), m)
	}
	return m, nil
}

// malformed is the error of an answer the library cannot turn into a message.
func malformed(class provider.ErrorClass, msg string, err error) *Error {
	if err == nil {
		err = errors.New(msg)
	}
	return &Error{Class: class, StatusCode: http.StatusOK, Message: msg, Err: err}
}

// toolUse makes the tool_use block of a function call; at names the call in the answer.
// cut says the answer stopped before its end, where a call's arguments may be cut too.
func toolUse(at, id, name, args string, cut bool) (*transcript.ToolUse, error) {
	if name == "" && !cut {
		return nil, malformed(provider.ClassRetryable, fmt.Sprintf("the answer's %s.name is empty: the call names no function", at), nil)
	}
	input, err := callInput(args)
	if err != nil {
		if !cut {
			return nil, malformed(provider.ClassRetryable, fmt.Sprintf("the answer's %s.arguments are not a JSON object (%v): %s", at, err, excerpt(args)), err)
		}
		input = jsonText(args)
	}
	return &transcript.ToolUse{ID: id, Name: name, Input: input}, nil
}

// callInput is a call's arguments as a tool_use input: the JSON object compacted, as the
// transcript stores it; {} for no arguments.
func callInput(args string) (json.RawMessage, error) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(args)); err != nil {
		return nil, err
	}
	if buf.Bytes()[0] != '{' {
		return nil, errors.New("valid JSON, but not an object")
	}
	return buf.Bytes(), nil
}

// jsonText is s as a JSON string, without the HTML escaping the transcript does not write.
func jsonText(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// excerpt quotes the start of a malformed value for an error message.
func excerpt(s string) string {
	const n = 200
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:n]) + "…"
}

// chatReasoning is the reasoning text a compatible server put beside the content.
func chatReasoning(msg sdk.ChatCompletionMessage) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		var s string
		if f, ok := msg.JSON.ExtraFields[key]; ok && json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// chatStopReason maps a choice's finish_reason onto stop_reason (and stop_sequence).
func chatStopReason(ch sdk.ChatCompletionChoice, calls, refused bool) (string, string) {
	switch ch.FinishReason {
	case "length":
		return "max_tokens", ""
	case "content_filter":
		return "refusal", ""
	case "tool_calls", "function_call":
		return "tool_use", ""
	case "stop", "":
		var seq string
		if f, ok := ch.JSON.ExtraFields["stop_reason"]; ok {
			_ = json.Unmarshal([]byte(f.Raw()), &seq) // vLLM: the stop string met, or a token id
		}
		switch {
		case calls:
			return "tool_use", ""
		case refused:
			return "refusal", ""
		case seq != "":
			return "stop_sequence", seq
		}
		return "end_turn", ""
	}
	return ch.FinishReason, ""
}

// chatUsage converts Chat Completions usage; nil when the answer reports none.
func chatUsage(u sdk.CompletionUsage) *transcript.Usage {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		return nil
	}
	return usage(u)
}

// itemFields is a Responses item's fields but the named ones, kept among a block's unknown
// fields; nil when none is left.
func itemFields(raw string, without ...string) map[string]json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &fields) != nil {
		return nil
	}
	for _, k := range without {
		delete(fields, k)
	}
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// unknownJSON is the JSON an unknown block keeps: the item as it came, or as the SDK holds
// it when it was not decoded from an answer.
func unknownJSON(raw string, v any) json.RawMessage {
	if raw != "" {
		return json.RawMessage(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// derivedCallID is the id of a call the server sent without one: derived from the answer's
// id and time and the call itself, so the same answer gives the same id.
func derivedCallID(answerID string, created int64, index int, tu *transcript.ToolUse) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%s\x00", answerID, created, index, tu.Name)
	h.Write(tu.Input)
	return "call_" + hex.EncodeToString(h.Sum(nil)[:12])
}

// derivedID is the id of an answer the server sent without one, derived from its time and
// the message.
func derivedID(prefix string, created int64, m *transcript.Message) string {
	b, _ := json.Marshal(m) // an error leaves b nil: the id is still well formed
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00", created)
	h.Write(b)
	return prefix + hex.EncodeToString(h.Sum(nil)[:12])
}
