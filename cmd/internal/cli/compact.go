package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// compact compacts a session now with the summarizer --summarizer names (the extractive one by
// default) and appends the compaction's records: to FILE, or to a copy of it at --out (FILE's bytes are never changed).
func (a *app) compact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var instructions, out *string
	var sf summarizerFlags
	var dst *address // --out's, or nil
	s, err := a.openWith(ctx, "compact", args, func(fs *flag.FlagSet) {
		instructions = fs.String("instructions", "", "extra instructions for the summary, e.g. \"focus on the parser\"")
		out = fs.String("out", "", "write the compacted session to this new `file` or postgres:// session (a copy of FILE plus the records) instead of appending to FILE")
		sf.register(fs, a)
	}, func(o *options) (err error) {
		if o.summarizer, err = sf.summarizer(a.Summarizers); err != nil || *out == "" {
			return err
		}
		d, err := parseAddress(*out, true, a.Database)
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		dst = &d
		return nil
	})
	if err != nil {
		return err
	}
	defer s.close()
	if s.tr.Format == transcript.FormatCodex {
		return fmt.Errorf("%s is an OpenAI Codex rollout: compact appends records, and the library never writes to a rollout (inspect and request read it)", s.addr)
	}
	res, err := s.pipeline.Compact(ctx, s.input, agentctx.CompactOptions{Instructions: *instructions})
	damageNotes(stderr, &res.Report)
	c := res.Report.Compaction
	if err != nil && (c == nil || c.Outcome != agentctx.CompactCompacted) {
		if len(res.Append) > 0 { // the failed attempt is recorded, so that the breaker counts it
			if werr := s.appendTo(ctx, dst, res.Append); werr != nil {
				return errors.Join(err, werr)
			}
		}
		return err
	}
	dest := s.addr
	if dst != nil {
		dest = *dst
	}
	if err := s.appendTo(ctx, dst, res.Append); err != nil {
		return err
	}
	s.clockNote(stderr)
	fmt.Fprintf(stdout, "compacted %s: %d → %d tokens (threshold %d), summary by %s of %d messages, %d records kept verbatim\n",
		dest, c.PreTokens, c.PostTokens, res.Report.AutoCompactThreshold, c.Summarizer, c.Summarized, c.Kept)
	for _, r := range c.Rehydrated {
		fmt.Fprintf(stdout, "  re-injected %s\n", r)
	}
	fmt.Fprintf(stdout, "appended %d records (boundary %s); the next record's parent is %s\n", len(res.Append), c.BoundaryUUID, res.Leaf)
	if err != nil { // compacted, but still too large to send
		fmt.Fprintf(stdout, "warning: %v\n", err)
	}
	return nil
}

// appendTo appends records to the session (a file, or a database after the line the command
// read last), or to a new copy of it at dst when dst is not nil (a file that must not exist,
// or a database session that has no line yet).
func (s *session) appendTo(ctx context.Context, dst *address, records []transcript.Record) error {
	if dst == nil {
		return s.addr.appendAfter(ctx, s.tr.End, records)
	}
	data, err := s.addr.raw(ctx)
	if err != nil {
		return err
	}
	end, err := dst.create(ctx, data, false)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return dst.appendAfter(ctx, end, records)
}
