package provider

import (
	"bytes"
	"fmt"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// marshalSlow is the reference encoder, Request.MarshalJSON as it was before encode.go: each
// block through [transcript.MarshalBlock]. The encoder of encode.go must give exactly its bytes, and
// the same errors.
func (r Request) marshalSlow() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"model":`)
	writeJSON(&buf, r.Model)
	fmt.Fprintf(&buf, `,"max_tokens":%d`, r.MaxTokens)
	if len(r.System) > 0 {
		buf.WriteString(`,"system":[`)
		for i, b := range r.System {
			if i > 0 {
				buf.WriteByte(',')
			}
			enc, err := transcript.MarshalBlock(b)
			if err != nil {
				return nil, jsonobj.Wrap(fmt.Sprintf("system[%d]", i), err)
			}
			buf.Write(enc)
		}
		buf.WriteByte(']')
	}
	buf.WriteString(`,"messages":[`)
	for i, m := range r.Messages {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"role":`)
		writeJSON(&buf, m.Role)
		buf.WriteString(`,"content":[`)
		for j, b := range m.Content {
			if j > 0 {
				buf.WriteByte(',')
			}
			enc, err := marshalRequestBlock(b)
			if err != nil {
				return nil, jsonobj.Wrap(fmt.Sprintf("messages[%d].content[%d]", i, j), err)
			}
			buf.Write(enc)
		}
		buf.WriteString(`]}`)
	}
	buf.WriteByte(']')
	if len(r.Tools) > 0 {
		buf.WriteString(`,"tools":[`)
		for i, t := range r.Tools {
			if i > 0 {
				buf.WriteByte(',')
			}
			enc, err := t.marshal()
			if err != nil {
				return nil, jsonobj.Wrap(fmt.Sprintf("tools[%d]", i), err)
			}
			buf.Write(enc)
		}
		buf.WriteByte(']')
	}
	if r.ToolChoice != nil {
		buf.WriteString(`,"tool_choice":`)
		writeJSON(&buf, r.ToolChoice)
	}
	if r.Thinking != nil {
		buf.WriteString(`,"thinking":`)
		writeJSON(&buf, r.Thinking)
	}
	if len(r.ContextManagement) > 0 {
		buf.WriteString(`,"context_management":`)
		buf.Write(r.ContextManagement)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, v any) {
	b, err := jsonobj.Marshal(v)
	if err != nil {
		panic("agentctx: unreachable: " + err.Error())
	}
	buf.Write(b)
}
