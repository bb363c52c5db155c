package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// Options are a turn's settings besides its context: the body fields the pipeline does not
// decide, and how the turn is sent. The zero value sends the request as the pipeline built
// it, streaming only when the SDK requires it (see [Client.Send]).
type Options struct {
	// StopSequences are the request's "stop_sequences".
	StopSequences []string
	// UserID is the request's metadata.user_id: an opaque id of the end user.
	UserID string
	// ServiceTier is the request's "service_tier" ("auto" or "standard_only"); empty: the
	// provider's default.
	ServiceTier sdk.MessageNewParamsServiceTier
	// Temperature and TopP are sent as "temperature" and "top_p" when set. The SDK has no
	// fields for them: the API version it sends (2026-10-21) refuses both, even at their
	// defaults, with a 400. Set them only together with a RequestOption that selects an API
	// version or an endpoint that still accepts them.
	Temperature, TopP param.Opt[float64]

	// Stream sends the turn as a streamed request and accumulates the streamed message.
	// [Client.Send] also streams, whatever Stream says, when OnEvent is set or when the
	// SDK would refuse the request non-streaming (a large max_tokens).
	Stream bool
	// OnEvent, when set, receives every event of a streamed turn as it arrives (text to
	// show, tool input deltas), before it is accumulated. It runs on the caller's goroutine.
	OnEvent func(sdk.MessageStreamEventUnion)
	// RequestOptions are passed to the SDK for this turn after the request's own (the
	// anthropic-beta headers): retries (option.WithMaxRetries), timeouts
	// (option.WithRequestTimeout), headers, a base URL. Retries, backoff and retry-after are
	// the SDK's; the client's own options apply first.
	RequestOptions []option.RequestOption
}

// Params converts req into the SDK's request parameters, with the body fields of opts. The
// parameters marshal to the same JSON as [provider.Request.MarshalJSON] (plus the fields
// opts sets): every block the pipeline emits is carried by the SDK's own type, and what the
// SDK has no type or field for — cache_edits blocks, a tool_result's cache_reference or
// bare-string content, a block or source shape newer than the SDK — travels through the
// SDK's raw-JSON and extra-field escape hatches, as do a compaction block the Pipeline sends
// back as the provider returned it and the request's context_management. The
// anthropic-beta header values of req.Betas are not body fields: [BetaOptions] turns them
// into request options.
func Params(req provider.Request, opts Options) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:         sdk.Model(req.Model),
		MaxTokens:     int64(req.MaxTokens),
		StopSequences: opts.StopSequences,
		ServiceTier:   opts.ServiceTier,
	}
	if opts.UserID != "" {
		p.Metadata = sdk.MetadataParam{UserID: sdk.String(opts.UserID)}
	}
	for i, t := range req.System {
		tb, err := textParam(t)
		if err != nil {
			return p, fmt.Errorf("agentctx/anthropic: system[%d]: %w", i, err)
		}
		p.System = append(p.System, tb)
	}
	p.Messages = make([]sdk.MessageParam, 0, len(req.Messages))
	for i, m := range req.Messages {
		mp, err := messageParam(m.Role, m.Content)
		if err != nil {
			return p, fmt.Errorf("agentctx/anthropic: messages[%d]: %w", i, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for i, t := range req.Tools {
		tp, err := toolParam(t)
		if err != nil {
			return p, fmt.Errorf("agentctx/anthropic: tools[%d] (%s): %w", i, t.Name, err)
		}
		p.Tools = append(p.Tools, tp)
	}
	if tc := req.ToolChoice; tc != nil {
		p.ToolChoice = toolChoiceParam(tc)
	}
	if th := req.Thinking; th != nil {
		p.Thinking = thinkingParam(th)
	}
	extra := map[string]any{}
	if len(req.ContextManagement) > 0 {
		// The provider's context management (agentctx.ProviderContextConfig): a beta field
		// the SDK's MessageNewParams has none for.
		extra["context_management"] = req.ContextManagement
	}
	if opts.Temperature.Valid() {
		extra["temperature"] = opts.Temperature.Value
	}
	if opts.TopP.Valid() {
		extra["top_p"] = opts.TopP.Value
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return p, nil
}

// BetaHeader is the HTTP header that carries [provider.Request.Betas].
const BetaHeader = "anthropic-beta"

// BetaOptions returns the request options that send req.Betas, one anthropic-beta header
// value each (the cache-editing beta when the request carries cache_edits); nil when there
// are none.
func BetaOptions(req provider.Request) []option.RequestOption {
	var opts []option.RequestOption
	for _, b := range req.Betas {
		opts = append(opts, option.WithHeaderAdd(BetaHeader, b))
	}
	return opts
}

// cacheControl converts a cache marker; a marker of another type than "ephemeral" (the only
// one the API has) is refused rather than silently sent as ephemeral.
func cacheControl(cc *transcript.CacheControl) (sdk.CacheControlEphemeralParam, error) {
	if cc == nil {
		return sdk.CacheControlEphemeralParam{}, nil
	}
	if cc.Type != "ephemeral" {
		return sdk.CacheControlEphemeralParam{}, fmt.Errorf("cache_control type %q is not ephemeral", cc.Type)
	}
	p := sdk.NewCacheControlEphemeralParam() // sets the type: a zero marker would be omitted
	p.TTL = sdk.CacheControlEphemeralTTL(cc.TTL)
	return p, nil
}

// extras collects the fields of a block the SDK type has no field for; nil when none.
type extras map[string]any

func (e *extras) set(key string, v any) {
	if *e == nil {
		*e = extras{}
	}
	(*e)[key] = v
}

func (e *extras) add(m map[string]json.RawMessage) {
	for k, v := range m {
		e.set(k, v)
	}
}

// apply sets the collected fields on an SDK param struct.
func (e extras) apply(p interface{ SetExtraFields(map[string]any) }) {
	if len(e) > 0 {
		p.SetExtraFields(e)
	}
}

func textParam(t *transcript.Text) (sdk.TextBlockParam, error) {
	cc, err := cacheControl(t.CacheControl)
	if err != nil {
		return sdk.TextBlockParam{}, err
	}
	tb := sdk.TextBlockParam{Text: t.Text, CacheControl: cc}
	var ex extras
	if len(t.Citations) > 0 {
		if cs, ok := decodeExact[[]sdk.TextCitationParamUnion](t.Citations); ok {
			tb.Citations = cs
		} else {
			ex.set("citations", t.Citations)
		}
	}
	ex.add(t.Extra)
	ex.apply(&tb)
	return tb, nil
}

// blockParam converts one top-level content block of a message.
func blockParam(b transcript.Block) (sdk.ContentBlockParamUnion, error) {
	switch b := b.(type) {
	case *transcript.Text:
		tb, err := textParam(b)
		return sdk.ContentBlockParamUnion{OfText: &tb}, err
	case *transcript.Image:
		ib, err := imageParam(b)
		return sdk.ContentBlockParamUnion{OfImage: &ib}, err
	case *transcript.Document:
		db, err := documentParam(b)
		return sdk.ContentBlockParamUnion{OfDocument: &db}, err
	case *transcript.ToolUse:
		cc, err := cacheControl(b.CacheControl)
		if err != nil {
			return sdk.ContentBlockParamUnion{}, err
		}
		tu := sdk.ToolUseBlockParam{ID: b.ID, Name: b.Name, Input: rawInput(b.Input), CacheControl: cc}
		var ex extras
		ex.add(b.Extra)
		ex.apply(&tu)
		return sdk.ContentBlockParamUnion{OfToolUse: &tu}, nil
	case *transcript.ToolResult:
		tr, err := toolResultParam(b)
		return sdk.ContentBlockParamUnion{OfToolResult: &tr}, err
	case *transcript.Thinking:
		th := sdk.ThinkingBlockParam{Thinking: b.Thinking, Signature: b.Signature}
		var ex extras
		ex.add(b.Extra)
		ex.apply(&th)
		return sdk.ContentBlockParamUnion{OfThinking: &th}, nil
	case *transcript.RedactedThinking:
		rt := sdk.RedactedThinkingBlockParam{Data: b.Data}
		var ex extras
		ex.add(b.Extra)
		ex.apply(&rt)
		return sdk.ContentBlockParamUnion{OfRedactedThinking: &rt}, nil
	case *transcript.ServerToolUse:
		cc, err := cacheControl(b.CacheControl)
		if err != nil {
			return sdk.ContentBlockParamUnion{}, err
		}
		su := sdk.ServerToolUseBlockParam{ID: b.ID, Name: sdk.ServerToolUseBlockParamName(b.Name), Input: rawInput(b.Input), CacheControl: cc}
		var ex extras
		ex.add(b.Extra)
		ex.apply(&su)
		return sdk.ContentBlockParamUnion{OfServerToolUse: &su}, nil
	case *transcript.CacheEdits:
		// The SDK has no cache_edits block: it travels as raw JSON.
		raw, err := encodeBlock(b)
		if err != nil {
			return sdk.ContentBlockParamUnion{}, err
		}
		return param.Override[sdk.ContentBlockParamUnion](raw), nil
	case nil:
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("nil block")
	default:
		// Server tool results, search_result and any block the library keeps verbatim: the
		// SDK's own type when it carries the block exactly, else the block's JSON as is.
		raw, err := encodeBlock(b)
		if err != nil {
			return sdk.ContentBlockParamUnion{}, err
		}
		if u, ok := decodeExact[sdk.ContentBlockParamUnion](raw); ok {
			return u, nil
		}
		return param.Override[sdk.ContentBlockParamUnion](raw), nil
	}
}

// encodeBlock returns the block's JSON as the request sends it.
func encodeBlock(b transcript.Block) (json.RawMessage, error) {
	if ce, ok := b.(*transcript.CacheEdits); ok {
		return json.Marshal(struct {
			Type  transcript.BlockKind   `json:"type"`
			Edits []transcript.CacheEdit `json:"edits"`
		}{transcript.KindCacheEdits, ce.Edits})
	}
	return transcript.MarshalBlock(b)
}

// rawInput is a tool call's input as the SDK's any-typed field takes it.
func rawInput(in json.RawMessage) any {
	if len(in) == 0 {
		return json.RawMessage("{}")
	}
	return in
}

func imageParam(b *transcript.Image) (sdk.ImageBlockParam, error) {
	cc, err := cacheControl(b.CacheControl)
	if err != nil {
		return sdk.ImageBlockParam{}, err
	}
	ib := sdk.ImageBlockParam{CacheControl: cc}
	s := b.Source
	switch {
	case len(s.Extra) > 0:
		src, err := json.Marshal(s)
		if err != nil {
			return ib, err
		}
		ib.Source = param.Override[sdk.ImageBlockParamSourceUnion](json.RawMessage(src))
	case s.Type == "base64" && s.URL == "" && s.FileID == "":
		ib.Source = sdk.ImageBlockParamSourceUnion{OfBase64: &sdk.Base64ImageSourceParam{Data: s.Data, MediaType: sdk.Base64ImageSourceMediaType(s.MediaType)}}
	case s.Type == "url" && s.Data == "" && s.MediaType == "" && s.FileID == "":
		ib.Source = sdk.ImageBlockParamSourceUnion{OfURL: &sdk.URLImageSourceParam{URL: s.URL}}
	case s.Type == "file" && s.Data == "" && s.MediaType == "" && s.URL == "":
		ib.Source = sdk.ImageBlockParamSourceUnion{OfFile: &sdk.FileImageSourceParam{FileID: s.FileID}}
	default:
		src, err := json.Marshal(s)
		if err != nil {
			return ib, err
		}
		ib.Source = param.Override[sdk.ImageBlockParamSourceUnion](json.RawMessage(src))
	}
	var ex extras
	ex.add(b.Extra)
	ex.apply(&ib)
	return ib, nil
}

func documentParam(b *transcript.Document) (sdk.DocumentBlockParam, error) {
	cc, err := cacheControl(b.CacheControl)
	if err != nil {
		return sdk.DocumentBlockParam{}, err
	}
	db := sdk.DocumentBlockParam{CacheControl: cc}
	if b.Title != "" {
		db.Title = sdk.String(b.Title)
	}
	if b.Context != "" {
		db.Context = sdk.String(b.Context)
	}
	var ex extras
	if len(b.Citations) > 0 {
		if c, ok := decodeExact[sdk.CitationsConfigParam](b.Citations); ok {
			db.Citations = c
		} else {
			ex.set("citations", b.Citations)
		}
	}
	s := b.Source
	plain := len(s.Extra) == 0
	switch {
	case plain && s.Type == "base64" && s.MediaType == "application/pdf" && s.URL == "" && s.FileID == "":
		db.Source = sdk.DocumentBlockParamSourceUnion{OfBase64: &sdk.Base64PDFSourceParam{Data: s.Data}}
	case plain && s.Type == "text" && s.MediaType == "text/plain" && s.URL == "" && s.FileID == "":
		db.Source = sdk.DocumentBlockParamSourceUnion{OfText: &sdk.PlainTextSourceParam{Data: s.Data}}
	case plain && s.Type == "url" && s.Data == "" && s.MediaType == "" && s.FileID == "":
		db.Source = sdk.DocumentBlockParamSourceUnion{OfURL: &sdk.URLPDFSourceParam{URL: s.URL}}
	case plain && s.Type == "file" && s.Data == "" && s.MediaType == "" && s.URL == "":
		db.Source = sdk.DocumentBlockParamSourceUnion{OfFile: &sdk.FileDocumentSourceParam{FileID: s.FileID}}
	default:
		// A "content" source, or a shape the SDK has no variant for.
		src, err := json.Marshal(s)
		if err != nil {
			return db, err
		}
		if u, ok := decodeExact[sdk.DocumentBlockParamSourceUnion](src); ok {
			db.Source = u
		} else {
			db.Source = param.Override[sdk.DocumentBlockParamSourceUnion](json.RawMessage(src))
		}
	}
	ex.add(b.Extra)
	ex.apply(&db)
	return db, nil
}

func toolResultParam(b *transcript.ToolResult) (sdk.ToolResultBlockParam, error) {
	cc, err := cacheControl(b.CacheControl)
	if err != nil {
		return sdk.ToolResultBlockParam{}, err
	}
	tr := sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID, CacheControl: cc}
	if b.IsError {
		tr.IsError = sdk.Bool(true)
	}
	var ex extras
	if b.CacheReference != "" {
		ex.set("cache_reference", b.CacheReference) // cache editing: no SDK field
	}
	if text, ok := stringContent(b); ok {
		// The SDK has only the array form; the request keeps the bare string it was given.
		ex.set("content", text)
	} else {
		for i, cb := range b.Content {
			c, err := resultContentParam(cb)
			if err != nil {
				return tr, fmt.Errorf("tool_result %s: content[%d]: %w", b.ToolUseID, i, err)
			}
			tr.Content = append(tr.Content, c)
		}
	}
	ex.add(b.Extra)
	ex.apply(&tr)
	return tr, nil
}

// stringContent returns the text of a tool_result whose content is encoded as a bare string.
func stringContent(b *transcript.ToolResult) (string, bool) {
	switch {
	case !b.StringContent:
		return "", false
	case len(b.Content) == 0:
		return "", true
	case len(b.Content) == 1:
		t, ok := b.Content[0].(*transcript.Text)
		if ok {
			return t.Text, true
		}
	}
	return "", false
}

// resultContentParam converts a block inside a tool_result.
func resultContentParam(b transcript.Block) (sdk.ToolResultBlockParamContentUnion, error) {
	switch b := b.(type) {
	case *transcript.Text:
		tb, err := textParam(b)
		return sdk.ToolResultBlockParamContentUnion{OfText: &tb}, err
	case *transcript.Image:
		ib, err := imageParam(b)
		return sdk.ToolResultBlockParamContentUnion{OfImage: &ib}, err
	case *transcript.Document:
		db, err := documentParam(b)
		return sdk.ToolResultBlockParamContentUnion{OfDocument: &db}, err
	case *transcript.ToolReference:
		tr := sdk.ToolReferenceBlockParam{ToolName: b.ToolName}
		var ex extras
		ex.add(b.Extra)
		ex.apply(&tr)
		return sdk.ToolResultBlockParamContentUnion{OfToolReference: &tr}, nil
	case nil:
		return sdk.ToolResultBlockParamContentUnion{}, fmt.Errorf("nil block")
	default:
		raw, err := encodeBlock(b)
		if err != nil {
			return sdk.ToolResultBlockParamContentUnion{}, err
		}
		if u, ok := decodeExact[sdk.ToolResultBlockParamContentUnion](raw); ok {
			return u, nil
		}
		return param.Override[sdk.ToolResultBlockParamContentUnion](raw), nil
	}
}

// toolParam converts a tool definition: the SDK's own tool type when it carries the
// definition exactly, else the definition's JSON as is.
func toolParam(t provider.Tool) (sdk.ToolUnionParam, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, t.Definition); err != nil {
		return sdk.ToolUnionParam{}, err
	}
	def := json.RawMessage(buf.Bytes())
	if t.CacheControl != nil {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(def, &m); err != nil {
			return sdk.ToolUnionParam{}, err
		}
		cc, err := json.Marshal(t.CacheControl)
		if err != nil {
			return sdk.ToolUnionParam{}, err
		}
		m["cache_control"] = cc
		if def, err = json.Marshal(m); err != nil {
			return sdk.ToolUnionParam{}, err
		}
	}
	if u, ok := decodeExact[sdk.ToolUnionParam](def); ok {
		return u, nil
	}
	return param.Override[sdk.ToolUnionParam](def), nil
}

func toolChoiceParam(tc *provider.ToolChoice) sdk.ToolChoiceUnionParam {
	switch tc.Type {
	case "auto":
		return sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
	case "any":
		return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
	case "none":
		return sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case "tool":
		return sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: tc.Name}}
	}
	raw, _ := json.Marshal(tc) // two strings: cannot fail
	return param.Override[sdk.ToolChoiceUnionParam](json.RawMessage(raw))
}

func thinkingParam(th *provider.Thinking) sdk.ThinkingConfigParamUnion {
	switch {
	case th.Type == "enabled":
		return sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(th.BudgetTokens)}}
	case th.Type == "disabled" && th.BudgetTokens == 0:
		return sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{}}
	case th.Type == "adaptive" && th.BudgetTokens == 0:
		return sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	}
	raw, _ := json.Marshal(th) // a string and an int: cannot fail
	return param.Override[sdk.ThinkingConfigParamUnion](json.RawMessage(raw))
}

// decodeExact decodes raw into the SDK type T with the SDK's own decoder and returns it when
// it encodes back to the same JSON (same keys and values, in any order), so that nothing of
// raw is lost; ok is false otherwise.
func decodeExact[T any](raw json.RawMessage) (v T, ok bool) {
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false
	}
	back, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	return v, jsonEqual(raw, back)
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
