package liveloop

import (
	"bytes"
	"encoding/json"
	"hash/maphash"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// body is a request body split in one pass: its messages, one raw JSON value each, and
// the rest of its members.
type body struct {
	// messages are the elements of the "messages" member.
	messages []json.RawMessage
	// head is the body without its "messages" and "stream" members.
	head []byte
	// stream is the "stream" member.
	stream bool
}

// splitBody splits a JSON object body. It reads the body once; a body the single-pass
// scanner cannot read is read again with encoding/json, whose error names the problem.
func splitBody(data []byte) (body, error) {
	var b body
	var s jsonobj.Scanner
	s.Reset(data)
	head := bytes.NewBufferString("{")
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "messages":
			return s.Array(func() bool {
				raw, ok := s.Raw()
				b.messages = append(b.messages, raw)
				return ok
			})
		case "stream":
			v, ok := s.Bool()
			b.stream = v
			return ok
		}
		k, err := json.Marshal(string(key))
		raw, ok := s.Raw()
		if err != nil || !ok {
			return false
		}
		if head.Len() > 1 {
			head.WriteByte(',')
		}
		head.Write(k)
		head.WriteByte(':')
		head.Write(raw)
		return true
	})
	if !ok || !s.End() {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(data, &v); err != nil {
			return b, err
		}
		var top struct {
			Messages []json.RawMessage `json:"messages"`
			Stream   bool              `json:"stream"`
		}
		if err := json.Unmarshal(data, &top); err != nil {
			return b, err
		}
		b.messages, b.stream = top.Messages, top.Stream
		delete(v, "messages")
		delete(v, "stream")
		h, err := json.Marshal(v)
		b.head = h
		return b, err
	}
	head.WriteByte('}')
	b.head = head.Bytes()
	return b, nil
}

// msgKey identifies a message of a request body by its exact bytes.
type msgKey struct {
	hash uint64
	n    int
}

func keyOf(seed maphash.Seed, raw []byte) msgKey { return msgKey{maphash.Bytes(seed, raw), len(raw)} }
