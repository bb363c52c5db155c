package simulate

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// lookbackBlocks is how many block boundaries before a cache breakpoint the provider checks
// for an earlier cache entry, as the Anthropic prompt-caching documentation describes it
// ("about 20 blocks"): a prefix written further back than that from every breakpoint of a
// request is not read, even when it is still in the cache.
const lookbackBlocks = 20

// defaultTTL and longTTL are the prompt cache's times to live: the default, and the one a
// marker with ttl "1h" asks for. An entry lives that long after it was last written or read.
const (
	defaultTTL = 5 * time.Minute
	longTTL    = time.Hour
)

// promptCache models the provider's prompt cache over a simulated session: entries are
// byte-identical request prefixes ending at a breakpoint, each living its time to live after
// its last write or read. Positions are blocks in the order the provider caches them: tool
// definitions, system blocks, then the messages' blocks.
type promptCache struct {
	counter *agentctx.Counter
	// model is the model the next request goes to, when the replay tells them apart: the
	// provider caches each model's prefixes apart, so it is part of every prefix's hash.
	model   string
	last    [32]byte // the prefix the previous request read or wrote last
	sent    bool     // a request was sent
	entries map[[32]byte]cacheEntry
	digests map[transcript.Block][32]byte // blocks are never modified in place: a pointer names its bytes
	// prevDigests is the previous request's memo: a memo of two requests, so that it holds
	// what the next request may share and not every block ever sent.
	prevDigests map[transcript.Block][32]byte
	// minTokens is the model's minimum cacheable prefix: a breakpoint on a shorter prefix
	// writes nothing.
	minTokens int
	// prev is the previous request's positions: the prefix up to its last breakpoint is the
	// one the next request should send again (see prefixBreak).
	prev []position
}

type cacheEntry struct {
	ttl  time.Duration
	last time.Time
}

// cacheUse is what one request read from and wrote to the cache, in counted tokens; the
// parts sum to the request's counted size.
type cacheUse struct {
	read, write5m, write1h, uncached int
	expired                          bool // the previous request's entry expired before this one
	brk                              *prefixBreakAt
}

// prefixBreakAt is where a request stops sending again the prefix the previous request marked:
// the index of the first position that differs, and the tokens before it and up to the
// previous request's last breakpoint.
type prefixBreakAt struct {
	block        int
	kept, marked int
}

// prefixBreak compares a request's positions with the previous request's: nil when the
// request starts with the previous one's prefix up to its last breakpoint (or there is no
// previous request, or it had no breakpoint).
func prefixBreak(prev, pos []position) *prefixBreakAt {
	m := lastMarker(prev)
	if m < 0 {
		return nil
	}
	for i := 0; i <= m; i++ {
		if i < len(pos) && pos[i].hash == prev[i].hash {
			continue
		}
		kept := 0
		if i > 0 {
			kept = prev[i-1].tokens
		}
		return &prefixBreakAt{block: i, kept: kept, marked: prev[m].tokens}
	}
	return nil
}

func newPromptCache(c *agentctx.Counter, minTokens int) *promptCache {
	return &promptCache{counter: c, minTokens: minTokens, entries: map[[32]byte]cacheEntry{}, digests: map[transcript.Block][32]byte{}}
}

// position is one block boundary of a request: the chained hash of the prefix ending there,
// the tokens up to it, and the time to live of the marker placed there (0: none).
type position struct {
	hash   [32]byte
	tokens int
	ttl    time.Duration
}

// positions lays out req's prefix hashes. cache_control markers are left out of the hashed
// bytes: moving a breakpoint does not change what the prefix holds.
func (pc *promptCache) positions(req *provider.Request) []position {
	var out []position
	var h [32]byte
	if pc.model != "" {
		h = sha256.Sum256([]byte("model " + pc.model))
	}
	tokens := 0
	step := func(kind byte, d [32]byte, n int, cc *transcript.CacheControl) {
		var buf [65]byte
		copy(buf[:32], h[:])
		buf[32] = kind
		copy(buf[33:], d[:])
		h = sha256.Sum256(buf[:])
		tokens += n
		out = append(out, position{hash: h, tokens: tokens, ttl: markerTTL(cc)})
	}
	for _, t := range req.Tools {
		step('t', sha256.Sum256(t.Definition), pc.counter.Text(string(t.Definition)), t.CacheControl)
	}
	for _, s := range req.System {
		step('s', pc.digest(s), pc.counter.Block(s), s.CacheControl)
	}
	// The thinking parameters and the tool choice come before the messages in the cache's
	// order: changing them invalidates the cached messages, not the tools or the system
	// prompt. They hold no tokens of their own.
	var params []byte
	if req.Thinking != nil {
		params = fmt.Appendf(params, "thinking %q %d;", req.Thinking.Type, req.Thinking.BudgetTokens)
	}
	if tc := req.ToolChoice; tc != nil {
		params = fmt.Appendf(params, "tool_choice %q %q;", tc.Type, tc.Name)
	}
	h = sha256.Sum256(append(h[:], params...))
	for _, m := range req.Messages {
		for j, b := range m.Content {
			kind, n := byte('c'), pc.counter.Block(b)
			if j == 0 { // a message starts here: its role and framing are part of the prefix
				kind, n = 'u', n+pc.counter.MessageOverhead()
				if m.Role == transcript.RoleAssistant {
					kind = 'a'
				}
			}
			step(kind, pc.digest(b), n, blockMarker(b))
		}
	}
	return out
}

// digest hashes what decides b's wire bytes apart from its cache markers
// ([transcript.HashBlock]), memoized per block. It hashes the fields, not the encoding: normalize
// hands each turn fresh copies of most blocks, which the memo misses, and encoding them would
// cost most of a request's encoding every turn.
func (pc *promptCache) digest(b transcript.Block) [32]byte {
	if d, ok := pc.digests[b]; ok {
		return d
	}
	if d, ok := pc.prevDigests[b]; ok {
		pc.digests[b] = d
		return d
	}
	stripped, marked := unmarked(b)
	h := sha256.New()
	transcript.HashBlock(h, stripped)
	var d [32]byte
	h.Sum(d[:0])
	if !marked { // a marked block is the cache stage's copy of this turn: it never comes back
		pc.digests[b] = d
	}
	return d
}

// unmarked returns b without its cache_control markers, also those inside a tool result's
// content, and whether it had any.
func unmarked(b transcript.Block) (transcript.Block, bool) {
	marked := transcript.CacheControlOf(b) != nil
	if marked {
		b = transcript.WithCacheControl(b, nil)
	}
	tr, ok := b.(*transcript.ToolResult)
	if !ok || !slices.ContainsFunc(tr.Content, hasMarker) {
		return b, marked
	}
	c := *tr
	c.Content = make([]transcript.Block, len(tr.Content))
	for i, cb := range tr.Content {
		if hasMarker(cb) {
			cb = transcript.WithCacheControl(cb, nil)
		}
		c.Content[i] = cb
	}
	return &c, true
}

func hasMarker(b transcript.Block) bool { return transcript.CacheControlOf(b) != nil }

// blockMarker returns the marker on b or, for a tool result, on its content; nil for none.
func blockMarker(b transcript.Block) *transcript.CacheControl {
	if cc := transcript.CacheControlOf(b); cc != nil {
		return cc
	}
	if tr, ok := b.(*transcript.ToolResult); ok {
		for _, cb := range tr.Content {
			if cc := transcript.CacheControlOf(cb); cc != nil {
				return cc
			}
		}
	}
	return nil
}

// lastMarker returns the index of the last position with a marker, or -1.
func lastMarker(pos []position) int {
	for m := len(pos) - 1; m >= 0; m-- {
		if pos[m].ttl != 0 {
			return m
		}
	}
	return -1
}

func markerTTL(cc *transcript.CacheControl) time.Duration {
	switch {
	case cc == nil:
		return 0
	case cc.TTL == "1h":
		return longTTL
	}
	return defaultTTL
}

// send plays a request sent at now against the cache: expired entries go, the longest live
// prefix within lookbackBlocks of a breakpoint is read (and refreshed), and every
// breakpoint beyond it writes an entry with its marker's time to live. deleted is what the
// request's cache_edits delete from the cached prefix: it leaves the read first.
func (pc *promptCache) send(req *provider.Request, now time.Time, deleted int) cacheUse {
	pc.prevDigests, pc.digests = pc.digests, make(map[transcript.Block][32]byte, len(pc.digests))
	pos := pc.positions(req)
	var use cacheUse
	use.brk = prefixBreak(pc.prev, pos)
	pc.prev = pos
	for k, e := range pc.entries {
		if now.Sub(e.last) > e.ttl {
			delete(pc.entries, k)
			use.expired = use.expired || pc.sent && k == pc.last
		}
	}
	read := -1 // the position read up to, inclusive
	for m := range pos {
		if pos[m].ttl == 0 {
			continue
		}
		for i := m; i >= 0 && i > m-lookbackBlocks && i > read; i-- {
			if _, ok := pc.entries[pos[i].hash]; ok {
				read = i
				break
			}
		}
	}
	covered := 0
	if read >= 0 {
		use.read = pos[read].tokens
		covered = use.read
		for i := 0; i <= read; i++ { // every entry the request uses is refreshed, not only the longest
			if e, ok := pc.entries[pos[i].hash]; ok {
				e.last = now
				pc.entries[pos[i].hash] = e
			}
		}
	}
	for m := read + 1; m < len(pos); m++ {
		ttl := pos[m].ttl
		if ttl == 0 || pos[m].tokens < pc.minTokens {
			continue // no breakpoint, or a prefix too short for the provider to cache
		}
		if n := pos[m].tokens - covered; ttl == longTTL {
			use.write1h += n
		} else {
			use.write5m += n
		}
		covered = pos[m].tokens
		pc.entries[pos[m].hash] = cacheEntry{ttl: ttl, last: now}
	}
	total := 0
	if len(pos) > 0 {
		total = pos[len(pos)-1].tokens
	}
	use.uncached = total - covered
	for m := len(pos) - 1; m >= 0; m-- {
		if _, ok := pc.entries[pos[m].hash]; ok && m <= max(read, lastMarker(pos)) {
			pc.last, pc.sent = pos[m].hash, true
			break
		}
	}
	// What cache_edits delete is sent but no longer held: it leaves the counted figures.
	for _, part := range []*int{&use.read, &use.write5m, &use.write1h, &use.uncached} {
		cut := min(*part, deleted)
		*part -= cut
		deleted -= cut
	}
	return use
}

// realWrites splits a reported cache write into its 5-minute and 1-hour parts, from the
// usage's "cache_creation" detail when the provider sent one; otherwise all of it is 5-minute.
func realWrites(u *transcript.Usage) (w5m, w1h int) {
	raw, ok := u.Extra["cache_creation"]
	if !ok {
		return u.CacheCreationInputTokens, 0
	}
	var cc struct {
		W5m int `json:"ephemeral_5m_input_tokens"`
		W1h int `json:"ephemeral_1h_input_tokens"`
	}
	if err := json.Unmarshal(raw, &cc); err != nil || cc.W5m+cc.W1h != u.CacheCreationInputTokens {
		return u.CacheCreationInputTokens, 0
	}
	return cc.W5m, cc.W1h
}

// seed writes into the cache, as an entry written at with the time to live of req's message
// marker, the longest prefix of the part of req before its messages — the tool definitions
// and the system prompt, block by block — that read (provider tokens) covers, counted tokens
// converted by conv, and returns its counted tokens (0 when it wrote none).
// The entry ends where the messages start or before: the first request reads it when one of
// its breakpoints is within the provider's lookback of it (a system prompt's marker, or the
// message marker of a request whose messages hold fewer blocks than the lookback), as a
// real request would read what an earlier session wrote at its client's breakpoint.
func (pc *promptCache) seed(req *provider.Request, at time.Time, read int, conv scaler) int {
	head := provider.Request{Tools: req.Tools, System: req.System}
	pos := pc.positions(&head)
	for len(pos) > 0 && conv.at(pos[len(pos)-1].tokens) > read {
		pos = pos[:len(pos)-1]
	}
	if len(pos) == 0 {
		return 0
	}
	ttl := defaultTTL
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if cc := blockMarker(b); cc != nil {
				ttl = markerTTL(cc)
			}
		}
	}
	end := pos[len(pos)-1]
	pc.entries[end.hash] = cacheEntry{ttl: ttl, last: at}
	return end.tokens
}
