package agentctx

import (
	"fmt"

	"github.com/agentctx/agentctx/internal/wire"

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
	head, ok := wire.Base64Head(s.Data)
	got := wire.ImageType(head)
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
	if _, ok := wire.Base64Head(b.Source.Data); ok {
		return b
	}
	return n.mediaMarker(b, documentNotDecoded, "document data is not valid base64", uuid, id)
}

func (n *normalizer) mediaMarker(b transcript.Block, marker, why, uuid, id string) transcript.Block {
	t := &transcript.Text{Text: marker}
	n.act(ActionRepaired, uuid, id, why+": replaced by a text marker", n.s.counter.Block(t)-n.s.counter.Block(b))
	return t
}
