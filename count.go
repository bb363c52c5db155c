package agentctx

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"hash/maphash"
	"sync"
	"unsafe"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/memo"
)

// Fixed costs used by [Counter], in tokens.
const (
	// messageOverheadTokens is added once per user or assistant record for the message framing
	// (role and separators) that the provider adds around the content. OpenAI's chat format
	// costs 3–4 tokens per message; Anthropic does not publish its framing, so 3 is a
	// reasoned guess that the provider-anchored total ([Counter.Totals]) absorbs. Claude Code
	// writes one assistant record per content block, so a split response pays it per block.
	messageOverheadTokens = 3

	// toolOverheadTokens is added per tool_use and tool_result block for the tool-call
	// framing (ids, names, delimiters) the provider renders around the payload.
	toolOverheadTokens = 3

	// defaultImageTokens is the cost of an image whose size cannot be read cheaply (URL and
	// file sources, WebP, undecodable data). Anthropic bills about width×height/750 tokens
	// and downscales images whose long edge exceeds 1568 px or that would cost more than
	// about 1,600 tokens, so 1,600 is the ceiling.
	defaultImageTokens = 1600

	// pdfPageTokens is the estimate per PDF page. Anthropic converts every page to text plus
	// an image, "typically 1,500–3,000 tokens per page"; this is the lower middle of that range.
	pdfPageTokens = 2000
)

// Memo bounds, in entries. Each memo keeps two generations (see [memo.Gen]): when the current
// one is full it becomes the previous one, and what a turn finds there moves back, so a turn's
// working set survives from one turn to the next as long as it fits the bound. The bound
// starts here and follows the sessions: a Pipeline reserves four text entries per block of its
// turn and two message entries per record, for each conversation it holds ([Counter.reserve]),
// up to its share of Config.MemoBytes. 64 Ki text entries cost about 4 MB, 16 Ki message
// entries about 4 MB; a memo holds at most twice its bound.
const (
	maxTextMemo    = 1 << 16
	maxMessageMemo = 1 << 14
)

// Memo kinds: the same bytes are counted differently as text, as an image or as a PDF.
const (
	memoText byte = iota
	memoImage
	memoPDF
)

type textKey struct {
	hash uint64
	n    int
	kind byte
}

// identKey identifies a string by where its bytes are: the address of its first byte, its
// length and the memo kind. The address is a pointer, so the key keeps the bytes alive: while
// the entry is in the memo the GC cannot reuse that memory for other bytes, and since Go
// strings are immutable, a string found at the same address with the same length is the same
// text.
type identKey struct {
	data *byte
	n    int
	kind byte
}

// Counter counts the tokens of blocks, messages and records with a [TokenCounter], memoizing
// the results. Counts of a string are memoized twice: by its identity (where its bytes are,
// see identKey), which a turn that counts the same strings as the previous one finds without
// reading them, and by a 64-bit hash of its exact bytes (hash/maphash with a per-Counter seed)
// plus its length, which finds a copy of a text counted before; a false hit of the latter
// would need a 64-bit collision between two texts of equal length. Raw JSON (tool inputs,
// citations, unknown blocks), which a caller could rewrite in place, is memoized by content
// only. The count of a message's blocks is memoized by a key of everything it reads (msgKey),
// and the counts of a whole conversation's sequence of messages, as a turn last counted them,
// by the sequence memo (see [Counter.sequence]). The memos are bounded (see maxTextMemo; the
// bounds follow the largest turn of the Pipeline that owns the Counter; the sequence memo holds
// a bounded number of conversations, each as long as it is) and derivable from the records, so
// dropping them changes nothing but time.
//
// A Counter is safe for concurrent use. Create it with [NewCounter]; the zero value is not
// usable.
type Counter struct {
	tc   TokenCounter
	seed maphash.Seed
	fold memo.Fold // the start of a msgKey

	mu       sync.Mutex
	texts    memo.Gen[textKey, int]
	idents   memo.Gen[identKey, int]
	messages memo.Gen[msgKey, msgEntry]
	seqs     memo.Gen[seqKey, *seqEntry]
}

// NewCounter returns a Counter counting with tc; nil means [DefaultTokenCounter].
func NewCounter(tc TokenCounter) *Counter {
	if tc == nil {
		tc = DefaultTokenCounter()
	}
	seed := maphash.MakeSeed()
	return &Counter{
		tc:     tc,
		seed:   seed,
		fold:   memo.NewFold(seed),
		texts:  memo.NewGen[textKey, int](maxTextMemo),
		idents: memo.NewGen[identKey, int](maxTextMemo),

		messages: memo.NewGen[msgKey, msgEntry](maxMessageMemo),
		seqs:     memo.NewGen[seqKey, *seqEntry](maxSeqMemo),
	}
}

// TokenCounter returns the counter c counts with.
func (c *Counter) TokenCounter() TokenCounter { return c.tc }

// Text returns the token count of s, memoized.
func (c *Counter) Text(s string) int {
	return c.memo(memoText, s, c.tc.CountTokens)
}

// textBytes is Text for raw JSON, without copying on a memo hit.
func (c *Counter) textBytes(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	k := textKey{hash: maphash.Bytes(c.seed, b), n: len(b), kind: memoText}
	if n, ok := c.lookupText(k); ok {
		return n
	}
	n := c.tc.CountTokens(string(b))
	c.storeText(k, n)
	return n
}

// memo returns count(s), memoized by s's identity, then by its content.
func (c *Counter) memo(kind byte, s string, count func(string) int) int {
	if s == "" {
		return 0
	}
	ik := identKey{data: unsafe.StringData(s), n: len(s), kind: kind}
	c.mu.Lock()
	n, ok := c.idents.Get(ik)
	c.mu.Unlock()
	if ok {
		return n
	}
	k := textKey{hash: maphash.String(c.seed, s), n: len(s), kind: kind}
	c.mu.Lock()
	n, ok = c.texts.Get(k)
	if ok {
		c.idents.Put(ik, n)
	}
	c.mu.Unlock()
	if ok {
		return n
	}
	// Count outside the lock: two goroutines may count the same text once each, which is
	// harmless (the count is deterministic) and keeps slow counts from serializing.
	n = count(s)
	c.mu.Lock()
	c.texts.Put(k, n)
	c.idents.Put(ik, n)
	c.mu.Unlock()
	return n
}

func (c *Counter) lookupText(k textKey) (int, bool) {
	c.mu.Lock()
	n, ok := c.texts.Get(k)
	c.mu.Unlock()
	return n, ok
}

func (c *Counter) storeText(k textKey, n int) {
	c.mu.Lock()
	c.texts.Put(k, n)
	c.mu.Unlock()
}

// reserve makes room in the memos for a turn of records records holding blocks blocks: each
// memo's bound becomes at least twice what such a turn counts (texts: a block and its request
// copy share their strings, tool inputs and names add one each; messages: a record, and the
// request message it is part of).
// A Pipeline makes room for as many such turns as the conversations it holds, convs, up to
// its budget's caps; the sequences get two entries per conversation (records and request),
// as many as their share of the budget holds (two generations) of conversations of this
// turn's length, the record sequence taken as long as the records and the request's as short
// as its messages.
func (c *Counter) reserve(records, blocks, convs int, b *memoBudget) {
	seqs := 2 * min(convs, max(int(b.sequences/2/max(memo.SliceBytes(records, seqItem{}), 1)), 1))
	c.mu.Lock()
	c.texts.Reserve(4*blocks*convs, b.texts)
	c.idents.Reserve(4*blocks*convs, b.texts)
	c.messages.Reserve(2*records*convs, b.messages)
	c.seqs.Reserve(seqs, seqs)
	c.mu.Unlock()
}

// Block returns the token count of one content block:
//
//   - text: the text (plus citations, if any);
//   - thinking: the thinking text; the signature is not counted;
//   - redacted_thinking: len(data)/4, an estimate (the data is encrypted base64);
//   - tool_use and server_tool_use: name + input JSON + 3 tokens of tool-call framing;
//   - tool_result: the sum of its content blocks + 3 tokens of tool-call framing;
//   - image: width×height/750 after Anthropic's downscaling when the size can be read from
//     the header of base64 PNG, JPEG or GIF data, else 1,600;
//   - document: a text source is counted; a base64 PDF costs 2,000 tokens per page
//     (pages counted in the file, or one per 64 KiB when they cannot be); other sources
//     one page; title and context are counted;
//   - tool_reference: the tool name;
//   - server tool results and unknown blocks: their raw JSON.
//
// A nil block counts 0. Counts of texts, images and PDFs are memoized by content.
func (c *Counter) Block(b transcript.Block) int {
	var bd Breakdown
	c.addBlock(&bd, transcript.RoleUser, b)
	return bd.Total()
}

// Blocks returns the sum of [Counter.Block] over bs, e.g. for a system prompt.
func (c *Counter) Blocks(bs []transcript.Block) int {
	n := 0
	for _, b := range bs {
		n += c.Block(b)
	}
	return n
}

// Message returns the token count of m: [Counter.MessageOverhead] plus its blocks. A nil message
// counts 0.
func (c *Counter) Message(m *transcript.Message) int {
	if m == nil {
		return 0
	}
	var bd Breakdown
	c.addMessage(&bd, m)
	return bd.Total()
}

// Record returns the token count of r: the count of its message for user and assistant
// records ([transcript.Record.IsConversation]), 0 for every other record, which the model never sees.
// The result is memoized per message content (see [Counter]).
func (c *Counter) Record(r *transcript.Record) int {
	return c.Breakdown(r).Total()
}

// Breakdown returns the token count of r by [Category], memoized per message content (see
// [Counter]). Records that are not user or assistant messages count zero.
func (c *Counter) Breakdown(r *transcript.Record) Breakdown {
	if r == nil || !r.IsConversation() {
		return Breakdown{}
	}
	bd := c.content(r.Message.Role, r.Message.Content)
	bd.Other += messageOverheadTokens
	return bd
}

// content returns the count of a message's blocks by category (without the message's
// framing), memoized by a key of everything the count reads (see msgKey).
func (c *Counter) content(role transcript.Role, blocks []transcript.Block) Breakdown {
	return c.keyed(c.messageKey(role, blocks), role, blocks).bd
}

// messageKey is the msgKey of a message's blocks.
func (c *Counter) messageKey(role transcript.Role, blocks []transcript.Block) msgKey {
	var h fieldHasher
	h.init(c)
	h.message(role, blocks)
	return h.key()
}

// keyed returns the memo entry of the blocks whose key is k, counting them on a miss.
func (c *Counter) keyed(k msgKey, role transcript.Role, blocks []transcript.Block) msgEntry {
	c.mu.Lock()
	e, ok := c.messages.Get(k)
	c.mu.Unlock()
	if ok {
		return e
	}
	for _, b := range blocks {
		c.addBlock(&e.bd, role, b)
	}
	// Hash once more, keeping the strings the key holds by identity.
	var h fieldHasher
	h.init(c)
	h.Keep = &e.keep
	h.message(role, blocks)
	c.mu.Lock()
	c.messages.Put(k, e)
	c.mu.Unlock()
	return e
}

func (c *Counter) addMessage(bd *Breakdown, m *transcript.Message) {
	bd.Other += messageOverheadTokens
	for _, b := range m.Content {
		c.addBlock(bd, m.Role, b)
	}
}

// addBlock adds the count of b to bd under b's category; role decides between user and
// assistant text.
func (c *Counter) addBlock(bd *Breakdown, role transcript.Role, b transcript.Block) {
	switch b := b.(type) {
	case *transcript.Text:
		n := c.Text(b.Text) + c.textBytes(nonNull(b.Citations))
		if role == transcript.RoleAssistant {
			bd.AssistantText += n
		} else {
			bd.UserText += n
		}
	case *transcript.Thinking:
		bd.Thinking += c.Text(b.Thinking)
	case *transcript.RedactedThinking:
		bd.Thinking += len(b.Data) / 4
	case *transcript.ToolUse:
		bd.ToolUse += c.Text(b.Name) + c.textBytes(b.Input) + toolOverheadTokens
	case *transcript.ServerToolUse:
		bd.ToolUse += c.Text(b.Name) + c.textBytes(b.Input) + toolOverheadTokens
	case *transcript.ToolResult:
		bd.ToolResult += toolOverheadTokens
		for _, cb := range b.Content {
			switch cb.(type) {
			case *transcript.Image, *transcript.Document:
				c.addBlock(bd, role, cb)
			default:
				var inner Breakdown
				c.addBlock(&inner, role, cb)
				bd.ToolResult += inner.Total()
			}
		}
	case *transcript.ServerToolResult:
		bd.ToolResult += c.textBytes(b.Content)
	case *transcript.ToolReference:
		bd.ToolResult += c.Text(b.ToolName)
	case *transcript.Image:
		bd.Media += c.imageTokens(&b.Source)
	case *transcript.Document:
		bd.Media += c.documentTokens(b)
	case *transcript.UnknownBlock:
		bd.Other += c.textBytes(b.JSON)
	}
}

func nonNull(raw json.RawMessage) json.RawMessage {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}

func (c *Counter) imageTokens(src *transcript.MediaSource) int {
	if src.Type != "base64" {
		return defaultImageTokens
	}
	// The format is sniffed from the data, not taken from the media type, so the data alone
	// decides the count and is a sound memo key.
	return c.memo(memoImage, src.Data, func(data string) int {
		w, h, ok := wire.ImageSize(data)
		if !ok {
			return defaultImageTokens
		}
		return imageTokensForSize(w, h)
	})
}

// imageTokensForSize applies Anthropic's published rule: an image whose long edge exceeds
// 1568 px is scaled down to that edge, then costs width×height/750 tokens, capped at
// 1,600 (larger images are scaled down further).
func imageTokensForSize(w, h int) int {
	const maxEdge = 1568
	if long := max(w, h); long > maxEdge {
		w = max(1, w*maxEdge/long)
		h = max(1, h*maxEdge/long)
	}
	n := (w*h + 749) / 750
	return min(max(n, 1), defaultImageTokens)
}

func (c *Counter) documentTokens(d *transcript.Document) int {
	n := c.Text(d.Title) + c.Text(d.Context)
	switch src := &d.Source; src.Type {
	case "text":
		n += c.Text(src.Data)
	case "content":
		n += c.textBytes(src.Extra["content"])
	case "base64":
		n += c.memo(memoPDF, src.Data, pdfTokens)
	default: // url, file: the document is not in the transcript
		n += pdfPageTokens
	}
	return n
}

// pdfTokens estimates a base64 PDF: pdfPageTokens per page object ("/Type /Page"). PDFs that
// keep their page objects in compressed object streams show none; they are estimated at one
// page per 64 KiB.
func pdfTokens(data string) int {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return pdfPageTokens
	}
	pages := countPDFPages(raw)
	if pages == 0 {
		pages = max(1, (len(raw)+65535)/65536)
	}
	return pages * pdfPageTokens
}

func countPDFPages(pdf []byte) int {
	n := 0
	for {
		i := bytes.Index(pdf, []byte("/Type"))
		if i < 0 {
			return n
		}
		rest := bytes.TrimLeft(pdf[i+len("/Type"):], " \t\r\n")
		if after, ok := bytes.CutPrefix(rest, []byte("/Page")); ok && (len(after) == 0 || after[0] != 's') {
			n++
		}
		pdf = pdf[i+len("/Type"):]
	}
}

// msgKey identifies what the count of a message's blocks reads: a 64-bit hash of the role and
// of every counted field of every block, each string by its identity (address and length) and
// raw JSON by a hash of its bytes (hash/maphash, the Counter's seed), plus the number of words
// hashed. The words are folded one by one with
// a multiply-and-fold step (as wyhash does), seeded from the Counter's seed. The memo entry keeps the strings hashed by
// identity (msgEntry.keep): while it is in the memo, no other bytes can be at their
// addresses, so a key built from the same addresses and lengths names the same texts. A false
// hit needs a 64-bit collision.
type msgKey struct {
	hash uint64
	n    int
}

// msgEntry is a memoized message count and the strings its key holds by identity.
type msgEntry struct {
	bd   Breakdown
	keep []string
}

// fieldHasher builds a msgKey from the fields the count of a message reads (see
// [memo.Fold]); the encode memo's hasher folds those that decide the encoding, a superset.
type fieldHasher struct{ memo.Fold }

func (h *fieldHasher) init(c *Counter) { h.Fold = c.fold }

func (h *fieldHasher) key() msgKey {
	hash, n := h.Key()
	return msgKey{hash: hash, n: n}
}

// message hashes what the count of blocks in a message of role reads: the role decides
// between user and assistant text.
func (h *fieldHasher) message(role transcript.Role, blocks []transcript.Block) {
	if role == transcript.RoleAssistant {
		h.Word(1)
	} else {
		h.Word(0)
	}
	h.Word(uint64(len(blocks)))
	for _, b := range blocks {
		h.block(b)
	}
}

// block hashes the fields of b that addBlock reads, after a kind of its own.
func (h *fieldHasher) block(b transcript.Block) {
	switch b := b.(type) {
	case *transcript.Text:
		if b != nil {
			h.Word(1)
			h.Str(b.Text)
			h.Raw(b.Citations)
			return
		}
	case *transcript.Thinking:
		if b != nil {
			h.Word(2)
			h.Str(b.Thinking)
			return
		}
	case *transcript.RedactedThinking:
		if b != nil {
			h.Word(3)
			h.Word(uint64(len(b.Data)))
			return
		}
	case *transcript.ToolUse:
		if b != nil {
			h.Word(4)
			h.Str(b.Name)
			h.Raw(b.Input)
			return
		}
	case *transcript.ServerToolUse:
		if b != nil {
			h.Word(5)
			h.Str(b.Name)
			h.Raw(b.Input)
			return
		}
	case *transcript.ToolResult:
		if b != nil {
			h.Word(6)
			h.Word(uint64(len(b.Content)))
			for _, cb := range b.Content {
				h.block(cb)
			}
			return
		}
	case *transcript.ServerToolResult:
		if b != nil {
			h.Word(7)
			h.Raw(b.Content)
			return
		}
	case *transcript.ToolReference:
		if b != nil {
			h.Word(8)
			h.Str(b.ToolName)
			return
		}
	case *transcript.Image:
		if b != nil {
			h.Word(9)
			h.Str(b.Source.Type)
			h.Str(b.Source.Data)
			return
		}
	case *transcript.Document:
		if b != nil {
			h.Word(10)
			h.Str(b.Title)
			h.Str(b.Context)
			h.Str(b.Source.Type)
			h.Str(b.Source.Data)
			h.Raw(b.Source.Extra["content"])
			return
		}
	case *transcript.UnknownBlock:
		if b != nil {
			h.Word(11)
			h.Raw(b.JSON)
			return
		}
	}
	// A nil block and the kinds addBlock does not count (cache_edits) count nothing; the
	// kind still goes in, so that a message of more blocks never hashes as a shorter one.
	h.Word(0)
}

// Category is a bucket of the token breakdown the command-line tool shows.
type Category string

// The categories of a [Breakdown].
const (
	CategorySystem        Category = "system"         // the system prompt (filled by the caller)
	CategoryUserText      Category = "user text"      // text of user messages
	CategoryAssistantText Category = "assistant text" // text of assistant messages
	CategoryThinking      Category = "thinking"       // thinking and redacted thinking
	CategoryToolUse       Category = "tool_use"       // tool calls, client and server
	CategoryToolResult    Category = "tool_result"    // tool results except their media
	CategoryMedia         Category = "media"          // images and documents, anywhere
	CategoryOther         Category = "other"          // message framing and unknown blocks
)

// Categories returns the categories in display order, as a new slice.
func Categories() []Category {
	return []Category{CategorySystem, CategoryUserText, CategoryAssistantText, CategoryThinking,
		CategoryToolUse, CategoryToolResult, CategoryMedia, CategoryOther}
}

// Breakdown is a token count split by [Category]. Its zero value is an empty count. The
// [Counter] never fills System: records carry no system prompt; callers add it with
// [Counter.Blocks].
type Breakdown struct {
	System        int
	UserText      int
	AssistantText int
	Thinking      int
	ToolUse       int
	ToolResult    int
	Media         int
	Other         int
}

// Total returns the sum of all categories.
func (b Breakdown) Total() int {
	return b.System + b.UserText + b.AssistantText + b.Thinking + b.ToolUse + b.ToolResult + b.Media + b.Other
}

// Add returns the category-wise sum of b and o.
func (b Breakdown) Add(o Breakdown) Breakdown {
	return Breakdown{
		System:        b.System + o.System,
		UserText:      b.UserText + o.UserText,
		AssistantText: b.AssistantText + o.AssistantText,
		Thinking:      b.Thinking + o.Thinking,
		ToolUse:       b.ToolUse + o.ToolUse,
		ToolResult:    b.ToolResult + o.ToolResult,
		Media:         b.Media + o.Media,
		Other:         b.Other + o.Other,
	}
}

// Get returns the count of category cat; 0 for an unknown category.
func (b Breakdown) Get(cat Category) int {
	switch cat {
	case CategorySystem:
		return b.System
	case CategoryUserText:
		return b.UserText
	case CategoryAssistantText:
		return b.AssistantText
	case CategoryThinking:
		return b.Thinking
	case CategoryToolUse:
		return b.ToolUse
	case CategoryToolResult:
		return b.ToolResult
	case CategoryMedia:
		return b.Media
	case CategoryOther:
		return b.Other
	}
	return 0
}

// MessageOverhead returns the tokens the Counter adds once per user or assistant message for
// the framing (role and separators) the provider adds around its content: 3. Anthropic does
// not publish its framing (OpenAI's chat format costs 3–4 tokens a message), so this is a
// reasoned guess that the provider-anchored total ([Counter.Totals]) absorbs. Claude Code
// writes one assistant record per content block, so a split response pays it per block.
func (c *Counter) MessageOverhead() int { return messageOverheadTokens }
