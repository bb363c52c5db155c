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

// Field binds one JSON key to a pointer to the struct field that holds it. Ptr may instead be
// an adapter value implementing json.Unmarshaler (and [Zeroer]); an adapter must leave its
// target zero when it returns an error that is not a [*Partial].
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

// Mark records field i as present, and as JSON null when null is true: for decoders that
// read an object themselves rather than through [Decode].
func (p *Presence) Mark(i int, null bool) {
	p.present |= 1 << i
	if null {
		p.null |= 1 << i
	}
}

// Bits returns the presence and null bits, field i being bit i (for hashing a presence).
func (p Presence) Bits() (present, null uint64) { return p.present, p.null }

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
// A [*Partial] stays a *Partial, each of its fields prefixed.
func Wrap(key string, err error) error {
	if err == nil {
		return nil
	}
	if p, ok := err.(*Partial); ok {
		out := &Partial{Fields: make([]*Error, len(p.Fields))}
		for i, e := range p.Fields {
			out.Fields[i] = wrap(key, e)
		}
		return out
	}
	if e, ok := err.(*Error); ok {
		return wrap(key, e)
	}
	return &Error{Path: key, Err: err}
}

func wrap(key string, e *Error) *Error {
	sep := "."
	switch {
	case e.Path == "":
		return &Error{Path: key, Err: e.Err}
	case strings.HasPrefix(e.Path, "["):
		sep = ""
	}
	return &Error{Path: key + sep + e.Path, Err: e.Err}
}

// Partial is the error [Decode] returns for an object it decoded except for some fields that
// could not be read (a number too large for an int, a string where a bool belongs). Each such
// field is left zero and absent, and its raw value is kept with the unknown keys, so the object
// encodes back to the JSON it was read from. Fields names them, nested ones by their full path,
// in the order Decode met them.
//
// A decoder that returns a *Partial must have decoded everything else: a list decoder goes on
// with the next element (see [Wrap] to prefix the element's index).
type Partial struct {
	Fields []*Error
}

// Error names the first field that could not be read, and how many more there are.
func (p *Partial) Error() string {
	if len(p.Fields) == 0 {
		return "no field dropped"
	}
	msg := "unreadable " + p.Fields[0].Error()
	if n := len(p.Fields) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// AsPartial returns err as a *Partial when it is one itself (not one wrapped by another error,
// which may have stopped decoding half-way).
func AsPartial(err error) (*Partial, bool) {
	p, ok := err.(*Partial)
	return p, ok
}

var null = []byte("null")

// Decode decodes the JSON object data into fields. Keys not named by fields are returned in
// extra (nil when there are none).
//
// Data that is not a JSON object is an error. A field whose value cannot be read is not: Decode
// leaves it zero and absent, keeps its raw value in extra, goes on with the other fields and
// returns the object with a [*Partial] naming every such field, nested ones included. A nested
// decoder's *Partial keeps the nested value, as far as it was read.
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
	var dropped []*Error
	for i, f := range fields {
		raw, ok := m[f.Key]
		if !ok {
			continue
		}
		if bytes.Equal(bytes.TrimSpace(raw), null) {
			delete(m, f.Key)
			p.present |= 1 << i
			p.null |= 1 << i
			continue
		}
		err := decodeField(raw, f.Ptr)
		if err == nil {
			delete(m, f.Key)
			p.present |= 1 << i
			continue
		}
		if part, ok := AsPartial(err); ok {
			delete(m, f.Key)
			p.present |= 1 << i
			dropped = append(dropped, Wrap(f.Key, part).(*Partial).Fields...)
			continue
		}
		// Unreadable: the key stays in m, so its raw value goes to extra.
		if v := reflect.ValueOf(f.Ptr); v.Kind() == reflect.Pointer {
			v.Elem().SetZero()
		}
		dropped = append(dropped, wrap(f.Key, asError(err)))
	}
	if len(m) > 0 {
		extra = m
	}
	if len(dropped) > 0 {
		return extra, &Partial{Fields: dropped}
	}
	return extra, nil
}

// asError returns err as an *Error with an empty path, unless it is one.
func asError(err error) *Error {
	if e, ok := err.(*Error); ok {
		return e
	}
	return &Error{Err: err}
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodeField decodes raw into ptr. Decoders of this package's kind are called directly, so
// that a [*Partial] they return reaches Decode as it is: encoding/json would stop a list at
// its first error.
func decodeField(raw []byte, ptr any) error {
	if u, ok := ptr.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(raw)
	}
	// A pointer field whose type decodes itself (message *Message, usage *Usage).
	if t := reflect.TypeOf(ptr).Elem(); t.Kind() == reflect.Pointer && t.Implements(unmarshalerType) {
		v := reflect.ValueOf(ptr).Elem()
		target := v
		if v.IsNil() {
			target = reflect.New(t.Elem())
		}
		err := target.Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		if _, ok := AsPartial(err); err == nil || ok {
			v.Set(target)
		}
		return err
	}
	return json.Unmarshal(raw, ptr)
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
