package liveloop

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/agentctx/agentctx"
)

// TokenizerFactor is how many more tokens the fake provider counts than the library's
// default counter: the provider's tokenizer is [agentctx.NewCounter](nil)'s tiktoken count
// times this factor, a stand-in for a model tokenizer that splits text finer than
// cl100k_base does.
const TokenizerFactor = 1.2

// CacheTTL is how long the fake provider keeps a prompt's prefix cached after a request.
const CacheTTL = 5 * time.Minute

// minCacheTokens is the least prefix the fake provider caches, as the provider's minimum
// cacheable prompt.
const minCacheTokens = 1024

// part is one unit of a prompt for the prompt cache: a tool definition, the system prompt
// or a message, known by a hash of its bytes (cache markers left out) and counted.
type part struct {
	key    uint64
	n      int // bytes hashed
	tokens int
}

// prompt is a request as the fake provider sees it, whatever the wire protocol.
type prompt struct {
	parts     []part
	tokens    int // the provider's count of the whole prompt
	maxTokens int
	summary   bool
	// cached is the number of leading parts the request asks to cache: through its last
	// cache marker (Messages API), or all of them (automatic prefix caching).
	cached int
}

// usage is what the provider reports for a request.
type usage struct {
	input, cacheRead, cacheWrite, output int
	// iterations are the sampling steps of an answer that compacted; nil for any other.
	iterations []iteration
}

// providerStats counts what the fake provider saw and did.
type providerStats struct {
	// Requests counts the requests received; Summaries those that were summary requests.
	Requests, Summaries int
	// Rejected counts the bodies refused as invalid (not counting prompts over the window);
	// FirstRejection is the first one's reason.
	Rejected       int
	FirstRejection string
	// OverWindow counts the conversation's prompts refused because prompt + max_tokens
	// exceeded the window, SummaryOverWindow the summary requests refused so; Injected the
	// scripted refusals of prompts that fit.
	OverWindow, SummaryOverWindow, Injected int
	// Cut counts the answers cut at max_tokens; Streamed the answers sent as events;
	// Compactions the server-side compactions (answers opening with a compaction block).
	Cut, Streamed, Compactions int
	// Input, CacheRead and CacheWrite sum the usage reported for the main conversation's
	// requests.
	Input, CacheRead, CacheWrite int
}

// fakeProvider is the model and the prompt cache behind the fake servers: it counts prompts with
// its own tokenizer, enforces the window, reports usage with the cache's share, and answers
// from the scripted model. Safe for concurrent use.
type fakeProvider struct {
	window  int
	counter *agentctx.Counter
	now     func() time.Time
	model   *model
	seed    maphash.Seed

	mu     sync.Mutex
	prev   []part
	prevAt time.Time
	stats  providerStats
}

func newProvider(window int, now func() time.Time, m *model) *fakeProvider {
	return &fakeProvider{window: window, counter: agentctx.NewCounter(nil), now: now, model: m, seed: maphash.MakeSeed()}
}

// scaled returns the provider's count for n tokens of the library's counter.
func scaled(n int) int { return int(math.Round(float64(n) * TokenizerFactor)) }

// newPart returns the part of raw (cache markers already left out) counting n tokens of the
// library's counter.
func (pv *fakeProvider) newPart(raw []byte, n int) part {
	return part{key: maphash.Bytes(pv.seed, raw), n: len(raw), tokens: scaled(n)}
}

// verdict is what the provider does with a request.
type verdict int

const (
	answerIt   verdict = iota
	overWindow         // prompt + max_tokens exceed the window
	injected           // a scripted refusal of a prompt that fits
)

// judge decides what to do with p and, for a request it answers, what usage it reports for
// the prompt (the output is added once the answer is known).
func (pv *fakeProvider) judge(p *prompt) (verdict, usage) {
	for _, pt := range p.parts {
		p.tokens += pt.tokens
	}
	pv.mu.Lock()
	defer pv.mu.Unlock()
	pv.stats.Requests++
	if p.summary {
		pv.stats.Summaries++
	}
	if p.tokens+p.maxTokens > pv.window {
		if p.summary {
			pv.stats.SummaryOverWindow++
		} else {
			pv.stats.OverWindow++
		}
		return overWindow, usage{}
	}
	if !p.summary && pv.model.refuse(p.tokens, pv.window) {
		pv.stats.Injected++
		return injected, usage{}
	}
	now := pv.now()
	shared := 0
	if now.Sub(pv.prevAt) <= CacheTTL {
		for shared < len(p.parts) && shared < len(pv.prev) && p.parts[shared].key == pv.prev[shared].key && p.parts[shared].n == pv.prev[shared].n {
			shared++
		}
	}
	var u usage
	for i, pt := range p.parts {
		switch {
		case i < shared:
			u.cacheRead += pt.tokens
		case i < p.cached:
			u.cacheWrite += pt.tokens
		default:
			u.input += pt.tokens
		}
	}
	if u.cacheRead < minCacheTokens {
		u.input += u.cacheRead
		u.cacheRead = 0
	}
	if u.cacheRead+u.cacheWrite < minCacheTokens {
		u.input += u.cacheWrite
		u.cacheWrite = 0
	}
	pv.prev, pv.prevAt = p.parts, now
	if !p.summary {
		pv.stats.Input += u.input
		pv.stats.CacheRead += u.cacheRead
		pv.stats.CacheWrite += u.cacheWrite
	}
	return answerIt, u
}

// reject counts a body refused as invalid.
func (pv *fakeProvider) reject(why string) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	pv.stats.Requests++
	pv.stats.Rejected++
	if pv.stats.FirstRejection == "" {
		pv.stats.FirstRejection = why
	}
}

// answered counts how an answer was sent.
func (pv *fakeProvider) answered(a answer, streamed bool) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if a.stop == "max_tokens" {
		pv.stats.Cut++
	}
	if streamed {
		pv.stats.Streamed++
	}
}

// reply returns the answer to p: a summary for a summary request, else the scripted model's
// next answer; and its output tokens as the provider bills them.
func (pv *fakeProvider) reply(p *prompt) (answer, int) {
	if p.summary {
		a := answer{text: pv.model.summary(p.tokens, p.maxTokens), stop: "end_turn"}
		return a, min(p.maxTokens, pv.outputTokens(a))
	}
	a := pv.model.answer(p.maxTokens)
	if a.outputTokens > 0 {
		return a, a.outputTokens
	}
	return a, min(p.maxTokens, pv.outputTokens(a))
}

// outputTokens counts an answer with the provider's tokenizer.
func (pv *fakeProvider) outputTokens(a answer) int {
	n := pv.counter.Text(a.text)
	for _, c := range a.calls {
		n += pv.counter.Text(c.name) + pv.counter.Text(string(c.input))
	}
	return max(1, scaled(n))
}

// snapshot returns the counts so far.
func (pv *fakeProvider) snapshot() providerStats {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return pv.stats
}
