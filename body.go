package agentctx

import (
	"encoding/json"
	"errors"
	"fmt"
)

// DefaultMaxBodyBytes is the largest request body the Messages API accepts: 32 MB.
const DefaultMaxBodyBytes = 32_000_000

// ErrRequestTooLarge is the sentinel a [*RequestTooLargeError] matches with errors.Is.
var ErrRequestTooLarge = errors.New("agentctx: request body too large")

// RequestTooLargeError reports a request whose JSON body is over the provider's size limit
// ([PressureConfig.MaxBodyBytes]) however few tokens it holds — base64 images and documents
// weigh far more in bytes than in tokens. [Pipeline.Prepare] compacts such a request when it
// can (the summary replaces the media of the history) and returns this error when it cannot
// or the compacted request is still over; the Result returned with it holds the Report and the
// records to append, as with [*PromptTooLongError].
type RequestTooLargeError struct {
	// Bytes is the size of the body, Limit the most it may be.
	Bytes, Limit int
	// Reason says why compaction did not bring it under.
	Reason string
}

func (e *RequestTooLargeError) Error() string {
	return fmt.Sprintf("agentctx: request body too large: %d bytes > %d maximum: %s", e.Bytes, e.Limit, e.Reason)
}

// Is makes errors.Is(err, ErrRequestTooLarge) hold.
func (e *RequestTooLargeError) Is(target error) bool { return target == ErrRequestTooLarge }

func (c PressureConfig) maxBody() int {
	if c.MaxBodyBytes == 0 {
		return DefaultMaxBodyBytes
	}
	return c.MaxBodyBytes
}

// bodyBytes returns the size of the request's body when it may be over limit, or 0 when it
// is surely under: an upper bound of the encoded size is summed first, and the body is measured
// only when the bound reaches the limit, so a typical turn never pays for an encoding. The
// measure copies nothing the request's encode memo holds (see encodedSize).
func bodyBytes(req *Request, limit int) (int, error) {
	if bodyBound(req) < limit {
		return 0, nil
	}
	return encodedSize(req, req.memo)
}

// Encoding factors of the bound: a byte of a string can take up to six bytes as a JSON
// escape; raw JSON is re-encoded compact, an invalid byte becoming a three-byte U+FFFD; base64
// needs no escapes. blockOverhead covers keys, quotes and punctuation.
const (
	escapeFactor  = 6
	rawFactor     = 3
	blockOverhead = 256
)

// bodyBound is an upper bound of the encoded size of req.
func bodyBound(req *Request) int {
	n := blockOverhead + escapeFactor*len(req.Model)
	for _, t := range req.System {
		n += blockBound(t)
	}
	for _, t := range req.Tools {
		n += blockOverhead + rawFactor*len(t.Definition) + escapeFactor*len(t.Name)
	}
	for _, m := range req.Messages {
		n += blockOverhead
		for _, b := range m.Content {
			n += blockBound(b)
		}
	}
	return n
}

func blockBound(b Block) int {
	n := blockOverhead
	switch b := b.(type) {
	case *Text:
		n += escapeFactor*len(b.Text) + rawBound(b.Citations, b.Extra)
	case *Image:
		n += mediaBound(&b.Source) + rawBound(nil, b.Extra)
	case *Document:
		n += mediaBound(&b.Source) + escapeFactor*(len(b.Title)+len(b.Context)) + rawBound(b.Citations, b.Extra)
	case *ToolUse:
		n += escapeFactor*(len(b.ID)+len(b.Name)) + rawBound(b.Input, b.Extra)
	case *ToolResult:
		n += escapeFactor*(len(b.ToolUseID)+len(b.CacheReference)) + rawBound(nil, b.Extra)
		for _, c := range b.Content {
			n += blockBound(c)
		}
	case *Thinking:
		n += escapeFactor*(len(b.Thinking)+len(b.Signature)) + rawBound(nil, b.Extra)
	case *RedactedThinking:
		n += escapeFactor*len(b.Data) + rawBound(nil, b.Extra)
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
func rawBound(r []byte, extra map[string]json.RawMessage) int {
	n := rawFactor * len(r)
	if len(extra) > 0 {
		for k, v := range extra {
			n += escapeFactor*len(k) + rawFactor*len(v)
		}
	}
	return n
}

// mediaBound bounds the source of an image or document.
func mediaBound(s *MediaSource) int {
	n := escapeFactor*(len(s.Type)+len(s.MediaType)+len(s.URL)+len(s.FileID)) + rawBound(nil, s.Extra)
	if s.Type == "base64" {
		return n + len(s.Data) // the base64 alphabet needs no escapes
	}
	return n + escapeFactor*len(s.Data)
}
