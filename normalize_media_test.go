package agentctx

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
)

// TestNormalizeMedia sends images whose media type does not match their bytes, images that
// are no format the provider takes, and base64 that does not decode, at the top of a user
// message and inside a tool result; the request must pass Validate (which checks the bytes
// too) with each repair reported.
func TestNormalizeMedia(t *testing.T) {
	data := testkit.MediaSamples(t)
	img := func(mt, d string) *transcript.Image {
		return &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: mt, Data: d}}
	}
	lines := func(d string) string { // the same base64, in lines of 76 characters
		var b strings.Builder
		for len(d) > 76 {
			b.WriteString(d[:76] + "\r\n")
			d = d[76:]
		}
		return b.String() + d
	}
	tests := []struct {
		name   string
		block  transcript.Block
		want   string // media type sent, or the marker text
		action string // "" for none
	}{
		{"png as png", img("image/png", data["png"]), "image/png", ""},
		{"jpeg claimed png", img("image/png", data["jpeg"]), "image/jpeg", `image media_type "image/png" does not match its data: sent as image/jpeg`},
		{"gif claimed jpeg", img("image/jpeg", data["gif"]), "image/gif", "sent as image/gif"},
		{"webp claimed png", img("image/png", data["webp"]), "image/webp", "sent as image/webp"},
		{"png claimed image/jpg", img("image/jpg", data["png"]), "image/png", "sent as image/png"},
		{"png without a media type", img("", data["png"]), "image/png", "sent as image/png"},
		{"base64 in lines decodes", img("image/jpeg", lines(data["jpeg"])), "image/jpeg", ""},
		{"bmp is no image the provider takes", img("image/bmp", data["bmp"]), imageUnknownText, `image data (media_type "image/bmp") is not a PNG, JPEG, GIF or WebP image: replaced by a text marker`},
		{"text bytes claimed png", img("image/png", base64.StdEncoding.EncodeToString([]byte("<svg></svg>"))), imageUnknownText, "is not a PNG, JPEG, GIF or WebP image"},
		{"empty data", img("image/png", ""), imageUnknownText, "is not a PNG, JPEG, GIF or WebP image"},
		{"not base64", img("image/png", "not base64!"), imageNotDecodedText, "image data is not valid base64: replaced by a text marker"},
		{"broken tail", img("image/png", data["png"][:len(data["png"])-1]), imageNotDecodedText, "not valid base64"},
		{"padding inside", img("image/png", "iVBORw=="+data["png"]), imageNotDecodedText, "not valid base64"},
		{"bad byte in lines", img("image/jpeg", lines(data["jpeg"])+"*"), imageNotDecodedText, "not valid base64"},
		{"url image is not read", &transcript.Image{Source: transcript.MediaSource{Type: "url", URL: "https://example.com/x.png"}}, "", ""},
		{"document that does not decode", &transcript.Document{Source: transcript.MediaSource{Type: "base64", MediaType: "application/pdf", Data: "%PDF"}}, documentNotDecoded, "document data is not valid base64: replaced by a text marker"},
		{"document that decodes", &transcript.Document{Source: transcript.MediaSource{Type: "base64", MediaType: "application/pdf", Data: base64.StdEncoding.EncodeToString([]byte("%PDF-1.4"))}}, "application/pdf", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := newTK()
			k.user("look")
			r := k.next(transcript.TypeUser)
			r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("here"), tt.block}}
			k.add(r)
			k.assistant(toolUse("t1", "Read"))
			k.results(&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{tt.block}})
			res := normPrepare(t, normConfig(), Input{Records: k.recs, Tools: []provider.Tool{valReadTool}})
			results, _ := toolResults(res.Request)
			for _, got := range []transcript.Block{res.Request.Messages[0].Content[2], results["t1"].Content[0]} {
				switch got := got.(type) {
				case *transcript.Image:
					assert.Equal(t, tt.want, got.Source.MediaType)
				case *transcript.Document:
					assert.Equal(t, tt.want, got.Source.MediaType)
				case *transcript.Text:
					assert.Equal(t, tt.want, got.Text)
				}
			}
			var n int
			for _, a := range res.Report.Stage("normalize").Actions {
				if tt.action != "" && strings.Contains(a.Detail, tt.action) {
					n++
				}
			}
			if tt.action != "" {
				assert.Equal(t, 2, n, "one action for each copy: %q", normDetails(&res.Report))
			}
		})
	}
	// The transcript's blocks are left as they were.
	b := img("image/png", data["jpeg"])
	k := newTK()
	r := k.next(transcript.TypeUser)
	r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{b}}
	k.add(r)
	normPrepare(t, normConfig(), Input{Records: k.recs})
	assert.Equal(t, "image/png", b.Source.MediaType)
}
