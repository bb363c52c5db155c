package openai

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/agentctx/agentctx/internal/hostrec"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// ResponsesParams converts req into Responses API parameters for a stateless turn (the
// whole conversation as input items, store off, no previous_response_id):
//
//   - the system prompt is the instructions;
//   - user and assistant text are message items; images are input_image items with data
//     URLs, PDFs input_file items;
//   - a tool_use is a function_call item and its tool_result the function_call_output item
//     with the same call_id, right after the calls of its turn; the output holds the text
//     and, since Responses outputs can, the images and PDFs the tool returned;
//   - tools become function tools (strict off: a caller's schema need not meet strict
//     mode's rules), tool_choice maps as for [ChatParams], max_tokens is max_output_tokens.
//
// A reasoning item must travel with the function_call it preceded, and it can only be one
// the OpenAI model wrote: a thinking block with an "encrypted_content" field and no
// signature, as [MessageFromResponse] records a reasoning item, goes back as that item,
// every field as it came, before the message's text and calls (the Pipeline keeps such a
// block with [agentctx.NormalizeConfig.KeepReasoningItems]). Thinking signed by Anthropic
// cannot become one and is dropped, like the other blocks [ChatParams] drops; the drops are
// returned.
func ResponsesParams(req provider.Request, opts Options) (responses.ResponseNewParams, []Drop, error) {
	var drops []Drop
	p := responses.ResponseNewParams{
		Model:           shared.ResponsesModel(model(req, opts)),
		MaxOutputTokens: sdk.Int(int64(req.MaxTokens)),
		Temperature:     opts.Temperature,
		TopP:            opts.TopP,
		Store:           sdk.Bool(false),
	}
	if opts.ReasoningEffort != "" {
		p.Reasoning = shared.ReasoningParam{Effort: opts.ReasoningEffort}
	}
	if opts.SafetyIdentifier != "" {
		p.SafetyIdentifier = sdk.String(opts.SafetyIdentifier)
	}
	if opts.PromptCacheKey != "" {
		p.PromptCacheKey = sdk.String(opts.PromptCacheKey)
	}
	if s := systemText(req); s != "" {
		p.Instructions = sdk.String(s)
	}
	var items responses.ResponseInputParam
	for i, m := range req.Messages {
		switch m.Role {
		case transcript.RoleAssistant:
			items = append(items, responsesAssistant(i, m.Content, &drops)...)
		case transcript.RoleUser:
			items = append(items, responsesUser(i, m.Content, &drops)...)
		default:
			return p, drops, fmt.Errorf("agentctx/openai: messages[%d]: role %q is neither user nor assistant", i, m.Role)
		}
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	p.ContextManagement = contextManagement(req.ContextManagement, &drops)
	ts, err := tools(req, &drops)
	if err != nil {
		return p, drops, err
	}
	for _, t := range ts {
		ft := responses.FunctionToolParam{Name: t.name, Parameters: t.parameters, Strict: sdk.Bool(false)}
		if t.description != "" {
			ft.Description = sdk.String(t.description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &ft})
	}
	if tc := req.ToolChoice; tc != nil && len(p.Tools) > 0 {
		p.ToolChoice = responsesToolChoice(tc)
	}
	return p, drops, nil
}

func responsesToolChoice(tc *provider.ToolChoice) responses.ResponseNewParamsToolChoiceUnion {
	mode := responses.ToolChoiceOptionsAuto
	switch tc.Type {
	case "any":
		mode = responses.ToolChoiceOptionsRequired
	case "none":
		mode = responses.ToolChoiceOptionsNone
	case "tool":
		return responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: tc.Name}}
	}
	return responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: sdk.Opt(mode)}
}

// responsesAssistant converts an assistant message: its text as one message item, then its
// calls as function_call items.
func responsesAssistant(i int, blocks []transcript.Block, drops *[]Drop) []responses.ResponseInputItemUnionParam {
	var texts []string
	var lead, calls []responses.ResponseInputItemUnionParam
	for j, b := range blocks {
		if item, ok := compactionItem(b); ok {
			lead = append(lead, item)
			continue
		}
		if item, ok := reasoningItem(b); ok {
			lead = append(lead, item)
			continue
		}
		switch b := b.(type) {
		case *transcript.Text:
			texts = append(texts, b.Text)
		case *transcript.ToolUse:
			calls = append(calls, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
				CallID: b.ID, Name: b.Name, Arguments: arguments(b.Input)}})
		default:
			*drops = append(*drops, Drop{Path: path(i, j), Kind: b.Kind(), Reason: dropReason(b)})
		}
	}
	out := lead
	if len(texts) > 0 {
		out = append(out, responses.ResponseInputItemParamOfMessage(strings.Join(texts, "\n\n"), responses.EasyInputMessageRoleAssistant))
	}
	return append(out, calls...)
}

// responsesUser converts a user message: a function_call_output per tool_result, then the
// message's own content as a message item.
func responsesUser(i int, blocks []transcript.Block, drops *[]Drop) []responses.ResponseInputItemUnionParam {
	var out []responses.ResponseInputItemUnionParam
	var own responses.ResponseInputMessageContentListParam
	for j, b := range blocks {
		if item, ok := compactionItem(b); ok {
			out = append(out, item)
			continue
		}
		r, ok := b.(*transcript.ToolResult)
		if !ok {
			own = append(own, responsesParts(b, path(i, j), drops)...)
			continue
		}
		text, media := resultParts(r)
		output := responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: sdk.String(text)}
		if len(media) > 0 {
			list := responses.ResponseFunctionCallOutputItemListParam{{OfInputText: &responses.ResponseInputTextContentParam{Text: text}}}
			for k, mb := range media {
				list = append(list, outputParts(mb, nestedPath(i, j, k), drops)...)
			}
			output = responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: list}
		}
		out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: sdk.String(r.ToolUseID), Output: output}})
	}
	if len(own) > 0 {
		out = append(out, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role: responses.EasyInputMessageRoleUser, Content: responses.EasyInputMessageContentUnionParam{OfInputItemContentList: own}}})
	}
	return out
}

// responsesParts converts a block of a user message into input content.
func responsesParts(b transcript.Block, at string, drops *[]Drop) []responses.ResponseInputContentUnionParam {
	switch b := b.(type) {
	case *transcript.Image:
		if u, ok := imageURL(b); ok {
			return []responses.ResponseInputContentUnionParam{{OfInputImage: &responses.ResponseInputImageParam{
				ImageURL: sdk.String(u), Detail: responses.ResponseInputImageDetailAuto}}}
		}
		*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropImageFile})
		return nil
	case *transcript.Document:
		switch {
		case b.Source.Type == "base64" && b.Source.MediaType == "application/pdf":
			return []responses.ResponseInputContentUnionParam{{OfInputFile: &responses.ResponseInputFileParam{
				FileData: sdk.String(dataURL(b.Source)), Filename: sdk.String(fileName(b))}}}
		case b.Source.Type == "url":
			return []responses.ResponseInputContentUnionParam{{OfInputFile: &responses.ResponseInputFileParam{FileURL: sdk.String(b.Source.URL)}}}
		case b.Source.Type == "text":
			return []responses.ResponseInputContentUnionParam{{OfInputText: &responses.ResponseInputTextParam{Text: documentText(b)}}}
		}
		*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropDocumentSource})
		return nil
	}
	if s, ok := blockText(b); ok {
		return []responses.ResponseInputContentUnionParam{{OfInputText: &responses.ResponseInputTextParam{Text: s}}}
	}
	*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropReason(b)})
	return nil
}

// outputParts converts a media block a tool returned into function_call_output content.
func outputParts(b transcript.Block, at string, drops *[]Drop) []responses.ResponseFunctionCallOutputItemUnionParam {
	switch b := b.(type) {
	case *transcript.Image:
		if u, ok := imageURL(b); ok {
			return []responses.ResponseFunctionCallOutputItemUnionParam{{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: sdk.String(u)}}}
		}
		*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropImageFile})
	case *transcript.Document:
		switch {
		case b.Source.Type == "base64" && b.Source.MediaType == "application/pdf":
			return []responses.ResponseFunctionCallOutputItemUnionParam{{OfInputFile: &responses.ResponseInputFileContentParam{
				FileData: sdk.String(dataURL(b.Source)), Filename: sdk.String(fileName(b))}}}
		case b.Source.Type == "text":
			return []responses.ResponseFunctionCallOutputItemUnionParam{{OfInputText: &responses.ResponseInputTextContentParam{Text: documentText(b)}}}
		}
		*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropDocumentSource})
	}
	return nil
}

// imageURL is an image's URL: a data URL for inline data; false for a file id.
func imageURL(b *transcript.Image) (string, bool) {
	switch b.Source.Type {
	case "base64":
		return dataURL(b.Source), true
	case "url":
		return b.Source.URL, true
	}
	return "", false
}

// reasoningItem returns the reasoning item an OpenAI model wrote, which the transcript holds
// as a thinking block with its encrypted content among the block's unknown fields and no
// signature: the item's fields as they came, with its type (and an empty summary, which
// the API requires, when it had none).
func reasoningItem(b transcript.Block) (responses.ResponseInputItemUnionParam, bool) {
	t, ok := b.(*transcript.Thinking)
	if !ok || !isReasoningItem(t) {
		return responses.ResponseInputItemUnionParam{}, false
	}
	fields := maps.Clone(t.Extra)
	fields["type"] = json.RawMessage(`"reasoning"`)
	if _, ok := fields["summary"]; !ok {
		fields["summary"] = json.RawMessage(`[]`)
	}
	raw, err := hostrec.JSON(fields)
	if err != nil {
		return responses.ResponseInputItemUnionParam{}, false // a field that is no JSON: left to the drop rules
	}
	return param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(raw)), true
}

// isReasoningItem reports whether t is a Responses reasoning item: encrypted content, no
// signature.
func isReasoningItem(t *transcript.Thinking) bool {
	_, ok := t.Extra["encrypted_content"]
	return ok && t.Signature == ""
}
