package provider

import (
	"encoding/json"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// BodySize returns the length of the body [Request.MarshalJSON] writes when it may reach
// limit, or 0 when it surely does not. Two upper bounds of the encoded size come first, and
// the body is measured only when both reach the limit, so a typical request never pays for an
// encoding: the loose bound sums lengths only (every string byte taken as a six-byte escape),
// the exact-string bound, taken only when the loose one reaches the limit, scans the strings
// for the escapes they need. The measure copies nothing the request's [EncodeMemo] holds (it
// counts those parts' lengths), and stores there the parts it encodes and the size.
func (r *Request) BodySize(limit int) (int, error) {
	if bodyBound(r, false) < limit || bodyBound(r, true) < limit {
		return 0, nil
	}
	return encodedSize(r, r.Memo)
}

// Encoding factors of the bound: a byte of a string can take up to six bytes as a JSON
// escape; raw JSON is re-encoded compact, an invalid byte becoming a three-byte U+FFFD; base64
// needs no escapes. blockOverhead covers keys, quotes and punctuation.
const (
	escapeFactor  = 6
	rawFactor     = 3
	blockOverhead = 256
)

// bodyBound is an upper bound of the encoded size of req: with exact false from the lengths
// of its strings, with exact true from their encoded lengths (quotedLen).
func bodyBound(req *Request, exact bool) int {
	n := blockOverhead + strBound(req.Model, exact) + len(req.ContextManagement)
	for _, t := range req.System {
		n += blockBound(t, exact)
	}
	for _, t := range req.Tools {
		n += blockOverhead + rawFactor*len(t.Definition) + strBound(t.Name, exact)
	}
	for _, m := range req.Messages {
		n += blockOverhead
		for _, b := range m.Content {
			n += blockBound(b, exact)
		}
	}
	return n
}

// strBound bounds the encoding of s: its exact encoded length, or six bytes a byte.
func strBound(s string, exact bool) int {
	if exact {
		return jsonobj.QuotedLen(s)
	}
	return escapeFactor * len(s)
}

func blockBound(b transcript.Block, exact bool) int {
	n := blockOverhead
	switch b := b.(type) {
	case *transcript.Text:
		n += strBound(b.Text, exact) + rawBound(b.Citations, b.Extra, exact)
	case *transcript.Image:
		n += mediaBound(&b.Source, exact) + rawBound(nil, b.Extra, exact)
	case *transcript.Document:
		n += mediaBound(&b.Source, exact) + strBound(b.Title, exact) + strBound(b.Context, exact) + rawBound(b.Citations, b.Extra, exact)
	case *transcript.ToolUse:
		n += strBound(b.ID, exact) + strBound(b.Name, exact) + rawBound(b.Input, b.Extra, exact)
	case *transcript.ToolResult:
		n += strBound(b.ToolUseID, exact) + strBound(b.CacheReference, exact) + rawBound(nil, b.Extra, exact)
		for _, c := range b.Content {
			n += blockBound(c, exact)
		}
	case *transcript.Thinking:
		n += strBound(b.Thinking, exact) + strBound(b.Signature, exact) + rawBound(nil, b.Extra, exact)
	case *transcript.RedactedThinking:
		n += strBound(b.Data, exact) + rawBound(nil, b.Extra, exact)
	default:
		// Server tool blocks, tool references, cache edits and unknown blocks: measured by
		// encoding them (they are small, and rare).
		enc, err := marshalRequestBlock(b)
		if err != nil {
			return 1 << 40 // no bound: the exact encoding decides, and reports the error
		}
		n += len(enc)
	}
	return n
}

// rawBound bounds raw JSON r re-encoded and the unknown fields extra.
func rawBound(r []byte, extra map[string]json.RawMessage, exact bool) int {
	n := rawFactor * len(r)
	if len(extra) > 0 {
		for k, v := range extra {
			n += strBound(k, exact) + rawFactor*len(v)
		}
	}
	return n
}

// mediaBound bounds the source of an image or document.
func mediaBound(s *transcript.MediaSource, exact bool) int {
	n := strBound(s.Type, exact) + strBound(s.MediaType, exact) + strBound(s.URL, exact) + strBound(s.FileID, exact) + rawBound(nil, s.Extra, exact)
	if s.Type == "base64" {
		return n + len(s.Data) // the base64 alphabet needs no escapes
	}
	return n + strBound(s.Data, exact)
}
