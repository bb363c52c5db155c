package openai

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

// Options are a turn's settings besides its context, for both APIs. The zero value sends
// the request with the model it names.
type Options struct {
	// Model is the OpenAI (or compatible server's) model. Empty: the request's model.
	Model string
	// Temperature and TopP are the request's sampling settings, when set.
	Temperature, TopP param.Opt[float64]
	// StopSequences are Chat Completions' "stop" (the Responses API has none).
	StopSequences []string
	// ReasoningEffort is the reasoning effort of a reasoning model; empty: the model's
	// default.
	ReasoningEffort shared.ReasoningEffort
	// SafetyIdentifier is an opaque id of the end user.
	SafetyIdentifier string
	// PromptCacheKey groups requests that share a prefix, for OpenAI's automatic prompt
	// cache (the request's cache_control markers have no OpenAI equivalent).
	PromptCacheKey string
	// LegacyMaxTokens sends Chat Completions' max_tokens instead of max_completion_tokens,
	// for compatible servers that only read the older field.
	LegacyMaxTokens bool
	// Stream sends the turn streaming ([Client.Send], [Client.SendResponses]) and
	// assembles the streamed answer into the message a non-streaming turn returns, for
	// servers or proxies that cut long non-streaming requests. A [github.com/agentctx/agentctx/summarize.Summarizer] streams when
	// this or its own Stream is set.
	Stream bool
	// RequestOptions are passed to the SDK for this turn: retries, timeouts, headers. The
	// client's own options (base URL, key, retry policy) apply first.
	RequestOptions []option.RequestOption
}

// Drop is a part of the request the conversion could not carry to OpenAI, and why.
type Drop struct {
	// Path is where it was: "messages.3.content.0", "tools.2", "thinking".
	Path string
	// Kind is the block's kind, or "tool" for a tool definition.
	Kind transcript.BlockKind
	// Reason says why it was left out.
	Reason string
}

// The words the conversion sends to the model in place of what OpenAI cannot carry as it
// was. They are the library's own.
const (
	emptyResultText    = "(the tool returned no output)"
	errorResultPrefix  = "The tool call failed:\n"
	imageResultText    = "The tool returned %d image(s); they follow in the next message."
	resultImagesIntro  = "The image(s) returned by tool call %s:"
	toolReferenceText  = "The tool %s is available."
	searchResultFormat = "Search result %q (%s):\n%s"
)

// The reasons of the drops.
const (
	dropThinking       = "thinking is signed by the provider that wrote it: OpenAI cannot verify or replay it, and no reasoning item can be made from it"
	dropReasoning      = "reasoning an OpenAI model wrote: only the Responses API carries it back"
	dropServerTool     = "a server tool of the Anthropic API: OpenAI runs none of them"
	dropCacheEdits     = "cache editing is an Anthropic prompt-cache feature"
	dropImageFile      = "an image named by an Anthropic file id cannot be sent to OpenAI"
	dropDocumentSource = "a document source OpenAI cannot read"
	dropUnknown        = "a block kind OpenAI has no equivalent for"
	dropContextEdit    = "Anthropic's context editing has no Responses counterpart"
)

// tool is a client tool definition in the shape both APIs declare functions.
type tool struct {
	name, description string
	parameters        map[string]any
}

// tools reads the request's client tool definitions; server tools (a "type" other than
// "custom", no input_schema) are dropped.
func tools(req provider.Request, drops *[]Drop) ([]tool, error) {
	var out []tool
	for i, t := range req.Tools {
		var def struct {
			Type        string         `json:"type"`
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"input_schema"`
		}
		if err := json.Unmarshal(t.Definition, &def); err != nil {
			return nil, fmt.Errorf("agentctx/openai: tools[%d] (%s): %w", i, t.Name, err)
		}
		if def.InputSchema == nil && def.Type != "" && def.Type != "custom" {
			*drops = append(*drops, Drop{Path: fmt.Sprintf("tools.%d", i), Kind: "tool", Reason: dropServerTool})
			continue
		}
		if def.InputSchema == nil {
			def.InputSchema = map[string]any{"type": "object"}
		}
		out = append(out, tool{name: def.Name, description: def.Description, parameters: def.InputSchema})
	}
	return out, nil
}

// systemText is the request's system prompt as one text.
func systemText(req provider.Request) string {
	parts := make([]string, 0, len(req.System))
	for _, t := range req.System {
		parts = append(parts, t.Text)
	}
	return strings.Join(parts, "\n\n")
}

// dataURL is an inline image or file as a data: URL.
func dataURL(s transcript.MediaSource) string {
	return "data:" + s.MediaType + ";base64," + s.Data
}

// arguments is a tool call's input as the JSON string OpenAI carries.
func arguments(in json.RawMessage) string {
	if len(in) == 0 {
		return "{}"
	}
	return string(in)
}

// resultParts splits a tool_result's content into its text (joined; the error prefix when
// it failed; a stand-in when there is none) and its media blocks.
func resultParts(r *transcript.ToolResult) (string, []transcript.Block) {
	var texts []string
	var media []transcript.Block
	for _, b := range r.Content {
		switch b := b.(type) {
		case *transcript.Image, *transcript.Document:
			media = append(media, b)
		default:
			if s, ok := blockText(b); ok {
				texts = append(texts, s)
			}
		}
	}
	text := strings.Join(texts, "\n\n")
	switch {
	case text == "" && len(media) > 0:
		text = fmt.Sprintf(imageResultText, len(media))
	case text == "":
		text = emptyResultText
	}
	if r.IsError {
		text = errorResultPrefix + text
	}
	return text, media
}

// blockText is the text a text-like block stands for: a text block, a tool reference, a
// search result.
func blockText(b transcript.Block) (string, bool) {
	switch b := b.(type) {
	case *transcript.Text:
		return b.Text, b.Text != ""
	case *transcript.ToolReference:
		return fmt.Sprintf(toolReferenceText, b.ToolName), true
	case *transcript.UnknownBlock:
		if b.Type != transcript.KindSearchResult {
			return "", false
		}
		var sr struct {
			Title   string `json:"title"`
			Source  string `json:"source"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(b.JSON, &sr) != nil {
			return "", false
		}
		var texts []string
		for _, c := range sr.Content {
			texts = append(texts, c.Text)
		}
		return fmt.Sprintf(searchResultFormat, sr.Title, sr.Source, strings.Join(texts, "\n")), true
	}
	return "", false
}

// documentText is a plain-text document as text, with its title.
func documentText(d *transcript.Document) string {
	if d.Title == "" {
		return d.Source.Data
	}
	return d.Title + "\n\n" + d.Source.Data
}

// dropReason says why a block that is not carried is left out.
func dropReason(b transcript.Block) string {
	if t, ok := b.(*transcript.Thinking); ok && isReasoningItem(t) {
		return dropReasoning
	}
	switch b.Kind() {
	case transcript.KindThinking, transcript.KindRedactedThinking:
		return dropThinking
	case transcript.KindServerToolUse:
		return dropServerTool
	case transcript.KindCacheEdits:
		return dropCacheEdits
	}
	if _, ok := b.(*transcript.ServerToolResult); ok {
		return dropServerTool
	}
	return dropUnknown
}

func path(msg, block int) string { return fmt.Sprintf("messages.%d.content.%d", msg, block) }

func nestedPath(msg, block, inner int) string {
	return fmt.Sprintf("messages.%d.content.%d.content.%d", msg, block, inner)
}

// model is the model a converted request names.
func model(req provider.Request, opts Options) string {
	if opts.Model != "" {
		return opts.Model
	}
	return req.Model
}
