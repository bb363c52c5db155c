package agentctx

import (
	"context"
	"fmt"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"
)

// TriggerSessionMemory is the [summarize.Request.Trigger] of a request built by
// [Pipeline.ExtractionRequest]: a session-memory extraction, not a compaction.
const TriggerSessionMemory = "session_memory"

// ExtractionRequest builds the request a session-memory extractor hands its [summarize.Summarizer]: the
// conversation in in.Records as a compaction would summarize it (this turn's view after the
// lossless stages, media replaced by markers, re-injected attachments left out), ending with
// instruction instead of the compaction's summary prompt. Trigger is [TriggerSessionMemory]
// and Attempt 1. When the conversation and the summary's cap do not fit the window, the
// oldest rounds are left out (a marker says how many: [summarize.Request.Omitted]). The last
// message of View whose Source is "" is the last record the extraction covers.
//
// It writes no record and calls nothing but the base-context providers and the budget's
// store, as Prepare does; the records a turn would append are not returned: the extraction
// sees the view as the next Prepare will.
func (p *Pipeline) ExtractionRequest(ctx context.Context, in Input, instruction string) (summarize.Request, error) {
	p, err := p.forTurn(&in)
	if err != nil {
		return summarize.Request{}, err
	}
	in.NoCompact = true
	t, err := p.build(ctx, &in)
	if err != nil {
		return summarize.Request{}, err
	}
	defer t.release()
	co := p.compactor
	view := summaryView(t.items)
	from := leadingKept(view, t.boundaryPos)
	skip := from
	cal := calibration{ratio: t.report.Pressure.Ratio}
	for {
		req, vm, err := co.summaryRequest(t, view, from, skip, instruction)
		if err != nil {
			return summarize.Request{}, err
		}
		counted := co.counter.Request(&req)
		if over := cal.scale(counted) + req.MaxTokens - co.window; over > 0 {
			next := co.dropFor(view, skip, int(float64(over)/cal.ratio)+1)
			if next <= skip {
				return summarize.Request{}, fmt.Errorf("agentctx: the extraction request does not fit the window %d even with all but the last round left out", co.window)
			}
			skip = next
			continue
		}
		if err := provider.Validate(req, provider.ValidateOptions{ContextWindow: co.window, InputTokens: counted}); err != nil {
			return summarize.Request{}, fmt.Errorf("agentctx: the extraction request is invalid: %w", err)
		}
		return summarize.Request{Request: req, View: vm, Instructions: instruction, MaxOutputTokens: req.MaxTokens,
			Trigger: TriggerSessionMemory, Attempt: 1, Omitted: skip - from}, nil
	}
}
