// Package memory keeps a conversation's session memory: a summary written in the background,
// from time to time, so that a compaction finds one ready and needs no model call then.
//
// An [Extractor] is both halves. As the [agentctx.SessionMemory] of
// [agentctx.CompactConfig.Memory] it hands a compaction the latest extraction; after each
// turn, [Extractor.Due] says whether the conversation has grown enough to extract again and
// [Extractor.Extract] writes the extraction through a [summarize.Summarizer]:
//
//	ex := memory.New(memory.Config{Summarizer: summarizer})
//	cfg.Compact.Memory = ex
//	p, _ := agentctx.New(cfg)
//	// each turn, after Prepare (in its own goroutine if the runtime likes):
//	if d := ex.Due(in.Records, res.Report.InputTokens); d.Due {
//		rec, err := ex.Extract(ctx, p, in, d.Tokens)
//		// append rec to the transcript
//	}
//
// An extraction is a record ([transcript.SubtypeSessionMemory], beside the chain like the
// library's decision records), which the runtime appends to the transcript: the Extractor
// reads the latest one back from the turn's records, so a resumed or forked session uses the
// extraction its transcript holds, and the view stays a function of the records. The
// Extractor itself holds only the extractions in flight (and the last one finished, until
// the transcript holds it), so that a compaction can wait for one, a bounded time.
package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// The defaults of [Config]: Claude Code's session-memory gates and waits.
const (
	DefaultFirstTokens  = 10_000
	DefaultGrowthTokens = 5_000
	DefaultToolCalls    = 3
	DefaultWait         = 15 * time.Second
	DefaultStale        = 60 * time.Second
)

// Clock tells the time and waits; [Config.Clock] takes one so that tests need no sleeps.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config configures an [Extractor]. The zero value is the default: extractions by
// [summarize.Extractive] with [DefaultPrompt], the first once the conversation holds 10,000
// tokens, the next after 5,000 tokens of growth and 3 tool calls, and a compaction waits at
// most 15 seconds for one in flight, not at all for one started more than 60 seconds ago.
type Config struct {
	// Summarizer writes the extractions. Nil: [summarize.Extractive] (no model call).
	Summarizer summarize.Summarizer
	// Prompt is the instruction ending an extraction request. Empty: [DefaultPrompt].
	Prompt string
	// FirstTokens is the conversation's size, in tokens, at which the first extraction is
	// due. Zero: 10,000.
	FirstTokens int
	// GrowthTokens and ToolCalls gate the later extractions: both the growth since the last
	// extraction, in tokens, and the tool calls made since must reach them. Zero: 5,000 and 3.
	GrowthTokens, ToolCalls int
	// Wait bounds how long a compaction waits for an extraction in flight. Zero: 15 seconds.
	Wait time.Duration
	// Stale is the age past which an extraction in flight is not waited for at all. Zero: 60
	// seconds.
	Stale time.Duration
	// Clock is the clock. Nil: the wall clock.
	Clock Clock
}

// Extractor writes a conversation's session-memory extractions and hands the latest to a
// compaction (see the package doc). It is safe for concurrent use, by many conversations.
type Extractor struct {
	cfg Config

	mu   sync.Mutex
	runs map[string]*run // by session id: the latest extraction started
}

// run is an extraction started: in flight until done is closed.
type run struct {
	started time.Time
	done    chan struct{}
	rec     *transcript.Record // set before done is closed; nil when it failed
}

// New returns an Extractor; it rejects negative thresholds and durations.
func New(cfg Config) (*Extractor, error) {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"FirstTokens", int64(cfg.FirstTokens)}, {"GrowthTokens", int64(cfg.GrowthTokens)}, {"ToolCalls", int64(cfg.ToolCalls)}, {"Wait", int64(cfg.Wait)}, {"Stale", int64(cfg.Stale)}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("memory: Config.%s %d is negative", f.name, f.v))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	return &Extractor{cfg: cfg, runs: map[string]*run{}}, nil
}

// Decision is what [Extractor.Due] found.
type Decision struct {
	// Due is true when an extraction should run now; Reason says why or why not.
	Due    bool
	Reason string
	// Tokens is the conversation's size it was given; Growth the growth since the last
	// extraction (Tokens when there is none); ToolCalls the tool calls made since it (all
	// of the conversation's when there is none).
	Tokens, Growth, ToolCalls int
	// Last is the conversation's latest extraction, or nil.
	Last *transcript.SessionMemoryExtraction
}

// Due reports whether the conversation in records should be extracted now, tokens being its
// size (the [agentctx.Report]'s InputTokens of the turn just prepared): the first time once
// it reaches FirstTokens, then once it has grown by GrowthTokens and made ToolCalls tool calls
// since the last extraction. The last extraction is the latest extraction record whose
// Through is on the conversation's chain (one from before a compaction that summarized its
// record no longer counts). It builds the chain, one pass over the records.
func (e *Extractor) Due(records []transcript.Record, tokens int) Decision {
	d := Decision{Tokens: tokens, Growth: tokens}
	chain, err := transcript.BuildChain(records, transcript.ChainOptions{})
	if err != nil || chain.Leaf == nil {
		d.Reason = "no conversation"
		return d
	}
	last, at := latest(records, chain)
	for _, r := range chain.Records[at+1:] {
		if r.Message != nil && r.Message.Role == transcript.RoleAssistant {
			for _, b := range r.Message.Content {
				if _, ok := b.(*transcript.ToolUse); ok {
					d.ToolCalls++
				}
			}
		}
	}
	if last == nil {
		first := cmp.Or(e.cfg.FirstTokens, DefaultFirstTokens)
		d.Due = tokens >= first
		d.Reason = fmt.Sprintf("first extraction: %d tokens, due at %d", tokens, first)
		return d
	}
	d.Last, d.Growth = last, tokens-last.Tokens
	growth, calls := cmp.Or(e.cfg.GrowthTokens, DefaultGrowthTokens), cmp.Or(e.cfg.ToolCalls, DefaultToolCalls)
	d.Due = d.Growth >= growth && d.ToolCalls >= calls
	d.Reason = fmt.Sprintf("since the last extraction: %d tokens of growth (due at %d) and %d tool calls (due at %d)", d.Growth, growth, d.ToolCalls, calls)
	return d
}

// latest returns the latest extraction of records whose Through is on chain, and the index in
// chain.Records of its Through record; nil and -1 when there is none.
func latest(records []transcript.Record, chain *transcript.Chain) (*transcript.SessionMemoryExtraction, int) {
	on := make(map[string]int, len(chain.Records))
	for i, r := range chain.Records {
		on[r.UUID] = i
	}
	for i := len(records) - 1; i >= 0; i-- {
		if m := extraction(&records[i]); m != nil {
			if at, ok := on[m.Through]; ok {
				return m, at
			}
		}
	}
	return nil, -1
}

// extraction returns r's session-memory extraction, or nil.
func extraction(r *transcript.Record) *transcript.SessionMemoryExtraction {
	if r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeSessionMemory && r.SessionMemory != nil && strings.TrimSpace(r.SessionMemory.Summary) != "" {
		return r.SessionMemory
	}
	return nil
}

// Extract writes an extraction of the conversation in in.Records now, through the Summarizer
// and the request p builds for it ([agentctx.Pipeline.ExtractionRequest]), tokens being the
// conversation's size (recorded: the next growth is measured from it). It returns the record
// to append to the transcript. While it runs, a compaction of the same session waits for it
// (see [Extractor.SessionMemory]).
func (e *Extractor) Extract(ctx context.Context, p *agentctx.Pipeline, in agentctx.Input, tokens int) (transcript.Record, error) {
	chain, err := transcript.BuildChain(in.Records, transcript.ChainOptions{Leaf: in.Leaf})
	if err != nil {
		return transcript.Record{}, err
	}
	if chain.Leaf == nil {
		return transcript.Record{}, errors.New("memory: the transcript holds no conversation to extract")
	}
	session := chain.Leaf.SessionID
	now := e.cfg.Clock.Now()
	r := &run{started: now, done: make(chan struct{})}
	e.mu.Lock()
	// A finished run is kept only until its record is on the transcript; one of a session
	// that never compacted again would stay for good, so the finished runs older than Stale
	// go (the transcript holds their records, or the caller dropped them).
	for s, old := range e.runs {
		if finished(old) && now.Sub(old.started) > cmp.Or(e.cfg.Stale, DefaultStale) {
			delete(e.runs, s)
		}
	}
	e.runs[session] = r
	e.mu.Unlock()
	rec, err := e.extract(ctx, p, in, chain.Leaf, tokens)
	if err == nil {
		r.rec = &rec
	}
	close(r.done)
	return rec, err
}

// extract is Extract's work.
func (e *Extractor) extract(ctx context.Context, p *agentctx.Pipeline, in agentctx.Input, leaf *transcript.Record, tokens int) (transcript.Record, error) {
	req, err := p.ExtractionRequest(ctx, in, cmp.Or(e.cfg.Prompt, DefaultPrompt))
	if err != nil {
		return transcript.Record{}, fmt.Errorf("memory: %w", err)
	}
	through := ""
	for _, m := range req.View {
		if m.Source == "" {
			through = m.UUID
		}
	}
	if through == "" {
		return transcript.Record{}, errors.New("memory: the view holds no record of the transcript to extract")
	}
	s := e.cfg.Summarizer
	if s == nil {
		s = summarize.Extractive{}
	}
	out, err := s.Summarize(ctx, req)
	if err != nil {
		return transcript.Record{}, fmt.Errorf("memory: extraction: %w", err)
	}
	text, err := summarize.FromReply(out.Text)
	if err != nil {
		return transcript.Record{}, fmt.Errorf("memory: extraction: %w", err)
	}
	h := sha256.Sum256([]byte(text))
	content, err := json.Marshal("Session memory extracted")
	if err != nil {
		return transcript.Record{}, err
	}
	return transcript.Record{
		Type:        transcript.TypeSystem,
		Subtype:     transcript.SubtypeSessionMemory,
		UUID:        transcript.ContentUUID(string(transcript.SubtypeSessionMemory), through+"\x00"+hex.EncodeToString(h[:8])),
		IsMeta:      true,
		IsSidechain: leaf.IsSidechain,
		SessionID:   leaf.SessionID,
		Timestamp:   transcript.Timestamp(e.cfg.Clock.Now()),
		Level:       "info",
		Content:     content,
		SessionMemory: &transcript.SessionMemoryExtraction{
			Summary: text, Through: through, Tokens: tokens, By: cmp.Or(out.By, by(s)),
		},
	}, nil
}

// by names a summarizer that did not name itself.
func by(s summarize.Summarizer) string {
	if _, ok := s.(summarize.Extractive); ok {
		return "extractive"
	}
	return "summarizer"
}

// SessionMemory hands a compaction the conversation's latest extraction (it implements
// [agentctx.SessionMemory]). When an extraction of the session is in flight and started at
// most Stale ago, it first waits for it, at most Wait (and not past ctx's end), so that the
// compaction can use the fresher one without ever stalling on it. The latest extraction is
// the one that finished last in this Extractor, until the transcript holds it, else the
// latest in req.Records whose Through is on the conversation's chain.
func (e *Extractor) SessionMemory(ctx context.Context, req agentctx.MemoryRequest) (agentctx.Memory, error) {
	e.mu.Lock()
	r := e.runs[req.SessionID]
	e.mu.Unlock()
	if r != nil {
		select {
		case <-r.done:
		default:
			if e.cfg.Clock.Now().Sub(r.started) <= cmp.Or(e.cfg.Stale, DefaultStale) {
				select {
				case <-r.done:
				case <-e.cfg.Clock.After(cmp.Or(e.cfg.Wait, DefaultWait)):
				case <-ctx.Done():
				}
			}
		}
	}
	chain, err := transcript.BuildChain(req.Records, transcript.ChainOptions{Leaf: req.Leaf})
	if err != nil {
		return agentctx.Memory{}, err
	}
	if r != nil && finished(r) {
		if r.rec == nil || held(req.Records, r.rec.UUID) {
			e.forget(req.SessionID, r)
		} else if m := r.rec.SessionMemory; onChain(chain, m.Through) {
			return agentctx.Memory{Summary: m.Summary, Through: m.Through}, nil
		}
	}
	if m, _ := latest(req.Records, chain); m != nil {
		return agentctx.Memory{Summary: m.Summary, Through: m.Through}, nil
	}
	return agentctx.Memory{}, nil
}

// finished reports whether r is done.
func finished(r *run) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// forget drops the session's run r once the transcript holds its record (not a newer run).
func (e *Extractor) forget(session string, r *run) {
	e.mu.Lock()
	if e.runs[session] == r {
		delete(e.runs, session)
	}
	e.mu.Unlock()
}

// held reports whether records hold a record of that uuid.
func held(records []transcript.Record, uuid string) bool {
	for i := len(records) - 1; i >= 0; i-- {
		if records[i].UUID == uuid {
			return true
		}
	}
	return false
}

// onChain reports whether the record of that uuid is on chain.
func onChain(chain *transcript.Chain, uuid string) bool {
	for _, r := range chain.Records {
		if r.UUID == uuid {
			return true
		}
	}
	return false
}
