package testkit

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"testing"
)

// PNG returns base64 PNG data of a w×h gray image.
func PNG(t testing.TB, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatalf("encode a %d×%d PNG: %v", w, h, err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// MediaSamples returns base64 data of each image format by name ("png", "jpeg", "gif",
// "webp", "bmp"), encoded by the standard library (WebP and BMP: their headers, which is all
// the provider's sniffing reads).
func MediaSamples(t testing.TB) map[string]string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 4, 3))
	var jpg, gf bytes.Buffer
	if err := jpeg.Encode(&jpg, img, nil); err != nil {
		t.Fatalf("encode a JPEG: %v", err)
	}
	if err := gif.Encode(&gf, img, nil); err != nil {
		t.Fatalf("encode a GIF: %v", err)
	}
	enc := base64.StdEncoding.EncodeToString
	return map[string]string{
		"png":  PNG(t, 4, 3),
		"jpeg": enc(jpg.Bytes()),
		"gif":  enc(gf.Bytes()),
		"webp": enc([]byte("RIFF\x24\x00\x00\x00WEBPVP8 \x18\x00\x00\x00")),
		"bmp":  enc([]byte("BM\x46\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00")),
	}
}
