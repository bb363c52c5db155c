package agentctx

import (
	"context"
	"log/slog"
)

// logTurn logs what a turn did that a runtime's operators should hear of, through
// [Config.Logger]: each degradation at Warn, a compaction's outcome and a recovery at Info,
// and a turn's error at Warn. Without a Logger it does nothing.
func (p *Pipeline) logTurn(ctx context.Context, rep *Report, err error) {
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
