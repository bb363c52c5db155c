// Package jsonobj encodes and decodes JSON objects into Go structs while remembering which
// known keys were present (or null) and keeping unknown keys verbatim, so that a value decoded
// from a transcript line encodes back to semantically equal JSON.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Field binds one JSON key to a pointer to the struct field that holds it.
type Field struct {
	Key string
	Ptr any
}

// Presence records which of up to 64 known fields were present in the decoded object and which
// of those were JSON null. Its zero value means "nothing was decoded": zero fields are omitted.
type Presence struct {
	present, null uint64
}

// Has reports whether field i was present when decoded.
func (p Presence) Has(i int) bool { return p.present&(1<<i) != 0 }

// Null reports whether field i was present as JSON null.
func (p Presence) Null(i int) bool { return p.null&(1<<i) != 0 }

// Forget returns p with field i marked absent, so that Encode omits the field when it is zero
// (used when a copy of a decoded value drops a field, e.g. a stripped cache_control).
func (p Presence) Forget(i int) Presence {
	p.present &^= 1 << i
	p.null &^= 1 << i
	return p
}

// Error is a decoding error at a JSON path such as "message.content[2].input".
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("field %s: %v", e.Path, e.Err) }

func (e *Error) Unwrap() error { return e.Err }

// Wrap prefixes err's path with key (or creates a path), so nested decoders report the full path.
func Wrap(key string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		sep := "."
		if strings.HasPrefix(e.Path, "[") {
			sep = ""
		}
		return &Error{Path: key + sep + e.Path, Err: e.Err}
	}
	return &Error{Path: key, Err: err}
}

var null = []byte("null")

// Decode decodes the JSON object data into fields. Keys not named by fields are returned in
// extra (nil when there are none). Errors name the field.
func Decode(data []byte, fields []Field, p *Presence) (extra map[string]json.RawMessage, err error) {
	if len(fields) > 64 {
		panic("jsonobj: more than 64 fields")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("expected a JSON object, got null")
	}
	*p = Presence{}
	for i, f := range fields {
		raw, ok := m[f.Key]
		if !ok {
			continue
		}
		delete(m, f.Key)
		p.present |= 1 << i
		if bytes.Equal(bytes.TrimSpace(raw), null) {
			p.null |= 1 << i
			continue
		}
		if u, ok := f.Ptr.(json.Unmarshaler); ok {
			err = u.UnmarshalJSON(raw)
		} else {
			err = json.Unmarshal(raw, f.Ptr)
		}
		if err != nil {
			return nil, Wrap(f.Key, err)
		}
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// Zeroer is implemented by field adapters that are not plain pointers: Encode asks them whether
// they are zero and marshals them as they are.
type Zeroer interface{ IsZero() bool }

// Encode writes the object: each known field that is non-zero or was present when decoded, in
// the order of fields, then the extra keys in sorted order. A zero field that was decoded from
// null is written as null.
func Encode(fields []Field, p Presence, extra map[string]json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	key := func(k string) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
	}
	for i, f := range fields {
		var zero bool
		var val any
		if z, ok := f.Ptr.(Zeroer); ok {
			zero, val = z.IsZero(), f.Ptr
		} else {
			v := reflect.ValueOf(f.Ptr).Elem()
			zero, val = v.IsZero(), v.Interface()
		}
		if zero && !p.Has(i) {
			continue
		}
		if zero && p.Null(i) {
			key(f.Key)
			buf.Write(null)
			continue
		}
		b, err := marshal(val)
		if err != nil {
			return nil, Wrap(f.Key, err)
		}
		key(f.Key)
		buf.Write(b)
	}
	for _, k := range slices.Sorted(mapKeys(extra)) {
		key(k)
		buf.Write(extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func mapKeys(m map[string]json.RawMessage) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// marshal is json.Marshal without HTML escaping, so that "<" in tool output stays "<".
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) { return marshal(v) }
