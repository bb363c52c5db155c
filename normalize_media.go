package agentctx

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// Media the provider would reject. A base64 image is sent with the media type its bytes show
// (a screenshot saved as .png that is really a JPEG is common), or, when its data is no image
// the provider takes or does not decode, replaced by a text marker; a base64 document whose
// data does not decode is replaced the same way. Either would fail the request, and with it
// every later request, since the history is sent again each turn.

// cleanImage checks a base64 image of the request (b is the request's own copy) and returns
// it, with its media type corrected, or the marker that replaces it.
func (n *normalizer) cleanImage(b *transcript.Image, uuid, id string) transcript.Block {
	s := &b.Source
	if s.Type != "base64" {
		return b
	}
	head, ok := base64Head(s.Data)
	got := imageType(head)
	var why, marker string
	switch {
	case !ok:
		why, marker = "image data is not valid base64", imageNotDecodedText
	case got == "":
		why, marker = fmt.Sprintf("image data (media_type %q) is not a PNG, JPEG, GIF or WebP image", s.MediaType), imageUnknownText
	case got != s.MediaType:
		n.act(ActionRepaired, uuid, id, fmt.Sprintf("image media_type %q does not match its data: sent as %s", s.MediaType, got), 0)
		s.MediaType = got
		return b
	default:
		return b
	}
	return n.mediaMarker(b, marker, why, uuid, id)
}

// cleanDocument checks a base64 document of the request and returns it, or the marker that
// replaces it.
func (n *normalizer) cleanDocument(b *transcript.Document, uuid, id string) transcript.Block {
	if b.Source.Type != "base64" {
		return b
	}
	if _, ok := base64Head(b.Source.Data); ok {
		return b
	}
	return n.mediaMarker(b, documentNotDecoded, "document data is not valid base64", uuid, id)
}

func (n *normalizer) mediaMarker(b transcript.Block, marker, why, uuid, id string) transcript.Block {
	t := &transcript.Text{Text: marker}
	n.act(ActionRepaired, uuid, id, why+": replaced by a text marker", n.s.counter.Block(t)-n.s.counter.Block(b))
	return t
}

// imageType returns the media type the first bytes of an image show, among the formats the
// provider takes (PNG, JPEG, GIF, WebP), or "".
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// base64Head decodes data as standard, padded base64 (line breaks ignored), as the provider
// reads it, and returns its first bytes (up to 12, enough for [imageType]); ok is false when
// data does not decode. It reads the whole of data without holding the decoded bytes.
func base64Head(data string) (head []byte, ok bool) {
	const chunk = 4096 // base64 characters decoded at a time: a whole number of quanta
	var in [chunk]byte
	var out [chunk / 4 * 3]byte
	if strings.ContainsAny(data, "\r\n") {
		return base64HeadStream(data)
	}
	// Without line breaks, decoding chunk by chunk is decoding the whole, provided padding
	// stands only at the very end (a chunk could otherwise end with it).
	if len(data)%4 != 0 {
		return nil, false
	}
	if i := strings.IndexByte(data, '='); i >= 0 && i < len(data)-2 {
		return nil, false
	}
	for i := 0; i < len(data); i += chunk {
		k := copy(in[:], data[i:])
		m, err := base64.StdEncoding.Decode(out[:], in[:k])
		if err != nil {
			return nil, false
		}
		if i == 0 {
			head = bytes.Clone(out[:min(m, 12)])
		}
	}
	return head, true
}

// base64HeadStream is [base64Head] for data with line breaks.
func base64HeadStream(data string) ([]byte, bool) {
	d := base64.NewDecoder(base64.StdEncoding, strings.NewReader(data))
	head := make([]byte, 12)
	k, err := io.ReadFull(d, head)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return head[:k], true
	}
	if err != nil {
		return nil, false
	}
	if _, err := io.Copy(io.Discard, d); err != nil {
		return nil, false
	}
	return head, true
}
