package liveloop

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
)

// Screenshot dimensions: a laptop screen's, which the provider takes without resizing.
const (
	shotWidth  = 1280
	shotHeight = 800
)

// screenshot returns the base64 data of a PNG screenshot of about size bytes of base64 (at
// least a flat image's few hundred bytes): a flat background with a band of noise whose
// height sets the compressed size, as a screen with some busy content compresses. The same
// r state gives the same image.
func screenshot(r *rand.Rand, size int) string {
	img := image.NewNRGBA(image.Rect(0, 0, shotWidth, shotHeight))
	bg := color.NRGBA{R: 246, G: 246, B: 248, A: 255}
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = bg.R, bg.G, bg.B, bg.A
	}
	// Noise costs about 3 bytes a pixel once compressed, 4 once in base64.
	rows := min(shotHeight, size/(shotWidth*4))
	top := (shotHeight - rows) / 2
	for y := top; y < top+rows; y++ {
		off := y * img.Stride
		for x := range shotWidth {
			v := r.Uint32()
			img.Pix[off+4*x], img.Pix[off+4*x+1], img.Pix[off+4*x+2] = byte(v), byte(v>>8), byte(v>>16)
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, img); err != nil {
		panic("liveloop: unreachable: encoding an in-memory PNG: " + err.Error())
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}
