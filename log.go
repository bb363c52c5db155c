package agentctx

import (
	"context"
	"log/slog"
)

// Observer receives what a Pipeline does — the points [Config.Logger] logs, as values — so
// that a host's UI can show a compaction running, a fallback or an open breaker, and its
// metrics count them. As in net/http/httptrace, each field is a func and any may be nil.
// CompactStart is called as it happens, before the summarizer runs; the others are called
// when the call (Prepare, Recover, Compact) returns, in the order of the fields, from its
// Report. All are called on the call's goroutine with its ctx, so a host serving several
// sessions tells them apart by what it put in ctx; they must return quickly and be safe for
// concurrent use.
type Observer struct {
	// CompactStart is called when a compaction is about to write its summary: after the
	// pre-compact hooks, before the summarizer is called.
	CompactStart func(ctx context.Context, e CompactEvent)
	// Compaction is called once the turn's compaction attempt has ended, whatever its outcome
	// (compacted, failed, skipped, vetoed).
	Compaction func(ctx context.Context, r CompactReport)
	// Degraded is called for each way the turn fell short of the policy: a fallback summary,
	// an open circuit breaker, a lower rung, thrash (see [DegradationKind]).
	Degraded func(ctx context.Context, d Degradation)
	// Recovery is called with what [Pipeline.Recover] did with a provider error.
	Recovery func(ctx context.Context, r RecoveryReport)
	// Failed is called with the error of a turn that failed.
	Failed func(ctx context.Context, err error)
}

// logTurn reports what a turn did that a runtime's operators should hear of, to
// [Config.Observer] and through [Config.Logger]: each degradation at Warn, a compaction's
// outcome and a recovery at Info, and a turn's error at Warn.
func (p *Pipeline) logTurn(ctx context.Context, rep *Report, err error) {
	p.observe(ctx, rep, err)
	l := p.cfg.Logger
	if l == nil {
		return
	}
	for _, d := range rep.Degradations {
		attrs := []slog.Attr{slog.String("kind", string(d.Kind)), slog.String("detail", d.Detail)}
		if d.Record != "" {
			attrs = append(attrs, slog.String("record", d.Record))
		}
		l.LogAttrs(ctx, slog.LevelWarn, "agentctx: degraded", attrs...)
	}
	if c := rep.Compaction; c != nil {
		l.LogAttrs(ctx, slog.LevelInfo, "agentctx: compaction",
			slog.String("trigger", c.Trigger), slog.String("outcome", string(c.Outcome)), slog.String("rung", string(c.Rung)),
			slog.Int("pre_tokens", c.PreTokens), slog.Int("post_tokens", c.PostTokens), slog.String("summarizer", c.Summarizer),
			slog.Bool("fallback", c.Fallback), slog.String("reason", c.Reason))
	}
	if r := rep.Recovery; r != nil {
		l.LogAttrs(ctx, slog.LevelInfo, "agentctx: recovery",
			slog.String("class", string(r.Class)), slog.String("rung", r.Rung), slog.String("outcome", string(r.Outcome)), slog.String("reason", r.Reason))
	}
	if err != nil {
		l.LogAttrs(ctx, slog.LevelWarn, "agentctx: turn failed", slog.String("error", err.Error()))
	}
}

// observe calls the Observer's funcs for what the turn did.
func (p *Pipeline) observe(ctx context.Context, rep *Report, err error) {
	o := &p.cfg.Observer
	if f := o.Degraded; f != nil {
		for _, d := range rep.Degradations {
			f(ctx, d)
		}
	}
	if f, c := o.Compaction, rep.Compaction; f != nil && c != nil {
		f(ctx, *c)
	}
	if f, r := o.Recovery, rep.Recovery; f != nil && r != nil {
		f(ctx, *r)
	}
	if f := o.Failed; f != nil && err != nil {
		f(ctx, err)
	}
}
