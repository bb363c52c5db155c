package openai

import (
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// ChatParams converts req into Chat Completions parameters, one request for the turn:
//
//   - the system prompt is the first message, role "system";
//   - an assistant message's text is its content and its tool_use blocks are its tool_calls
//     (id, name, the input as the arguments string);
//   - a user message's tool_result blocks become one "tool" message each, right after the
//     assistant message that made the calls, answering them by tool_call_id; a failed call's
//     text says so; the rest of the user message (text, images as image_url parts with data
//     URLs, PDFs as file parts) follows as a user message;
//   - images and PDFs a tool returned, which a tool message cannot hold, open that user
//     message, introduced by the call's id;
//   - the tools become function tools (their input_schema the parameters), tool_choice
//     auto / any / none / tool becomes "auto" / "required" / "none" / the named function,
//     max_tokens becomes max_completion_tokens (max_tokens with [Options.LegacyMaxTokens]).
//
// What Chat Completions cannot carry is left out and listed in the returned drops: thinking
// and redacted_thinking (signed by Anthropic, not replayable anywhere else), server tools
// and their results, cache_edits, media named by Anthropic file ids. Cache markers have no
// equivalent (OpenAI caches prefixes on its own; see [Options.PromptCacheKey]).
func ChatParams(req provider.Request, opts Options) (sdk.ChatCompletionNewParams, []Drop, error) {
	var drops []Drop
	p := sdk.ChatCompletionNewParams{Model: shared.ChatModel(model(req, opts)), Temperature: opts.Temperature, TopP: opts.TopP, ReasoningEffort: opts.ReasoningEffort}
	if opts.LegacyMaxTokens {
		p.MaxTokens = sdk.Int(int64(req.MaxTokens))
	} else {
		p.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
	}
	if len(opts.StopSequences) > 0 {
		p.Stop = sdk.ChatCompletionNewParamsStopUnion{OfStringArray: opts.StopSequences}
	}
	if opts.SafetyIdentifier != "" {
		p.SafetyIdentifier = sdk.String(opts.SafetyIdentifier)
	}
	if opts.PromptCacheKey != "" {
		p.PromptCacheKey = sdk.String(opts.PromptCacheKey)
	}
	if s := systemText(req); s != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(s))
	}
	for i, m := range req.Messages {
		var msgs []sdk.ChatCompletionMessageParamUnion
		switch m.Role {
		case transcript.RoleAssistant:
			msgs = chatAssistant(i, m.Content, &drops)
		case transcript.RoleUser:
			msgs = chatUser(i, m.Content, &drops)
		default:
			return p, drops, fmt.Errorf("agentctx/openai: messages[%d]: role %q is neither user nor assistant", i, m.Role)
		}
		p.Messages = append(p.Messages, msgs...)
	}
	ts, err := tools(req, &drops)
	if err != nil {
		return p, drops, err
	}
	for _, t := range ts {
		fn := shared.FunctionDefinitionParam{Name: t.name, Parameters: t.parameters}
		if t.description != "" {
			fn.Description = sdk.String(t.description)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(fn))
	}
	if tc := req.ToolChoice; tc != nil && len(p.Tools) > 0 {
		p.ToolChoice = chatToolChoice(tc)
	}
	return p, drops, nil
}

func chatToolChoice(tc *provider.ToolChoice) sdk.ChatCompletionToolChoiceOptionUnionParam {
	switch tc.Type {
	case "any":
		return sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String("required")}
	case "none":
		return sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String("none")}
	case "tool":
		return sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: tc.Name})
	}
	return sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String("auto")}
}

// chatAssistant converts an assistant message: its text and its tool calls; nothing when
// neither is left.
func chatAssistant(i int, blocks []transcript.Block, drops *[]Drop) []sdk.ChatCompletionMessageParamUnion {
	var texts []string
	var calls []sdk.ChatCompletionMessageToolCallUnionParam
	for j, b := range blocks {
		switch b := b.(type) {
		case *transcript.Text:
			texts = append(texts, b.Text)
		case *transcript.ToolUse:
			calls = append(calls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID: b.ID, Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: arguments(b.Input)}}})
		default:
			*drops = append(*drops, Drop{Path: path(i, j), Kind: b.Kind(), Reason: dropReason(b)})
		}
	}
	if len(texts) == 0 && len(calls) == 0 {
		return nil
	}
	a := sdk.ChatCompletionAssistantMessageParam{ToolCalls: calls}
	if len(texts) > 0 {
		a.Content.OfString = sdk.String(strings.Join(texts, "\n\n"))
	}
	return []sdk.ChatCompletionMessageParamUnion{{OfAssistant: &a}}
}

// chatUser converts a user message: a tool message per tool_result, then a user message
// with the media the tools returned and the message's own content.
func chatUser(i int, blocks []transcript.Block, drops *[]Drop) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	var carried, own []sdk.ChatCompletionContentPartUnionParam
	for j, b := range blocks {
		r, ok := b.(*transcript.ToolResult)
		if !ok {
			own = append(own, chatParts(b, path(i, j), drops)...)
			continue
		}
		text, media := resultParts(r)
		out = append(out, sdk.ToolMessage(text, r.ToolUseID))
		var parts []sdk.ChatCompletionContentPartUnionParam
		for k, mb := range media {
			parts = append(parts, chatParts(mb, nestedPath(i, j, k), drops)...)
		}
		if len(parts) > 0 {
			carried = append(carried, sdk.TextContentPart(fmt.Sprintf(resultImagesIntro, r.ToolUseID)))
			carried = append(carried, parts...)
		}
	}
	parts := append(carried, own...)
	if len(parts) == 0 {
		return out
	}
	return append(out, sdk.ChatCompletionMessageParamUnion{OfUser: &sdk.ChatCompletionUserMessageParam{Content: chatContent(parts)}})
}

// chatContent is a user message's content: a string when it is all text (which every
// compatible server reads), else the parts.
func chatContent(parts []sdk.ChatCompletionContentPartUnionParam) sdk.ChatCompletionUserMessageParamContentUnion {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.OfText == nil {
			return sdk.ChatCompletionUserMessageParamContentUnion{OfArrayOfContentParts: parts}
		}
		texts = append(texts, p.OfText.Text)
	}
	return sdk.ChatCompletionUserMessageParamContentUnion{OfString: sdk.String(strings.Join(texts, "\n\n"))}
}

// chatParts converts a block of a user message into content parts; none (and a drop) for
// a block Chat Completions cannot carry.
func chatParts(b transcript.Block, at string, drops *[]Drop) []sdk.ChatCompletionContentPartUnionParam {
	switch b := b.(type) {
	case *transcript.Image:
		switch b.Source.Type {
		case "base64":
			return []sdk.ChatCompletionContentPartUnionParam{sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: dataURL(b.Source)})}
		case "url":
			return []sdk.ChatCompletionContentPartUnionParam{sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: b.Source.URL})}
		}
		*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropImageFile})
		return nil
	case *transcript.Document:
		switch {
		case b.Source.Type == "base64" && b.Source.MediaType == "application/pdf":
			f := sdk.ChatCompletionContentPartFileFileParam{FileData: sdk.String(dataURL(b.Source)), Filename: sdk.String(fileName(b))}
			return []sdk.ChatCompletionContentPartUnionParam{sdk.FileContentPart(f)}
		case b.Source.Type == "text":
			return []sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart(documentText(b))}
		}
		*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropDocumentSource})
		return nil
	}
	if s, ok := blockText(b); ok {
		return []sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart(s)}
	}
	*drops = append(*drops, Drop{Path: at, Kind: b.Kind(), Reason: dropReason(b)})
	return nil
}

// fileName is the name a PDF is sent under.
func fileName(d *transcript.Document) string {
	if d.Title != "" {
		return d.Title
	}
	return "document.pdf"
}
