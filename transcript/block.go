package transcript

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// BlockKind is the "type" of a content block, as the Anthropic Messages API spells it.
type BlockKind string

// The content block kinds the library knows. Any other kind decodes as an [UnknownBlock].
const (
	KindText             BlockKind = "text"
	KindImage            BlockKind = "image"
	KindDocument         BlockKind = "document"
	KindToolUse          BlockKind = "tool_use"
	KindToolResult       BlockKind = "tool_result"
	KindThinking         BlockKind = "thinking"
	KindRedactedThinking BlockKind = "redacted_thinking"
	KindToolReference    BlockKind = "tool_reference"
	KindServerToolUse    BlockKind = "server_tool_use"
	KindSearchResult     BlockKind = "search_result"
)

// Block is one content block of a message. It is a sealed sum type: the variants are [*Text],
// [*Image], [*Document], [*ToolUse], [*ToolResult], [*Thinking], [*RedactedThinking],
// [*ToolReference], [*ServerToolUse], [*ServerToolResult] and [*UnknownBlock].
//
// Blocks decoded from a transcript are shared between the transcript and every view built from
// it; the library never modifies them in place, and callers should not either.
type Block interface {
	// Kind returns the block's "type".
	Kind() BlockKind
	isBlock()
}

// CacheControl is a prompt-cache breakpoint marker: {"type":"ephemeral","ttl":"5m"|"1h"}.
type CacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// Ephemeral returns the default 5-minute cache marker.
func Ephemeral() *CacheControl { return &CacheControl{Type: "ephemeral"} }

// Text is a text block.
type Text struct {
	Text         string
	Citations    json.RawMessage
	CacheControl *CacheControl
	Extra        map[string]json.RawMessage // unknown fields, kept for the transcript only
	presence     jsonobj.Presence
}

// MediaSource is the source of an image or document: base64 data, a URL or a file id.
type MediaSource struct {
	Type      string // "base64", "url", "file", "text", "content"
	MediaType string
	Data      string
	URL       string
	FileID    string
	Extra     map[string]json.RawMessage
	presence  jsonobj.Presence
}

// Image is an image block.
type Image struct {
	Source       MediaSource
	CacheControl *CacheControl
	Extra        map[string]json.RawMessage
	presence     jsonobj.Presence
}

// Document is a document (PDF or text) block.
type Document struct {
	Source       MediaSource
	Title        string
	Context      string
	Citations    json.RawMessage
	CacheControl *CacheControl
	Extra        map[string]json.RawMessage
	presence     jsonobj.Presence
}

// ToolUse is a client tool call made by the assistant.
type ToolUse struct {
	ID           string
	Name         string
	Input        json.RawMessage
	CacheControl *CacheControl
	Extra        map[string]json.RawMessage // e.g. "caller"; not sent to the provider
	presence     jsonobj.Presence
}

// ToolResult answers a [ToolUse] with the same id. Content holds text, image, document,
// search_result and tool_reference blocks; StringContent records that the content was (and is
// encoded as) a bare string, which holds only while Content is one [*Text].
type ToolResult struct {
	ToolUseID      string
	Content        []Block
	StringContent  bool
	IsError        bool
	CacheControl   *CacheControl
	CacheReference string // set by cached microcompact so cache_edits can name the block
	Extra          map[string]json.RawMessage
	presence       jsonobj.Presence
}

// Thinking is an extended-thinking block; Signature is opaque and must be sent back unchanged.
type Thinking struct {
	Thinking  string
	Signature string
	Extra     map[string]json.RawMessage
	presence  jsonobj.Presence
}

// RedactedThinking is encrypted reasoning; Data is opaque and must be sent back unchanged.
type RedactedThinking struct {
	Data     string
	Extra    map[string]json.RawMessage
	presence jsonobj.Presence
}

// ToolReference names a deferred tool inside a tool result (tool search).
type ToolReference struct {
	ToolName string
	Extra    map[string]json.RawMessage
	presence jsonobj.Presence
}

// ServerToolUse is a call to a server-side tool (web search, web fetch, code execution).
// Its result is a [ServerToolResult] in the same assistant message.
type ServerToolUse struct {
	ID           string
	Name         string
	Input        json.RawMessage
	CacheControl *CacheControl
	Extra        map[string]json.RawMessage
	presence     jsonobj.Presence
}

// ServerToolResult is the result of a server tool, e.g. "web_search_tool_result". Its content
// is opaque to the library.
type ServerToolResult struct {
	Type         BlockKind
	ToolUseID    string
	Content      json.RawMessage
	CacheControl *CacheControl
	Extra        map[string]json.RawMessage
	presence     jsonobj.Presence
}

// UnknownBlock is a block of a kind the library does not know. It round-trips verbatim through
// the transcript; the request builder drops or converts it (see normalize).
type UnknownBlock struct {
	Type BlockKind
	JSON json.RawMessage
}

// Kind returns [KindText]; every variant's Kind returns its "type" in the same way.
func (*Text) Kind() BlockKind             { return KindText }
func (*Image) Kind() BlockKind            { return KindImage }
func (*Document) Kind() BlockKind         { return KindDocument }
func (*ToolUse) Kind() BlockKind          { return KindToolUse }
func (*ToolResult) Kind() BlockKind       { return KindToolResult }
func (*Thinking) Kind() BlockKind         { return KindThinking }
func (*RedactedThinking) Kind() BlockKind { return KindRedactedThinking }
func (*ToolReference) Kind() BlockKind    { return KindToolReference }
func (*ServerToolUse) Kind() BlockKind    { return KindServerToolUse }

// Kind returns the result's type, e.g. "web_search_tool_result".
func (b *ServerToolResult) Kind() BlockKind { return b.Type }

// Kind returns the type the block was decoded with.
func (b *UnknownBlock) Kind() BlockKind { return b.Type }

func (*Text) isBlock()             {}
func (*Image) isBlock()            {}
func (*Document) isBlock()         {}
func (*ToolUse) isBlock()          {}
func (*ToolResult) isBlock()       {}
func (*Thinking) isBlock()         {}
func (*RedactedThinking) isBlock() {}
func (*ToolReference) isBlock()    {}
func (*ServerToolUse) isBlock()    {}
func (*ServerToolResult) isBlock() {}
func (*UnknownBlock) isBlock()     {}

func (b *Text) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "text", Ptr: &b.Text}, {Key: "citations", Ptr: &b.Citations}, {Key: "cache_control", Ptr: &b.CacheControl}}
}

func (s *MediaSource) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "type", Ptr: &s.Type}, {Key: "media_type", Ptr: &s.MediaType}, {Key: "data", Ptr: &s.Data}, {Key: "url", Ptr: &s.URL}, {Key: "file_id", Ptr: &s.FileID}}
}

// MarshalJSON encodes the source with its unknown fields.
func (s MediaSource) MarshalJSON() ([]byte, error) {
	return jsonobj.Encode(s.fields(), s.presence, s.Extra)
}

// UnmarshalJSON decodes the source, keeping unknown fields in Extra.
func (s *MediaSource) UnmarshalJSON(data []byte) (err error) {
	s.Extra, err = jsonobj.Decode(data, s.fields(), &s.presence)
	return err
}

func (b *Image) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "source", Ptr: &b.Source}, {Key: "cache_control", Ptr: &b.CacheControl}}
}

func (b *Document) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "source", Ptr: &b.Source}, {Key: "title", Ptr: &b.Title}, {Key: "context", Ptr: &b.Context}, {Key: "citations", Ptr: &b.Citations}, {Key: "cache_control", Ptr: &b.CacheControl}}
}

func (b *ToolUse) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "id", Ptr: &b.ID}, {Key: "name", Ptr: &b.Name}, {Key: "input", Ptr: &b.Input}, {Key: "cache_control", Ptr: &b.CacheControl}}
}

func (b *ToolResult) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "tool_use_id", Ptr: &b.ToolUseID}, {Key: "content", Ptr: contentField{&b.Content, &b.StringContent}}, {Key: "is_error", Ptr: &b.IsError}, {Key: "cache_control", Ptr: &b.CacheControl}, {Key: "cache_reference", Ptr: &b.CacheReference}}
}

func (b *Thinking) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "thinking", Ptr: &b.Thinking}, {Key: "signature", Ptr: &b.Signature}}
}

func (b *RedactedThinking) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "data", Ptr: &b.Data}}
}

func (b *ToolReference) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "tool_name", Ptr: &b.ToolName}}
}

func (b *ServerToolUse) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "id", Ptr: &b.ID}, {Key: "name", Ptr: &b.Name}, {Key: "input", Ptr: &b.Input}, {Key: "cache_control", Ptr: &b.CacheControl}}
}

func (b *ServerToolResult) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "tool_use_id", Ptr: &b.ToolUseID}, {Key: "content", Ptr: &b.Content}, {Key: "cache_control", Ptr: &b.CacheControl}}
}

// contentField adapts a (blocks, string form) pair to the JSON "content" field, which is either
// a string or an array of blocks.
type contentField struct {
	blocks *[]Block
	str    *bool
}

func (c contentField) IsZero() bool { return len(*c.blocks) == 0 && !*c.str }

func (c contentField) MarshalJSON() ([]byte, error) {
	if *c.str && len(*c.blocks) == 1 {
		if t, ok := (*c.blocks)[0].(*Text); ok {
			return jsonobj.Marshal(t.Text)
		}
	}
	if *c.str && len(*c.blocks) == 0 {
		return []byte(`""`), nil
	}
	return marshalBlocks(*c.blocks)
}

func (c contentField) UnmarshalJSON(data []byte) error {
	data = trimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c.str = true
		*c.blocks = nil
		if s != "" {
			*c.blocks = []Block{&Text{Text: s}}
		}
		return nil
	}
	*c.str = false
	bs, err := unmarshalBlocks(data)
	*c.blocks = bs
	return err
}

func trimSpace(b []byte) []byte {
	return []byte(strings.TrimSpace(string(b)))
}

func marshalBlocks(bs []Block) ([]byte, error) {
	if bs == nil {
		return []byte("[]"), nil
	}
	out := []byte{'['}
	for i, b := range bs {
		if i > 0 {
			out = append(out, ',')
		}
		enc, err := MarshalBlock(b)
		if err != nil {
			return nil, jsonobj.Wrap(fmt.Sprintf("[%d]", i), err)
		}
		out = append(out, enc...)
	}
	return append(out, ']'), nil
}

// unmarshalBlocks decodes a block array. A block with fields it cannot read is kept with those
// fields absent; a block it cannot read at all (not an object, no type) is kept verbatim as an
// [*UnknownBlock], so the record still writes back as it was read. Either way the array goes
// on, and the error is a [*jsonobj.Partial] naming what could not be read.
func unmarshalBlocks(data []byte) ([]Block, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, err
	}
	bs := make([]Block, 0, len(raws))
	var dropped []*jsonobj.Error
	for i, raw := range raws {
		b, err := UnmarshalBlock(raw)
		if err != nil {
			err = jsonobj.Wrap(fmt.Sprintf("[%d]", i), err)
			if part, ok := jsonobj.AsPartial(err); ok {
				dropped = append(dropped, part.Fields...)
			} else {
				b = &UnknownBlock{Type: blockType(raw), JSON: append(json.RawMessage(nil), raw...)}
				dropped = append(dropped, err.(*jsonobj.Error))
			}
		}
		bs = append(bs, b)
	}
	if len(dropped) > 0 {
		return bs, &jsonobj.Partial{Fields: dropped}
	}
	return bs, nil
}

// blockType returns the "type" of a block that could not be decoded, when it has a readable
// one.
func blockType(raw []byte) BlockKind {
	var probe struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &probe)
	return BlockKind(probe.Type)
}

// fielder is implemented by every known block variant.
type fielder interface {
	Block
	fields() []jsonobj.Field
	extra() *map[string]json.RawMessage
	pres() *jsonobj.Presence
}

func (b *Text) extra() *map[string]json.RawMessage             { return &b.Extra }
func (b *Image) extra() *map[string]json.RawMessage            { return &b.Extra }
func (b *Document) extra() *map[string]json.RawMessage         { return &b.Extra }
func (b *ToolUse) extra() *map[string]json.RawMessage          { return &b.Extra }
func (b *ToolResult) extra() *map[string]json.RawMessage       { return &b.Extra }
func (b *Thinking) extra() *map[string]json.RawMessage         { return &b.Extra }
func (b *RedactedThinking) extra() *map[string]json.RawMessage { return &b.Extra }
func (b *ToolReference) extra() *map[string]json.RawMessage    { return &b.Extra }
func (b *ServerToolUse) extra() *map[string]json.RawMessage    { return &b.Extra }
func (b *ServerToolResult) extra() *map[string]json.RawMessage { return &b.Extra }

func (b *Text) pres() *jsonobj.Presence             { return &b.presence }
func (b *Image) pres() *jsonobj.Presence            { return &b.presence }
func (b *Document) pres() *jsonobj.Presence         { return &b.presence }
func (b *ToolUse) pres() *jsonobj.Presence          { return &b.presence }
func (b *ToolResult) pres() *jsonobj.Presence       { return &b.presence }
func (b *Thinking) pres() *jsonobj.Presence         { return &b.presence }
func (b *RedactedThinking) pres() *jsonobj.Presence { return &b.presence }
func (b *ToolReference) pres() *jsonobj.Presence    { return &b.presence }
func (b *ServerToolUse) pres() *jsonobj.Presence    { return &b.presence }
func (b *ServerToolResult) pres() *jsonobj.Presence { return &b.presence }

// MarshalBlock encodes a block as the Messages API spells it, "type" first, then the known
// fields, then any unknown fields it was decoded with.
func MarshalBlock(b Block) ([]byte, error) {
	switch b := b.(type) {
	case *UnknownBlock:
		return b.JSON, nil
	case fielder:
		kind := string(b.Kind())
		fs := append([]jsonobj.Field{{Key: "type", Ptr: &kind}}, b.fields()...)
		return jsonobj.Encode(fs, *b.pres(), *b.extra())
	case nil:
		return nil, fmt.Errorf("nil block")
	default:
		return nil, fmt.Errorf("unsupported block %T", b)
	}
}

// UnmarshalBlock decodes one content block. A block whose type the library does not know
// becomes an [*UnknownBlock] holding the bytes verbatim. Data that is no object, or has no
// "type", is an error. A block with fields that cannot be read (is_error "yes") is returned
// with those fields absent and their raw values in Extra, together with an error naming them.
func UnmarshalBlock(data []byte) (Block, error) {
	var probe struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, err
	}
	if probe.Type == nil {
		return nil, &jsonobj.Error{Path: "type", Err: fmt.Errorf("missing")}
	}
	kind := BlockKind(*probe.Type)
	var b fielder
	switch kind {
	case KindText:
		b = &Text{}
	case KindImage:
		b = &Image{}
	case KindDocument:
		b = &Document{}
	case KindToolUse:
		b = &ToolUse{}
	case KindToolResult:
		b = &ToolResult{}
	case KindThinking:
		b = &Thinking{}
	case KindRedactedThinking:
		b = &RedactedThinking{}
	case KindToolReference:
		b = &ToolReference{}
	case KindServerToolUse:
		b = &ServerToolUse{}
	default:
		if strings.HasSuffix(string(kind), "_tool_result") {
			b = &ServerToolResult{Type: kind}
			break
		}
		return &UnknownBlock{Type: kind, JSON: append(json.RawMessage(nil), data...)}, nil
	}
	var t string
	fs := append([]jsonobj.Field{{Key: "type", Ptr: &t}}, b.fields()...)
	extra, err := jsonobj.Decode(data, fs, b.pres())
	if _, partial := jsonobj.AsPartial(err); err != nil && !partial {
		return nil, err
	}
	*b.extra() = extra
	return b, err
}

// CacheEdits is a request-only block that asks the provider to delete cached tool results by
// their cache_reference without changing the prompt prefix (Anthropic cache editing).
type CacheEdits struct {
	Edits []CacheEdit
}

// CacheEdit is one edit of a [CacheEdits] block.
type CacheEdit struct {
	Type           string `json:"type"` // "delete"
	CacheReference string `json:"cache_reference"`
}

// KindCacheEdits is the block kind of [CacheEdits].
const KindCacheEdits BlockKind = "cache_edits"

// Kind returns [KindCacheEdits].
func (*CacheEdits) Kind() BlockKind { return KindCacheEdits }
func (*CacheEdits) isBlock()        {}
