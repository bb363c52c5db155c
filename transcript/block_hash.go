package transcript

import (
	"encoding/binary"
	"encoding/json"
	"hash"
	"io"
	"maps"
	"reflect"
	"slices"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// HashBlock writes to h everything that decides how b encodes: its kind, the presence bits its
// fields were decoded with, each field's key and value (strings and raw JSON length-prefixed,
// so that no two blocks write the same bytes by running fields together), a tool result's
// content blocks in order, a cache_edits block's edits, an unknown block's bytes, and the
// unknown fields, in key order. It walks the same field lists [MarshalBlock] encodes. A nil
// block, and a nil pointer of each block type, write bytes of their own.
//
// Blocks that write the same bytes encode the same way ([MarshalBlock], and the request's
// encoder for cache_edits), so a digest of what HashBlock writes can stand for the encoding
// without encoding. The converse does not hold: blocks that encode the same way may write
// different bytes, when a field that has a value is marked present in one and not in the other,
// or when raw JSON differs in spacing only.
func HashBlock(h hash.Hash, b Block) {
	w := blockHasher{h: h}
	w.block(b)
}

// blockHasher writes blocks' fields to a hash. A hash's Write never returns an error.
type blockHasher struct {
	h   hash.Hash
	buf [8]byte
}

// The first byte HashBlock writes for a block: what follows it.
const (
	hashNil        = iota // a nil block or a nil pointer: its type follows
	hashFields            // a known kind: the kind, the presence bits, the fields, the unknown fields
	hashCacheEdits        // the edits
	hashUnknown           // the kind and the verbatim JSON
)

func (w *blockHasher) block(b Block) {
	switch {
	case b == nil:
		w.byte(hashNil)
		w.str("")
		return
	case IsNilBlock(b):
		w.byte(hashNil)
		w.str(reflect.TypeOf(b).String()) // a nil pointer may not know its kind
		return
	}
	switch b := b.(type) {
	case fielder:
		w.byte(hashFields)
		w.str(string(b.Kind()))
		w.fields(b.fields(), *b.pres(), *b.extra())
	case *CacheEdits:
		w.byte(hashCacheEdits)
		w.flag(b.Edits == nil)
		w.uint(uint64(len(b.Edits)))
		for _, e := range b.Edits {
			w.str(e.Type)
			w.str(e.CacheReference)
		}
	case *UnknownBlock:
		w.byte(hashUnknown)
		w.str(string(b.Type))
		w.raw(b.JSON)
	}
}

// fields writes an object as jsonobj.Encode sees it: the presence bits, each field's key and
// value, and the unknown fields in key order.
func (w *blockHasher) fields(fs []jsonobj.Field, p jsonobj.Presence, extra map[string]json.RawMessage) {
	present, null := p.Bits()
	w.uint(present)
	w.uint(null)
	w.uint(uint64(len(fs)))
	for _, f := range fs {
		w.str(f.Key)
		w.value(f.Ptr)
	}
	w.uint(uint64(len(extra)))
	if len(extra) == 0 {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		w.str(k)
		w.raw(extra[k])
	}
}

// value writes the value a field points to.
func (w *blockHasher) value(v any) {
	switch v := v.(type) {
	case *string:
		w.byte('s')
		w.str(*v)
	case *bool:
		w.byte('b')
		w.flag(*v)
	case *json.RawMessage:
		w.byte('r')
		w.raw(*v)
	case **CacheControl:
		w.byte('c')
		w.flag(*v == nil)
		if cc := *v; cc != nil {
			w.str(cc.Type)
			w.str(cc.TTL)
		}
	case *MediaSource:
		w.byte('m')
		w.fields(v.fields(), v.presence, v.Extra)
	case contentField:
		w.byte('k')
		w.flag(*v.str)
		w.uint(uint64(len(*v.blocks)))
		for _, b := range *v.blocks {
			w.block(b)
		}
	default: // a field of a type this walker does not know: its encoding
		enc, err := jsonobj.Marshal(v)
		w.byte('j')
		w.flag(err != nil)
		w.raw(enc)
	}
}

func (w *blockHasher) byte(v byte) {
	w.buf[0] = v
	w.h.Write(w.buf[:1])
}

func (w *blockHasher) uint(v uint64) {
	binary.LittleEndian.PutUint64(w.buf[:], v)
	w.h.Write(w.buf[:])
}

func (w *blockHasher) flag(v bool) {
	if v {
		w.byte(1)
	} else {
		w.byte(0)
	}
}

func (w *blockHasher) str(s string) {
	w.uint(uint64(len(s)))
	io.WriteString(w.h, s)
}

// raw writes raw JSON, telling nil from empty (nil is a zero field, empty does not encode).
func (w *blockHasher) raw(b []byte) {
	w.flag(b == nil)
	w.uint(uint64(len(b)))
	w.h.Write(b)
}
