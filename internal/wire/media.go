package wire

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"strings"
)

// ImageType returns the media type the first bytes of an image show, among the formats the
// provider takes (PNG, JPEG, GIF, WebP), or "".
func ImageType(head []byte) string {
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

// Base64Head decodes data as standard, padded base64 (line breaks ignored), as the provider
// reads it, and returns its first bytes (up to 12, enough for [ImageType]); ok is false when
// data does not decode. It reads the whole of data without holding the decoded bytes.
func Base64Head(data string) (head []byte, ok bool) {
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

// base64HeadStream is [Base64Head] for data with line breaks.
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

// ImageSize reads the pixel size of base64 PNG, JPEG or GIF data from its header, decoding
// only the bytes the header needs (a JPEG's metadata segments are read through). Other formats
// (WebP) and undecodable data report !ok.
func ImageSize(data string) (w, h int, ok bool) {
	if data == "" {
		return 0, 0, false
	}
	var magic [6]byte
	if _, err := base64.StdEncoding.Decode(magic[:], []byte(data[:min(len(data), 8)])); err != nil {
		return 0, 0, false
	}
	var decodeConfig func(io.Reader) (image.Config, error)
	switch {
	case bytes.HasPrefix(magic[:], []byte("\x89PNG")):
		decodeConfig = png.DecodeConfig
	case bytes.HasPrefix(magic[:], []byte("\xff\xd8")):
		decodeConfig = jpeg.DecodeConfig
	case bytes.HasPrefix(magic[:], []byte("GIF8")):
		decodeConfig = gif.DecodeConfig
	default:
		return 0, 0, false
	}
	cfg, err := decodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}
