package jsonobj_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// sample is shaped like the package's callers: known fields, their presence and the unknown
// keys, with MarshalJSON/UnmarshalJSON built on Encode/Decode.
type sample struct {
	Name  string
	Count int
	On    bool
	Tags  []string
	Inner *inner
	Items itemList

	presence jsonobj.Presence
	extra    map[string]json.RawMessage
}

// Field indexes of sample.fields.
const (
	fName = iota
	fCount
	fOn
	fTags
	fInner
	fItems
	nFields
)

func (s *sample) fields() []jsonobj.Field {
	return []jsonobj.Field{
		{Key: "name", Ptr: &s.Name},
		{Key: "count", Ptr: &s.Count},
		{Key: "on", Ptr: &s.On},
		{Key: "tags", Ptr: &s.Tags},
		{Key: "inner", Ptr: &s.Inner},
		{Key: "items", Ptr: &s.Items},
	}
}

func (s *sample) UnmarshalJSON(data []byte) (err error) {
	s.extra, err = jsonobj.Decode(data, s.fields(), &s.presence)
	return err
}

func (s *sample) MarshalJSON() ([]byte, error) {
	return jsonobj.Encode(s.fields(), s.presence, s.extra)
}

// inner is a nested object decoded with jsonobj, so its errors carry their own path.
type inner struct {
	N int

	presence jsonobj.Presence
	extra    map[string]json.RawMessage
}

func (in *inner) fields() []jsonobj.Field { return []jsonobj.Field{{Key: "n", Ptr: &in.N}} }

func (in *inner) UnmarshalJSON(data []byte) (err error) {
	in.extra, err = jsonobj.Decode(data, in.fields(), &in.presence)
	return err
}

func (in *inner) MarshalJSON() ([]byte, error) {
	return jsonobj.Encode(in.fields(), in.presence, in.extra)
}

// itemList decodes an array of inner objects and wraps an element's error with "[i]". An
// element with unreadable fields is kept (the list goes on); an element that is no object
// fails the list.
type itemList []*inner

func (l *itemList) UnmarshalJSON(data []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return err
	}
	list := make(itemList, len(raws))
	var dropped []*jsonobj.Error
	for i, raw := range raws {
		list[i] = &inner{}
		err := list[i].UnmarshalJSON(raw)
		if err == nil {
			continue
		}
		err = jsonobj.Wrap(fmt.Sprintf("[%d]", i), err)
		part, ok := jsonobj.AsPartial(err)
		if !ok {
			return err
		}
		dropped = append(dropped, part.Fields...)
	}
	*l = list
	if len(dropped) > 0 {
		return &jsonobj.Partial{Fields: dropped}
	}
	return nil
}

func decodeSample(t *testing.T, in string) *sample {
	t.Helper()
	var s sample
	require.NoError(t, s.UnmarshalJSON([]byte(in)))
	return &s
}

func encode(t *testing.T, s *sample) string {
	t.Helper()
	out, err := s.MarshalJSON()
	require.NoError(t, err)
	return string(out)
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "unknown keys are kept verbatim, sorted, after the known fields",
			in:   `{"zeta":true,"name":"a","alpha":{"b": [1, 2]},"count":3,"mid":"x"}`,
			want: `{"name":"a","count":3,"alpha":{"b": [1, 2]},"mid":"x","zeta":true}`,
		},
		{
			name: "present zero fields are kept",
			in:   `{"on":false,"count":0,"name":"","tags":[]}`,
			want: `{"name":"","count":0,"on":false,"tags":[]}`,
		},
		{
			name: "absent zero fields are omitted",
			in:   `{}`,
			want: `{}`,
		},
		{
			name: "null fields re-encode as null",
			in:   `{"inner":null,"tags":null,"on":null,"count":null,"name":null,"items":null}`,
			want: `{"name":null,"count":null,"on":null,"tags":null,"inner":null,"items":null}`,
		},
		{
			name: "null unknown key is kept",
			in:   `{"x":null}`,
			want: `{"x":null}`,
		},
		{
			name: "nested objects keep their own zero and unknown keys",
			in:   `{"items":[{"n":1},{}],"inner":{"k":"v","n":0}}`,
			want: `{"inner":{"n":0,"k":"v"},"items":[{"n":1},{}]}`,
		},
		{
			name: "HTML characters are not escaped",
			in:   `{"name":"<b> & </b>"}`,
			want: `{"name":"<b> & </b>"}`,
		},
		{
			name: "escaped HTML characters decode and are written plain",
			in:   `{"name":"\u003cx\u003e"}`,
			want: `{"name":"<x>"}`,
		},
		{
			name: "white space between tokens is dropped",
			in:   "{ \"name\" : \"a\" ,\n\t\"q\" : 1 }",
			want: `{"name":"a","q":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := decodeSample(t, tt.in)
			got := encode(t, s)
			assert.Equal(t, tt.want, got)
			assert.JSONEq(t, tt.in, got, "the round trip must be semantically equal")
			again := encode(t, decodeSample(t, got))
			assert.Equal(t, got, again, "a second round trip must be stable")
		})
	}
}

func TestDecodePresence(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		present   []int
		null      []int
		wantExtra []string
	}{
		{name: "empty object", in: `{}`},
		{name: "zero values are present", in: `{"name":"","on":false}`, present: []int{fName, fOn}},
		{name: "null is present and null", in: `{"count":null,"tags":[]}`, present: []int{fCount, fTags}, null: []int{fCount}},
		{name: "null with white space", in: `{"inner": null }`, present: []int{fInner}, null: []int{fInner}},
		{name: "unknown keys go to extra", in: `{"b":1,"a":2,"name":"x"}`, present: []int{fName}, wantExtra: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := decodeSample(t, tt.in)
			for i := range nFields {
				assert.Equal(t, slices.Contains(tt.present, i), s.presence.Has(i), "Has(%d)", i)
				assert.Equal(t, slices.Contains(tt.null, i), s.presence.Null(i), "Null(%d)", i)
			}
			if tt.wantExtra == nil {
				assert.Nil(t, s.extra, "extra is nil when there are no unknown keys")
				return
			}
			var keys []string
			for k := range s.extra {
				keys = append(keys, k)
			}
			assert.ElementsMatch(t, tt.wantExtra, keys)
		})
	}
}

func TestDecodeValues(t *testing.T) {
	s := decodeSample(t, `{"name":"a","count":7,"on":true,"tags":["x","y"],"inner":{"n":2},"items":[{"n":3}]}`)
	assert.Equal(t, "a", s.Name)
	assert.Equal(t, 7, s.Count)
	assert.True(t, s.On)
	assert.Equal(t, []string{"x", "y"}, s.Tags)
	require.NotNil(t, s.Inner)
	assert.Equal(t, 2, s.Inner.N)
	require.Len(t, s.Items, 1)
	assert.Equal(t, 3, s.Items[0].N)
}

func TestDecodeResetsPresence(t *testing.T) {
	s := decodeSample(t, `{"name":null,"count":1}`)
	require.NoError(t, s.UnmarshalJSON([]byte(`{"on":true}`)))
	assert.False(t, s.presence.Has(fName))
	assert.False(t, s.presence.Null(fName))
	assert.False(t, s.presence.Has(fCount))
	assert.True(t, s.presence.Has(fOn))
}

func TestDecodeUnreadableFields(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		paths []string
		check func(t *testing.T, s *sample)
	}{
		{name: "string for an int", in: `{"count":"3","name":"a"}`, paths: []string{"count"},
			check: func(t *testing.T, s *sample) {
				assert.Zero(t, s.Count)
				assert.False(t, s.presence.Has(fCount), "the field is absent")
				assert.Equal(t, "a", s.Name, "the other fields are read")
				assert.JSONEq(t, `"3"`, string(s.extra["count"]), "the raw value is kept")
			}},
		{name: "number too large for an int", in: `{"count":1e400}`, paths: []string{"count"}},
		{name: "fraction for an int", in: `{"count":12.5}`, paths: []string{"count"}},
		{name: "number for a string", in: `{"name":1}`, paths: []string{"name"}},
		{name: "object for a list", in: `{"tags":{}}`, paths: []string{"tags"},
			check: func(t *testing.T, s *sample) { assert.Nil(t, s.Tags) }},
		{name: "nested object keeps what it read", in: `{"inner":{"n":"x","k":1}}`, paths: []string{"inner.n"},
			check: func(t *testing.T, s *sample) {
				require.NotNil(t, s.Inner)
				assert.True(t, s.presence.Has(fInner))
				assert.Zero(t, s.Inner.N)
				assert.Contains(t, s.Inner.extra, "n")
			}},
		{name: "nested object that is no object", in: `{"inner":[1]}`, paths: []string{"inner"},
			check: func(t *testing.T, s *sample) { assert.Nil(t, s.Inner) }},
		{name: "element of a list", in: `{"items":[{"n":1},{"n":true},{"n":3}]}`, paths: []string{"items[1].n"},
			check: func(t *testing.T, s *sample) {
				require.Len(t, s.Items, 3, "the list goes on after the element")
				assert.Equal(t, 3, s.Items[2].N)
			}},
		{name: "list element not an object drops the list", in: `{"items":[{"n":1},[]]}`, paths: []string{"items[1]"},
			check: func(t *testing.T, s *sample) { assert.Nil(t, s.Items) }},
		{name: "every unreadable field is named", in: `{"count":"3","on":true,"name":1,"items":[{"n":"a"},{"n":"b"}]}`,
			paths: []string{"name", "count", "items[0].n", "items[1].n"},
			check: func(t *testing.T, s *sample) { assert.True(t, s.On) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s sample
			err := s.UnmarshalJSON([]byte(tt.in))
			part, ok := jsonobj.AsPartial(err)
			require.True(t, ok, "want a *Partial, got %v", err)
			var paths []string
			for _, e := range part.Fields {
				paths = append(paths, e.Path)
				var te *json.UnmarshalTypeError
				var se *json.SyntaxError
				assert.True(t, errors.As(e, &te) || errors.As(e, &se) || e.Err != nil, "the decoding error is kept")
			}
			assert.Equal(t, tt.paths, paths)
			assert.True(t, strings.HasPrefix(err.Error(), "unreadable field "+tt.paths[0]+": "), err.Error())
			if tt.check != nil {
				tt.check(t, &s)
			}
			assert.Equal(t, decodeNumbers(t, tt.in), decodeNumbers(t, encode(t, &s)), "the object encodes back as it was read")
		})
	}
	t.Run("wrapped partial is not trusted", func(t *testing.T) {
		_, ok := jsonobj.AsPartial(fmt.Errorf("x: %w", &jsonobj.Partial{}))
		assert.False(t, ok)
	})
	t.Run("wrap keeps a partial", func(t *testing.T) {
		err := jsonobj.Wrap("[2]", &jsonobj.Partial{Fields: []*jsonobj.Error{{Path: "a", Err: errors.New("x")}, {Path: "[1]", Err: errors.New("y")}}})
		part, ok := jsonobj.AsPartial(err)
		require.True(t, ok)
		assert.Equal(t, "[2].a", part.Fields[0].Path)
		assert.Equal(t, "[2][1]", part.Fields[1].Path)
		assert.Equal(t, "unreadable field [2].a: x (and 1 more)", err.Error())
	})
}

// decodeNumbers decodes JSON with numbers kept as written (1e400 does not fit a float64).
func decodeNumbers(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return v
}

func TestDecodeNonObject(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "array", in: `[]`},
		{name: "string", in: `"x"`},
		{name: "number", in: `1`},
		{name: "bool", in: `true`},
		{name: "null", in: `null`},
		{name: "empty", in: ``},
		{name: "truncated", in: `{"name":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p jsonobj.Presence
			var name string
			extra, err := jsonobj.Decode([]byte(tt.in), []jsonobj.Field{{Key: "name", Ptr: &name}}, &p)
			require.Error(t, err)
			assert.Nil(t, extra)
		})
	}
	var p jsonobj.Presence
	_, err := jsonobj.Decode([]byte(`null`), nil, &p)
	assert.ErrorContains(t, err, "expected a JSON object")
}

func TestDecodeTooManyFields(t *testing.T) {
	vals := make([]int, 65)
	fields := make([]jsonobj.Field, len(vals))
	for i := range vals {
		fields[i] = jsonobj.Field{Key: fmt.Sprint(i), Ptr: &vals[i]}
	}
	var p jsonobj.Presence
	assert.Panics(t, func() { _, _ = jsonobj.Decode([]byte(`{}`), fields, &p) })
	assert.NotPanics(t, func() { _, _ = jsonobj.Decode([]byte(`{}`), fields[:64], &p) })
}

func TestEncode(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name  string
		build func() *sample
		want  string
	}{
		{
			name:  "zero Presence writes only non-zero fields",
			build: func() *sample { return &sample{Name: "a", Count: 0, On: true} },
			want:  `{"name":"a","on":true}`,
		},
		{
			name:  "nil extra and no fields",
			build: func() *sample { return &sample{} },
			want:  `{}`,
		},
		{
			name: "a field decoded as null and set later is written with its value",
			build: func() *sample {
				s := decodeSample(t, `{"name":null}`)
				s.Name = "b"
				return s
			},
			want: `{"name":"b"}`,
		},
		{
			name: "a present field cleared later is written as its zero value",
			build: func() *sample {
				s := decodeSample(t, `{"count":5}`)
				s.Count = 0
				return s
			},
			want: `{"count":0}`,
		},
		{
			name: "extra keys added in Go are sorted",
			build: func() *sample {
				return &sample{Name: "n", extra: map[string]json.RawMessage{"z": json.RawMessage(`1`), "a": json.RawMessage(`"<"`)}}
			},
			want: `{"name":"n","a":"<","z":1}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, encode(t, tt.build()))
		})
	}

	t.Run("a field that does not marshal names its key", func(t *testing.T) {
		_, err := jsonobj.Encode([]jsonobj.Field{{Key: "ratio", Ptr: &nan}}, jsonobj.Presence{}, nil)
		var e *jsonobj.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "ratio", e.Path)
	})
}

func TestWrap(t *testing.T) {
	base := errors.New("bad value")
	tests := []struct {
		name string
		err  error
		path string
	}{
		{name: "plain error gets the key as path", err: jsonobj.Wrap("input", base), path: "input"},
		{name: "key and path join with a dot", err: jsonobj.Wrap("message", &jsonobj.Error{Path: "content", Err: base}), path: "message.content"},
		{name: "an index joins without a dot", err: jsonobj.Wrap("content", &jsonobj.Error{Path: "[2]", Err: base}), path: "content[2]"},
		{name: "index then key", err: jsonobj.Wrap("[2]", jsonobj.Wrap("input", base)), path: "[2].input"},
		{name: "index of an index", err: jsonobj.Wrap("[1]", jsonobj.Wrap("[0]", base)), path: "[1][0]"},
		{
			name: "full nested path",
			err:  jsonobj.Wrap("message", jsonobj.Wrap("content", jsonobj.Wrap("[2]", jsonobj.Wrap("input", base)))),
			path: "message.content[2].input",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *jsonobj.Error
			require.ErrorAs(t, tt.err, &e)
			assert.Equal(t, tt.path, e.Path)
			assert.Equal(t, "field "+tt.path+": bad value", tt.err.Error())
			assert.ErrorIs(t, tt.err, base, "Unwrap reaches the cause")
		})
	}
	t.Run("nil stays nil", func(t *testing.T) {
		assert.NoError(t, jsonobj.Wrap("key", nil))
	})
}

func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{name: "string with HTML characters", v: `<a href="x">&</a>`, want: `"<a href=\"x\">&</a>"`},
		{name: "struct", v: struct {
			S string `json:"s"`
		}{"a<b>c"}, want: `{"s":"a<b>c"}`},
		{name: "raw message", v: json.RawMessage(`{"k":"<"}`), want: `{"k":"<"}`},
		{name: "no trailing newline", v: 1, want: `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonobj.Marshal(tt.v)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
	t.Run("errors are returned", func(t *testing.T) {
		_, err := jsonobj.Marshal(math.Inf(1))
		assert.Error(t, err)
	})
}

// csv is a Zeroer field adapter, as block.go's contentField is: a non-pointer value whose
// zero-ness is not its struct's (it always holds a pointer), encoded as a comma-joined string.
type csv struct{ parts *[]string }

func (c csv) IsZero() bool { return len(*c.parts) == 0 }

func (c csv) MarshalJSON() ([]byte, error) { return jsonobj.Marshal(strings.Join(*c.parts, ",")) }

func (c csv) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*c.parts = nil
	if s != "" {
		*c.parts = strings.Split(s, ",")
	}
	return nil
}

func TestZeroer(t *testing.T) {
	tests := []struct {
		name      string
		in        string // "" builds the value in Go instead of decoding it
		set       []string
		want      string
		wantParts []string
	}{
		{name: "absent and zero is omitted", in: `{}`, want: `{}`},
		{name: "present and zero is kept", in: `{"csv":""}`, want: `{"csv":""}`},
		{name: "null is kept", in: `{"csv":null}`, want: `{"csv":null}`},
		{name: "non-zero uses the adapter's MarshalJSON", in: `{"csv":"a,<b>"}`, want: `{"csv":"a,<b>"}`, wantParts: []string{"a", "<b>"}},
		{name: "set in Go with zero Presence", set: []string{"x", "y"}, want: `{"csv":"x,y"}`, wantParts: []string{"x", "y"}},
		{name: "unset in Go with zero Presence", want: `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := tt.set
			fields := []jsonobj.Field{{Key: "csv", Ptr: csv{&parts}}}
			var p jsonobj.Presence
			var extra map[string]json.RawMessage
			if tt.in != "" {
				var err error
				extra, err = jsonobj.Decode([]byte(tt.in), fields, &p)
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantParts, parts)
			out, err := jsonobj.Encode(fields, p, extra)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(out))
		})
	}
	t.Run("an unreadable value names the key and is kept raw", func(t *testing.T) {
		var parts []string
		var p jsonobj.Presence
		fields := []jsonobj.Field{{Key: "csv", Ptr: csv{&parts}}}
		extra, err := jsonobj.Decode([]byte(`{"csv":1}`), fields, &p)
		part, ok := jsonobj.AsPartial(err)
		require.True(t, ok, "%v", err)
		require.Len(t, part.Fields, 1)
		assert.Equal(t, "csv", part.Fields[0].Path)
		assert.Nil(t, parts)
		assert.False(t, p.Has(0))
		out, err := jsonobj.Encode(fields, p, extra)
		require.NoError(t, err)
		assert.Equal(t, `{"csv":1}`, string(out))
	})
}

func TestPresenceForget(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		forget int
		want   string
	}{
		{name: "present zero field is then omitted", in: `{"name":"","count":0}`, forget: fName, want: `{"count":0}`},
		{name: "null field is then omitted", in: `{"name":null,"on":null}`, forget: fOn, want: `{"name":null}`},
		{name: "non-zero field is still written", in: `{"name":"a"}`, forget: fName, want: `{"name":"a"}`},
		{name: "absent field: no change", in: `{"count":0}`, forget: fName, want: `{"count":0}`},
		{name: "unknown keys are untouched", in: `{"count":0,"x":1}`, forget: fCount, want: `{"x":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := decodeSample(t, tt.in)
			before := s.presence
			s.presence = s.presence.Forget(tt.forget)
			assert.False(t, s.presence.Has(tt.forget))
			assert.False(t, s.presence.Null(tt.forget))
			for i := range nFields {
				if i != tt.forget {
					assert.Equal(t, before.Has(i), s.presence.Has(i), "Has(%d) of another field", i)
					assert.Equal(t, before.Null(i), s.presence.Null(i), "Null(%d) of another field", i)
				}
			}
			assert.Equal(t, tt.want, encode(t, s))
		})
	}
	t.Run("Forget returns a copy", func(t *testing.T) {
		s := decodeSample(t, `{"name":null}`)
		_ = s.presence.Forget(fName)
		assert.True(t, s.presence.Has(fName))
		assert.True(t, s.presence.Null(fName))
	})
}
