// Package compacted writes long sessions the way a live runtime writes them, with the
// library's own compactions: a generated session (testkit.Generate) replayed turn by turn
// through a Pipeline with auto-compaction. The gencompacted command and the tests of the
// tail read use it.
package compacted

import (
	"context"
	"fmt"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// Replay drives src through a Pipeline at a window-token context (model claude-sonnet-4-5,
// the extractive summarizer) as a runtime would: before each response's first record it calls
// Prepare on the records so far, with the clock 5 s after the last of them, and appends
// Result.Append; the response hangs off Result.Leaf and reports the request's size as its
// input tokens. It returns the records written and the number of compactions.
func Replay(ctx context.Context, src []transcript.Record, window int) ([]transcript.Record, int, error) {
	return ReplayWith(ctx, src, Options{Config: agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: window,
		Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}}}})
}

// Options configure [ReplayWith].
type Options struct {
	// Config is the Pipeline's; its Now is replaced by the replay's clock.
	Config agentctx.Config
	// Before, when set, is called before each Prepare with the Pipeline, the records so far,
	// the position in src of the response about to be prepared for and the clock; it returns
	// the records to prepare, those with the records a runtime writes then (a pin, a
	// recovery) appended.
	Before func(p *agentctx.Pipeline, recs []transcript.Record, i int, now time.Time) ([]transcript.Record, error)
}

// ReplayWith is [Replay] with the Pipeline's configuration and a hook before each turn.
func ReplayWith(ctx context.Context, src []transcript.Record, opts Options) ([]transcript.Record, int, error) {
	var now time.Time
	cfg := opts.Config
	cfg.Now = func() time.Time { return now }
	p, err := agentctx.New(cfg)
	if err != nil {
		return nil, 0, err
	}
	recs := make([]transcript.Record, 0, len(src)+len(src)/10)
	lastUUID, leaf, tokens, compactions := "", "", 0, 0
	for i := range src {
		r := src[i]
		// A model call: the first record of a response after the user's input.
		if r.Type == transcript.TypeAssistant && i > 0 && src[i-1].Type == transcript.TypeUser && len(recs) > 0 {
			if ts, err := time.Parse(time.RFC3339Nano, recs[len(recs)-1].Timestamp); err == nil {
				now = ts.Add(5 * time.Second)
			}
			if opts.Before != nil {
				if recs, err = opts.Before(p, recs, i, now); err != nil {
					return nil, 0, fmt.Errorf("record %d: %w", i, err)
				}
			}
			res, err := p.Prepare(ctx, agentctx.Input{Records: recs})
			if err != nil {
				return nil, 0, fmt.Errorf("record %d: %w", i, err)
			}
			recs = append(recs, res.Append...)
			leaf, tokens = res.Leaf, res.Report.InputTokens
			if c := res.Report.Compaction; c != nil && c.Outcome == agentctx.CompactCompacted {
				compactions++
			}
		}
		if r.ParentUUID == lastUUID && leaf != "" {
			r.ParentUUID = leaf
		}
		if r.Type == transcript.TypeAssistant && r.Message != nil && r.Message.Usage != nil {
			u := *r.Message.Usage // the usage of the request actually sent
			u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens = tokens, 0, 0
			u.Extra = nil
			m := *r.Message
			m.Usage = &u
			r.Message = &m
		}
		lastUUID, leaf = r.UUID, ""
		recs = append(recs, r)
	}
	return recs, compactions, nil
}
