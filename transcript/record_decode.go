package transcript

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
	recordKeys    = keyIndex((&Record{}).fields(), recordShare)
	messageKeys   = keyIndex((&Message{}).fields(), messageShare)
	usageKeys     = keyIndex((&Usage{}).fields(), nil)
	compactKeys   = keyIndex((&CompactMetadata{}).fields(), map[string]share{"trigger": shareVocab, "summarizer": shareVocab})
	segmentKeys   = keyIndex((&PreservedSegment{}).fields(), map[string]share{"headUuid": shareParent, "anchorUuid": shareParent, "tailUuid": shareParent})
	mediaKeys     = keyIndex((&MediaSource{}).fields(), map[string]share{"type": shareVocab, "media_type": shareVocab})
	blockKeys     = blockKeyIndexes()
	serverResKeys = keyIndex(blockFields(&ServerToolResult{}, new(string)), blockShare)
)

// blockKeyIndexes returns the key index of each known block kind.
func blockKeyIndexes() map[BlockKind]map[string]fieldKey {
	out := make(map[BlockKind]map[string]fieldKey, len(knownBlocks))
	for kind, b := range knownBlocks {
		out[kind] = keyIndex(blockFields(b(), new(string)), blockShare)
	}
	return out
}

// share says whether, and with what, a decoder shares a string field's value between the
// records it reads: transcripts repeat the same session id, cwd, model and type on every
// line, name the previous record's uuid as the parent and a tool call's id in its result.
// Sharing one string for equal values changes no value (strings are immutable); it saves a
// copy per record.
type share uint8

const (
	shareNone    share = iota
	shareVocab         // one of few values: a type, a role, a model, a tool name, the session id
	shareUUID          // a record's uuid, which later records name
	shareParent        // a uuid named again: a parent, a leaf
	shareToolID        // a tool call's id, which its result names
	shareToolRef       // a tool call's id named again
	shareMsgID         // an API message id, shared by the records of one response
	shareReqID         // a request id, likewise
)

var (
	recordShare = map[string]share{
		"type": shareVocab, "subtype": shareVocab, "uuid": shareUUID, "parentUuid": shareParent,
		"logicalParentUuid": shareParent, "leafUuid": shareParent, "sourceToolAssistantUUID": shareParent,
		"agentId": shareVocab, "sessionId": shareVocab, "cwd": shareVocab, "level": shareVocab,
		"requestId": shareReqID, "toolUseID": shareToolRef, "parentToolUseID": shareToolRef, "sourceToolUseID": shareToolRef,
	}
	messageShare = map[string]share{
		"id": shareMsgID, "type": shareVocab, "role": shareVocab, "model": shareVocab,
		"stop_reason": shareVocab, "stop_sequence": shareVocab,
	}
	blockShare = map[string]share{"type": shareVocab, "id": shareToolID, "name": shareVocab, "tool_use_id": shareToolRef}
)

// fieldKey is what a key index knows of a key: the field's position, and how its value is
// shared.
type fieldKey struct {
	pos   int
	share share
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

// keyIndex maps each field's key to its position in fields and its sharing.
func keyIndex(fields []jsonobj.Field, shares map[string]share) map[string]fieldKey {
	m := make(map[string]fieldKey, len(fields))
	for i, f := range fields {
		m[f.Key] = fieldKey{pos: i, share: shares[f.Key]}
	}
	return m
}

// lineDecoder decodes transcript lines in a single pass. A Decoder keeps one for the whole
// file, so that the strings its records repeat are shared; a zero lineDecoder shares none.
type lineDecoder struct {
	s       jsonobj.Scanner
	sharing bool
	records int               // records decoded: the vocabulary's bound follows it
	vocab   map[string]string // values of shareVocab fields, and unknown keys
	uuids   recent            // shareUUID values
	tools   recent            // shareToolID values
	msgs    recent            // shareMsgID values
	reqs    recent            // shareReqID values

	recordFields, messageFields []jsonobj.Field // reused for every line
}

// maxShared is the longest value a lineDecoder shares: the repeated values are short, and a
// long one is not worth a lookup.
const maxShared = 128

// recent holds the last few values of one kind of id, newest first.
type recent [8]string

// find returns the held value equal to b.
func (r *recent) find(b []byte) (string, bool) {
	for _, v := range r {
		if v == string(b) {
			return v, v != "" || len(b) == 0
		}
	}
	return "", false
}

// add makes v the newest value.
func (r *recent) add(v string) {
	copy(r[1:], r[:len(r)-1])
	r[0] = v
}

// str returns the string of b, shared as sh says.
func (d *lineDecoder) str(b []byte, sh share) string {
	if !d.sharing || sh == shareNone || len(b) > maxShared {
		return string(b)
	}
	var r *recent
	switch sh {
	case shareVocab:
		if v, ok := d.vocab[string(b)]; ok {
			return v
		}
		v := string(b)
		// The vocabulary is bounded by the records read: a file of distinct values costs at
		// most one entry per record.
		if len(d.vocab) < 64+d.records {
			d.vocab[v] = v
		}
		return v
	case shareUUID, shareParent:
		r = &d.uuids
	case shareToolID, shareToolRef:
		r = &d.tools
	case shareMsgID:
		r = &d.msgs
	case shareReqID:
		r = &d.reqs
	}
	if v, ok := r.find(b); ok {
		return v
	}
	v := string(b)
	if sh != shareParent && sh != shareToolRef {
		r.add(v)
	}
	return v
}

// decodeRecordFast decodes the transcript line data into *r, which must be zero, in a single
// pass. It reports false when the line is not one it takes whole (see above); *r is then in
// no defined state and the caller decodes the line with the reference decoder.
func (d *lineDecoder) decodeRecordFast(data []byte, r *Record) bool {
	if d.sharing && d.vocab == nil {
		d.vocab = map[string]string{}
	}
	d.s.Reset(data)
	d.recordFields = r.appendFields(d.recordFields[:0])
	extra, ok := d.object(d.recordFields, recordKeys, &r.presence)
	if !ok || !d.s.End() {
		return false
	}
	r.Extra = extra
	d.records++
	return true
}

// object reads the object at the scanner into fields (whose keys index names), marking in p
// which were present or null, and returns the unknown keys with a copy of their raw values,
// as jsonobj.Decode does.
func (d *lineDecoder) object(fields []jsonobj.Field, index map[string]fieldKey, p *jsonobj.Presence) (map[string]json.RawMessage, bool) {
	s := &d.s
	var extra map[string]json.RawMessage
	ok := s.Object(func(key []byte) bool {
		if len(key) == 4 && string(key) != "type" && bytes.EqualFold(key, []byte("type")) {
			// encoding/json matches a block's "type" whatever its case: leave the choice
			// of which "type" counts to it.
			return false
		}
		f, known := index[string(key)]
		if !known {
			k := d.str(key, shareVocab)
			raw, ok := s.Raw()
			if !ok {
				return false
			}
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[k] = bytes.Clone(raw)
			return true
		}
		if p.Has(f.pos) {
			return false // a key given twice: encoding/json keeps the last
		}
		if s.Null() {
			p.Mark(f.pos, true)
			return true
		}
		if !d.value(fields[f.pos].Ptr, f.share) {
			return false
		}
		p.Mark(f.pos, false)
		return true
	})
	return extra, ok
}

// string reads a string value, shared as sh says.
func (d *lineDecoder) string(sh share) (string, bool) {
	b, ok := d.s.StringBytes()
	if !ok {
		return "", false
	}
	return d.str(b, sh), true
}

// value reads the value at the scanner into ptr, a field's target.
func (d *lineDecoder) value(ptr any, sh share) bool {
	s := &d.s
	var ok bool
	switch p := ptr.(type) {
	case *string:
		*p, ok = d.string(sh)
	case *RecordType:
		var v string
		v, ok = d.string(sh)
		*p = RecordType(v)
	case *Subtype:
		var v string
		v, ok = d.string(sh)
		*p = Subtype(v)
	case *Role:
		var v string
		v, ok = d.string(sh)
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
		d.messageFields = m.appendFields(d.messageFields[:0])
		m.Extra, ok = d.object(d.messageFields, messageKeys, &m.presence)
		*p = m
	case **Usage:
		u := &Usage{}
		u.Extra, ok = d.object(u.fields(), usageKeys, &u.presence)
		*p = u
	case **CompactMetadata:
		c := &CompactMetadata{}
		c.Extra, ok = d.object(c.fields(), compactKeys, &c.presence)
		*p = c
	case **PreservedSegment:
		g := &PreservedSegment{}
		g.Extra, ok = d.object(g.fields(), segmentKeys, &g.presence)
		*p = g
	case *MediaSource:
		p.Extra, ok = d.object(p.fields(), mediaKeys, &p.presence)
	case contentField:
		ok = d.content(p)
	default:
		// The decision records' metadata and cache markers: plain structs encoding/json
		// decodes, from the bytes the scanner validated.
		var raw []byte
		raw, ok = s.Raw()
		ok = ok && json.Unmarshal(raw, ptr) == nil
	}
	return ok
}

// content reads a "content" field: a bare string, or an array of blocks.
func (d *lineDecoder) content(c contentField) bool {
	s := &d.s
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
		b, ok := d.block()
		bs = append(bs, b)
		return ok
	})
	*c.blocks = bs
	return ok
}

// block reads one content block.
func (d *lineDecoder) block() (Block, bool) {
	s := &d.s
	var kind string
	kb, quick := s.Leading("type")
	if quick {
		kind = d.str(kb, shareVocab)
	} else {
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
	extra, ok := d.object(blockFields(b, &t), index, b.pres())
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
