package agentctx

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// Decoding a transcript line takes one pass over its bytes: the scanner reads each value once,
// straight into the record's fields, unescapes each string once and copies each raw value
// (unknown fields, tool inputs, toolUseResult) once. That pass takes only what it is sure to
// read as the reference decoder does (jsonobj.Decode over each object, the types'
// UnmarshalJSON methods): a line it does not take whole — a syntax error, a field of the wrong
// type, an int written as 1e3, a key given twice, a key that only case-folds to a block's
// "type", nesting deeper than jsonobj.MaxScanDepth — is decoded again by the reference
// decoder, which says what is wrong with it exactly as it always has. Such lines are rare;
// a clean line never meets the reference decoder.

// The key indexes of the objects the single pass reads, built once from the fields lists
// that also drive encoding, so that the two never disagree on a key or its position.
var (
	recordKeys    = keyIndex((&Record{}).fields())
	messageKeys   = keyIndex((&Message{}).fields())
	usageKeys     = keyIndex((&Usage{}).fields())
	compactKeys   = keyIndex((&CompactMetadata{}).fields())
	segmentKeys   = keyIndex((&PreservedSegment{}).fields())
	mediaKeys     = keyIndex((&MediaSource{}).fields())
	blockKeys     = map[BlockKind]map[string]int{}
	serverResKeys = keyIndex(blockFields(&ServerToolResult{}, new(string)))
)

func init() {
	for kind, b := range knownBlocks {
		blockKeys[kind] = keyIndex(blockFields(b(), new(string)))
	}
}

// knownBlocks makes an empty block of each kind UnmarshalBlock decodes by its fields (server
// tool results aside: their kind is a family).
var knownBlocks = map[BlockKind]func() fielder{
	KindText:             func() fielder { return &Text{} },
	KindImage:            func() fielder { return &Image{} },
	KindDocument:         func() fielder { return &Document{} },
	KindToolUse:          func() fielder { return &ToolUse{} },
	KindToolResult:       func() fielder { return &ToolResult{} },
	KindThinking:         func() fielder { return &Thinking{} },
	KindRedactedThinking: func() fielder { return &RedactedThinking{} },
	KindToolReference:    func() fielder { return &ToolReference{} },
	KindServerToolUse:    func() fielder { return &ServerToolUse{} },
}

// blockFields is a block's fields as UnmarshalBlock decodes them: "type" (into *t) first.
func blockFields(b fielder, t *string) []jsonobj.Field {
	return append([]jsonobj.Field{{Key: "type", Ptr: t}}, b.fields()...)
}

// keyIndex maps each field's key to its position in fields.
func keyIndex(fields []jsonobj.Field) map[string]int {
	m := make(map[string]int, len(fields))
	for i, f := range fields {
		m[f.Key] = i
	}
	return m
}

// decodeRecordFast decodes the transcript line data into *r, which must be zero, in a single
// pass. It reports false when the line is not one it takes whole (see above); *r is then in
// no defined state and the caller decodes the line with the reference decoder.
func decodeRecordFast(s *jsonobj.Scanner, data []byte, r *Record) bool {
	s.Reset(data)
	extra, ok := decodeObject(s, r.fields(), recordKeys, &r.presence)
	if !ok || !s.End() {
		return false
	}
	r.Extra = extra
	return true
}

// decodeObject reads the object at the scanner into fields (whose keys index names), marking
// in p which were present or null, and returns the unknown keys with a copy of their raw
// values, as jsonobj.Decode does.
func decodeObject(s *jsonobj.Scanner, fields []jsonobj.Field, index map[string]int, p *jsonobj.Presence) (map[string]json.RawMessage, bool) {
	var extra map[string]json.RawMessage
	ok := s.Object(func(key []byte) bool {
		if len(key) == 4 && string(key) != "type" && bytes.EqualFold(key, []byte("type")) {
			// encoding/json matches a block's "type" whatever its case: leave the choice
			// of which "type" counts to it.
			return false
		}
		i, known := index[string(key)]
		if !known {
			raw, ok := s.Raw()
			if !ok {
				return false
			}
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[string(key)] = bytes.Clone(raw)
			return true
		}
		if p.Has(i) {
			return false // a key given twice: encoding/json keeps the last
		}
		if s.Null() {
			p.Mark(i, true)
			return true
		}
		if !decodeValue(s, fields[i].Ptr) {
			return false
		}
		p.Mark(i, false)
		return true
	})
	return extra, ok
}

// decodeValue reads the value at the scanner into ptr, a field's target.
func decodeValue(s *jsonobj.Scanner, ptr any) bool {
	var ok bool
	switch p := ptr.(type) {
	case *string:
		*p, ok = s.String()
	case *RecordType:
		var v string
		v, ok = s.String()
		*p = RecordType(v)
	case *Subtype:
		var v string
		v, ok = s.String()
		*p = Subtype(v)
	case *Role:
		var v string
		v, ok = s.String()
		*p = Role(v)
	case *bool:
		*p, ok = s.Bool()
	case *int:
		*p, ok = s.Int()
	case *json.RawMessage:
		var raw []byte
		raw, ok = s.Raw()
		*p = bytes.Clone(raw)
	case **Message:
		m := &Message{}
		m.Extra, ok = decodeObject(s, m.fields(), messageKeys, &m.presence)
		*p = m
	case **Usage:
		u := &Usage{}
		u.Extra, ok = decodeObject(s, u.fields(), usageKeys, &u.presence)
		*p = u
	case **CompactMetadata:
		c := &CompactMetadata{}
		c.Extra, ok = decodeObject(s, c.fields(), compactKeys, &c.presence)
		*p = c
	case **PreservedSegment:
		g := &PreservedSegment{}
		g.Extra, ok = decodeObject(s, g.fields(), segmentKeys, &g.presence)
		*p = g
	case *MediaSource:
		p.Extra, ok = decodeObject(s, p.fields(), mediaKeys, &p.presence)
	case contentField:
		ok = decodeContent(s, p)
	default:
		// The decision records' metadata and cache markers: plain structs encoding/json
		// decodes, from the bytes the scanner validated.
		var raw []byte
		raw, ok = s.Raw()
		ok = ok && json.Unmarshal(raw, ptr) == nil
	}
	return ok
}

// decodeContent reads a "content" field: a bare string, or an array of blocks.
func decodeContent(s *jsonobj.Scanner, c contentField) bool {
	if s.Peek() == '"' {
		v, ok := s.String()
		*c.str = true
		if v != "" {
			*c.blocks = []Block{&Text{Text: v}}
		}
		return ok
	}
	bs := []Block{}
	ok := s.Array(func() bool {
		b, ok := decodeBlock(s)
		bs = append(bs, b)
		return ok
	})
	*c.blocks = bs
	return ok
}

// decodeBlock reads one content block.
func decodeBlock(s *jsonobj.Scanner) (Block, bool) {
	kind, quick := s.LeadingString("type")
	if !quick {
		var ok bool
		if kind, ok = blockKind(s); !ok {
			return nil, false
		}
	}
	var b fielder
	index := blockKeys[BlockKind(kind)]
	if mk, known := knownBlocks[BlockKind(kind)]; known {
		b = mk()
	} else if strings.HasSuffix(kind, "_tool_result") {
		b, index = &ServerToolResult{Type: BlockKind(kind)}, serverResKeys
	} else {
		// A kind the library does not know is kept verbatim; blockKind makes sure its
		// "type" is the one encoding/json would have found.
		if quick {
			if _, ok := blockKind(s); !ok {
				return nil, false
			}
		}
		raw, ok := s.Raw()
		if !ok {
			return nil, false
		}
		return &UnknownBlock{Type: BlockKind(kind), JSON: bytes.Clone(raw)}, true
	}
	var t string
	extra, ok := decodeObject(s, blockFields(b, &t), index, b.pres())
	*b.extra() = extra
	return b, ok
}

// blockKind reads the "type" of the block at the scanner without consuming the block. It
// reports false when the block is not an object, when its type is not one string, or when
// another key case-folds to "type".
func blockKind(s *jsonobj.Scanner) (string, bool) {
	start := s.Pos()
	var kind string
	found := false
	ok := s.Object(func(key []byte) bool {
		if string(key) == "type" {
			if found {
				return false
			}
			var ok bool
			kind, ok = s.String()
			found = true
			return ok
		}
		if len(key) == 4 && bytes.EqualFold(key, []byte("type")) {
			return false
		}
		_, ok := s.Raw()
		return ok
	})
	s.Rewind(start)
	return kind, ok && found
}
