package agentctx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// byteCounter counts one token per byte, so expected counts are lengths.
var byteCounter = TokenCounterFunc(func(s string) int { return len(s) })

func encodeImage(t *testing.T, format string, w, h int) string {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	switch format {
	case "png":
		require.NoError(t, png.Encode(&buf, img))
	case "jpeg":
		require.NoError(t, jpeg.Encode(&buf, img, nil))
	case "gif":
		require.NoError(t, gif.Encode(&buf, img, nil))
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestImageTokensForSize(t *testing.T) {
	for _, tt := range []struct{ w, h, want int }{
		{1, 1, 1},
		{100, 75, 10},
		{200, 200, 54},     // 40000/750 = 53.3
		{1000, 1000, 1334}, // 1,333.3
		{1092, 1092, 1590}, // Anthropic's table: 1:1 at ~1.19 MP ≈ 1,590 tokens
		{1568, 100, 210},
		{3136, 200, 210},   // scaled to 1568×100
		{3000, 2000, 1600}, // scaled to 1568×1045, then capped
		{100000, 1, 3},     // scaled to 1568×1
		{4000, 4000, 1600}, // capped
		{1, 100000, 3},     // portrait
		{10000, 3000, 983}, // scaled to 1568×470
	} {
		assert.Equal(t, tt.want, imageTokensForSize(tt.w, tt.h), "%d×%d", tt.w, tt.h)
	}
}

func TestCounterBlock(t *testing.T) {
	const pdf = "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >> endobj\n" +
		"3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n4 0 obj <</Type/Page/Parent 2 0 R>> endobj\n%%EOF"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	c := NewCounter(byteCounter)
	for _, tt := range []struct {
		name string
		b    transcript.Block
		want int
	}{
		{"nil", nil, 0},
		{"text", &transcript.Text{Text: "hello"}, 5},
		{"text citations", &transcript.Text{Text: "hi", Citations: json.RawMessage(`[1]`)}, 5},
		{"text null citations", &transcript.Text{Text: "hi", Citations: json.RawMessage(`null`)}, 2},
		{"thinking", &transcript.Thinking{Thinking: "think", Signature: strings.Repeat("s", 500)}, 5},
		{"redacted thinking", &transcript.RedactedThinking{Data: strings.Repeat("x", 400)}, 100},
		{"tool_use", &transcript.ToolUse{ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{"c":1}`)}, 4 + 7 + toolOverheadTokens},
		{"server_tool_use", &transcript.ServerToolUse{Name: "web_search", Input: json.RawMessage(`{}`)}, 10 + 2 + toolOverheadTokens},
		{"tool_result string", &transcript.ToolResult{ToolUseID: "t", Content: []transcript.Block{&transcript.Text{Text: "output"}}, StringContent: true}, 6 + toolOverheadTokens},
		{"tool_result empty", &transcript.ToolResult{ToolUseID: "t"}, toolOverheadTokens},
		{"tool_result nested", &transcript.ToolResult{Content: []transcript.Block{&transcript.Text{Text: "ab"}, &transcript.ToolReference{ToolName: "Grep"},
			&transcript.Image{Source: transcript.MediaSource{Type: "url", URL: "https://x"}}}}, 2 + 4 + defaultImageTokens + toolOverheadTokens},
		{"server tool result", &transcript.ServerToolResult{Type: "web_search_tool_result", Content: json.RawMessage(`[{"a":1}]`)}, 9},
		{"tool_reference", &transcript.ToolReference{ToolName: "Grep"}, 4},
		{"image png", &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: encodeImage(t, "png", 100, 75)}}, 10},
		{"image jpeg", &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/jpeg", Data: encodeImage(t, "jpeg", 1000, 1000)}}, 1334},
		{"image gif", &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/gif", Data: encodeImage(t, "gif", 3000, 2000)}}, 1600},
		{"image mislabeled", &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/jpeg", Data: encodeImage(t, "png", 200, 200)}}, 54},
		{"image webp", &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/webp", Data: b64("RIFF\x00\x00\x00\x00WEBPVP8 ")}}, defaultImageTokens},
		{"image garbage", &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: "!!!!"}}, defaultImageTokens},
		{"image url", &transcript.Image{Source: transcript.MediaSource{Type: "url", URL: "https://example.com/a.png"}}, defaultImageTokens},
		{"document text", &transcript.Document{Source: transcript.MediaSource{Type: "text", MediaType: "text/plain", Data: "plain"}, Title: "T"}, 6},
		{"document content", &transcript.Document{Source: transcript.MediaSource{Type: "content", Extra: map[string]json.RawMessage{"content": json.RawMessage(`"abc"`)}}}, 5},
		{"document pdf", &transcript.Document{Source: transcript.MediaSource{Type: "base64", MediaType: "application/pdf", Data: b64(pdf)}}, 2 * pdfPageTokens},
		{"document pdf no pages", &transcript.Document{Source: transcript.MediaSource{Type: "base64", MediaType: "application/pdf", Data: b64("%PDF-1.7 compressed")}}, pdfPageTokens},
		{"document pdf bad base64", &transcript.Document{Source: transcript.MediaSource{Type: "base64", MediaType: "application/pdf", Data: "%%%"}}, pdfPageTokens},
		{"document url", &transcript.Document{Source: transcript.MediaSource{Type: "url", URL: "https://x/a.pdf"}, Context: "ctx"}, 3 + pdfPageTokens},
		{"unknown", &transcript.UnknownBlock{Type: "future", JSON: json.RawMessage(`{"type":"future"}`)}, 17},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, c.Block(tt.b))
			assert.Equal(t, tt.want, c.Block(tt.b), "memoized")
		})
	}
}

func TestCounterBreakdown(t *testing.T) {
	c := NewCounter(byteCounter)
	user := &transcript.Record{Type: transcript.TypeUser, UUID: "u1", Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{
		&transcript.Text{Text: "12345"},
		&transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.Text{Text: "abc"}, &transcript.Image{Source: transcript.MediaSource{Type: "file"}}}},
		&transcript.Image{Source: transcript.MediaSource{Type: "url"}},
		&transcript.UnknownBlock{Type: "x", JSON: json.RawMessage(`{}`)},
	}}}
	asst := &transcript.Record{Type: transcript.TypeAssistant, UUID: "a1", Message: &transcript.Message{ID: "msg_1", Role: transcript.RoleAssistant, Content: []transcript.Block{
		&transcript.Thinking{Thinking: "hmm", Signature: "sig"},
		&transcript.RedactedThinking{Data: "12345678"},
		&transcript.Text{Text: "answer"},
		&transcript.ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage(`{}`)},
	}}}
	for _, tt := range []struct {
		name string
		r    *transcript.Record
		want Breakdown
	}{
		{"nil", nil, Breakdown{}},
		{"system", &transcript.Record{Type: transcript.TypeSystem, UUID: "s", Content: json.RawMessage(`"x"`)}, Breakdown{}},
		{"user without message", &transcript.Record{Type: transcript.TypeUser, UUID: "u"}, Breakdown{}},
		{"user", user, Breakdown{UserText: 5, ToolResult: 3 + toolOverheadTokens, Media: 2 * defaultImageTokens,
			Other: 2 + messageOverheadTokens}},
		{"assistant", asst, Breakdown{AssistantText: 6, Thinking: 3 + 2, ToolUse: 4 + 2 + toolOverheadTokens,
			Other: messageOverheadTokens}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Breakdown(tt.r)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want.Total(), c.Record(tt.r))
			if tt.r != nil && tt.r.Message != nil {
				assert.Equal(t, tt.want.Total(), c.Message(tt.r.Message))
			}
		})
	}

	sum := c.Breakdown(user).Add(c.Breakdown(asst))
	assert.Equal(t, c.Record(user)+c.Record(asst), sum.Total())
	total := 0
	for _, cat := range Categories() {
		total += sum.Get(cat)
	}
	assert.Equal(t, sum.Total(), total, "Get covers every category")
	assert.Zero(t, sum.Get("nonsense"))
	assert.Equal(t, 7, Breakdown{System: 7}.Get(CategorySystem))
	assert.Equal(t, 5, c.Blocks([]transcript.Block{&transcript.Text{Text: "ab"}, &transcript.Text{Text: "cde"}}))
}

func TestCounterMemo(t *testing.T) {
	var calls atomic.Int64
	c := NewCounter(TokenCounterFunc(func(s string) int { calls.Add(1); return len(s) }))

	assert.Equal(t, 5, c.Text("hello"))
	assert.Equal(t, 5, c.Text("hello"))
	assert.Equal(t, int64(1), calls.Load(), "second Text is a memo hit")
	assert.Zero(t, c.Text(""))
	assert.Equal(t, int64(1), calls.Load(), "empty text is not counted")

	r := &transcript.Record{Type: transcript.TypeAssistant, UUID: "a", Message: &transcript.Message{Role: transcript.RoleAssistant, Content: []transcript.Block{
		&transcript.Text{Text: "one"}, &transcript.ToolUse{Name: "Bash", Input: json.RawMessage(`{"x":1}`)}}}}
	n := c.Record(r)
	before := calls.Load()
	assert.Equal(t, n, c.Record(r))
	assert.Equal(t, before, calls.Load(), "second Record is a memo hit")

	// A copy with the same content and uuid hits; different content under the same uuid
	// is recounted.
	cp := *r
	cp.Message = &transcript.Message{Role: transcript.RoleAssistant, Content: []transcript.Block{&transcript.Text{Text: "one"}, &transcript.ToolUse{Name: "Bash", Input: json.RawMessage(`{"x":1}`)}}}
	assert.Equal(t, n, c.Record(&cp))
	cp.Message.Content[0] = &transcript.Text{Text: "one!"}
	assert.Equal(t, n+1, c.Record(&cp))

	// The memo is bounded: it holds two generations of at most maxTextMemo entries.
	for i := range 2*maxTextMemo + 10 {
		c.Text(strings.Repeat("x", i%1000+1) + strconv.Itoa(i))
	}
	c.mu.Lock()
	size := c.texts.Len()
	c.mu.Unlock()
	assert.LessOrEqual(t, size, 2*maxTextMemo)
	assert.Greater(t, size, maxTextMemo)
}

// TestCounterIdentityMemo checks the memo by identity in front of the memo by content: the
// same string is found without hashing it, a copy of it (other bytes, same text) is found by
// content, a prefix sharing its first byte is a text of its own, and a text and an image of
// the same bytes are counted apart.
func TestCounterIdentityMemo(t *testing.T) {
	var calls atomic.Int64
	c := NewCounter(TokenCounterFunc(func(s string) int { calls.Add(1); return len(s) }))
	s := strings.Repeat("identity ", 10)
	assert.Equal(t, len(s), c.Text(s))
	assert.Equal(t, len(s), c.Text(s))
	assert.Equal(t, int64(1), calls.Load())
	c.mu.Lock()
	_, byIdent := c.idents.Get(identKey{data: unsafe.StringData(s), n: len(s), kind: memoText})
	c.mu.Unlock()
	assert.True(t, byIdent, "the string is memoized by identity")

	cp := string([]byte(s))
	require.NotSame(t, unsafe.StringData(s), unsafe.StringData(cp))
	assert.Equal(t, len(s), c.Text(cp))
	assert.Equal(t, int64(1), calls.Load(), "a copy is a hit by content")

	prefix := s[:len(s)-1]
	require.Same(t, unsafe.StringData(s), unsafe.StringData(prefix))
	assert.Equal(t, len(prefix), c.Text(prefix), "a prefix at the same address is another text")
	assert.Equal(t, int64(2), calls.Load())

	img := &transcript.Image{Source: transcript.MediaSource{Type: "base64", Data: s}}
	assert.Equal(t, defaultImageTokens, c.Block(img), "the same bytes as an image are not a text")
	assert.Equal(t, len(s), c.Text(s))

	// Raw JSON rewritten in place is recounted: it is memoized by content only.
	nines := NewCounter(TokenCounterFunc(func(s string) int { return len(s) + strings.Count(s, "9") }))
	tu := &transcript.ToolUse{Name: "Bash", Input: json.RawMessage(`{"x":1}`)}
	assert.Equal(t, 4+7+toolOverheadTokens, nines.Block(tu))
	tu.Input[5] = '9'
	assert.Equal(t, 4+8+toolOverheadTokens, nines.Block(tu))
}

// TestCounterMemoFollowsSession counts a working set larger than the default bounds twice:
// without a reservation the second pass recounts (the memo went round its generations); after
// reserve, as a Pipeline reserves for its turn, it counts nothing again, and the memo holds at
// most twice the reserved bound.
func TestCounterMemoFollowsSession(t *testing.T) {
	const n = 3 * maxTextMemo
	for _, tt := range []struct {
		name     string
		reserve  bool
		recounts bool
	}{
		{"default bounds", false, true},
		{"reserved", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			c := NewCounter(TokenCounterFunc(func(s string) int { calls++; return len(s) }))
			if tt.reserve {
				c.reserve(0, n/4+1, 1, newMemoBudget(defaultMemoBytes)) // blocks: the texts bound is four per block
			}
			for range 2 {
				for i := range n {
					c.Text("text " + strconv.Itoa(i))
				}
			}
			assert.Equal(t, tt.recounts, calls > n, "%d counts of %d texts", calls, n)
			c.mu.Lock()
			assert.LessOrEqual(t, c.texts.Len(), 2*c.texts.Bound())
			c.mu.Unlock()
		})
	}
}

func TestNewCounterDefault(t *testing.T) {
	c := NewCounter(nil)
	assert.Same(t, DefaultTokenCounter(), c.TokenCounter())
	assert.Equal(t, 2, c.Text("hello world"))
}

func TestCounterConcurrent(t *testing.T) {
	var recs []*transcript.Record
	for _, cs := range corpusSessions(t) {
		rs := cs.records
		for i := range rs {
			if rs[i].IsConversation() && len(recs) < 400 {
				recs = append(recs, &rs[i])
			}
		}
	}
	for i := range 100 - min(len(recs), 100) { // no corpus: synthetic records
		recs = append(recs, &transcript.Record{Type: transcript.TypeUser, UUID: string(rune('a' + i)), Message: &transcript.Message{Role: transcript.RoleUser,
			Content: []transcript.Block{&transcript.Text{Text: strings.Repeat("word ", i)}, &transcript.ToolUse{Name: "Read", Input: json.RawMessage(`{}`)}}}})
	}
	want := make([]int, len(recs))
	ref := NewCounter(EstimateCounter{})
	for i, r := range recs {
		want[i] = ref.Record(r)
	}
	c := NewCounter(EstimateCounter{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range recs {
				j := (i + g*37) % len(recs)
				assert.Equal(t, want[j], c.Record(recs[j]))
				c.Block(recs[j].Message.Content[0])
			}
		})
	}
	wg.Wait()
}

// BenchmarkCounterRecord counts the conversation records of the corpus with a cold Counter
// (every record counted with tiktoken) and a warm one (every record a memo hit).
func BenchmarkCounterRecord(b *testing.B) {
	var recs []*transcript.Record
	size := 0
	for _, cs := range corpusSessions(b) {
		rs := cs.records
		for i := range rs {
			if rs[i].IsConversation() {
				recs = append(recs, &rs[i])
				raw, _ := json.Marshal(rs[i].Message)
				size += len(raw)
			}
		}
	}
	if len(recs) == 0 {
		b.Skip("no corpus at ../shared/corpus/claude-code")
	}
	recs = recs[:min(len(recs), 2000)]
	b.Run("warm", func(b *testing.B) {
		c := NewCounter(nil)
		for _, r := range recs {
			c.Record(r)
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, r := range recs {
				c.Record(r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := NewCounter(nil)
			for _, r := range recs {
				c.Record(r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
	})
}
