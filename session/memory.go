package session

import (
	"context"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/memory"
	"github.com/agentctx/agentctx/transcript"
)

// extractions is a session's memory: its Extractor and the extraction in flight, at most one.
type extractions struct {
	ex      *memory.Extractor
	done    chan extracted // receives the extraction in flight; nil when none is
	lastErr error
}

// extracted is the outcome of an extraction.
type extracted struct {
	rec transcript.Record
	err error
}

// startExtraction starts an extraction of the session's records in the background when the
// memory's gate says it is due (the conversation being tokens in size) and none is in flight.
// It runs on in's system, tools and context, so that its request shares the turn's prompt
// cache, and outlives ctx's cancellation.
func (s *Session) startExtraction(ctx context.Context, p *agentctx.Pipeline, in agentctx.Input, tokens int) {
	m := &s.mem
	if m.ex == nil || m.done != nil {
		return
	}
	d := m.ex.Due(s.Records(), tokens)
	if !d.Due {
		return
	}
	in.Records, in.Leaf = s.Records(), s.leaf
	done := make(chan extracted, 1)
	m.done = done
	ctx = context.WithoutCancel(ctx)
	go func() {
		rec, err := m.ex.Extract(ctx, p, in, d.Tokens)
		done <- extracted{rec, err}
	}()
}

// takeExtraction appends the record of the extraction in flight once it has finished: at once
// when wait is false (nothing when it has not), else after waiting for it. A failed
// extraction appends nothing; its error is kept for [Session.ExtractionErr].
func (s *Session) takeExtraction(wait bool) error {
	m := &s.mem
	if m.done == nil {
		return nil
	}
	var e extracted
	if wait {
		e = <-m.done
	} else {
		select {
		case e = <-m.done:
		default:
			return nil
		}
	}
	m.done = nil
	if e.err != nil {
		m.lastErr = e.err
		return nil
	}
	return s.Append(e.rec)
}

// WaitExtraction waits for the session's extraction in flight, if any, and appends its record
// (see [Options.Memory]): for a runtime ending a session, and for tests. The error is the
// Writer's.
func (s *Session) WaitExtraction() error { return s.takeExtraction(true) }

// ExtractionErr returns the error of the session's latest failed extraction, or nil.
func (s *Session) ExtractionErr() error { return s.mem.lastErr }
