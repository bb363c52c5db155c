package agentctx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/transcript"
)

// Collapse producer defaults, as fractions of the auto-compact threshold. Claude Code commits
// its collapses at 90 % of the threshold (and makes a turn wait for one in flight at 95 %; a
// fold here is made inside the turn, so every turn waits for its own); the aim is the lower
// end of the band the seeds give collapse (75 % to 85 % of the window's use).
const (
	defaultFoldCommitFraction = 0.9
	defaultFoldTargetFraction = 0.75
)

// CollapseProducer chooses the span of a turn's view that a new collapse commit folds into a
// summary (see [CollapseConfig.Producer]). [Pipeline.Prepare] calls it, with its ctx, when
// the request's pressure reaches the commit level and no compaction is already installed on
// this turn; it must be safe for concurrent use when one Pipeline serves several
// conversations. [FoldOldest] is the library's.
type CollapseProducer interface {
	// Fold returns the span to fold: a zero span when nothing is worth folding. An error is
	// recorded as a failed attempt, as a wrong span is.
	Fold(ctx context.Context, req FoldRequest) (FoldSpan, error)
}

// CollapseProducerFunc adapts a function to a [CollapseProducer].
type CollapseProducerFunc func(ctx context.Context, req FoldRequest) (FoldSpan, error)

// Fold calls f(ctx, req).
func (f CollapseProducerFunc) Fold(ctx context.Context, req FoldRequest) (FoldSpan, error) {
	return f(ctx, req)
}

// FoldRequest is the view a [CollapseProducer] chooses a span of.
type FoldRequest struct {
	// View is the turn's view after the collapse stage, message by message (base context,
	// earlier summaries and the kept tail included). Its blocks are shared: do not modify them.
	View []summarize.Message
	// Tokens holds each message's size in the provider's tokens (counted, calibrated).
	Tokens []int
	// Rounds lists, in increasing order, the indexes of View where a span may start or end:
	// the first message a fold may cover (after base context, an earlier compaction's summary
	// and tail, and the summaries of earlier collapses), each later start of a complete API
	// round (where the role changes and no tool call, server tool call or split response is
	// cut: a response after the tool results or prompt before it, or a prompt after a
	// response), and the start of the kept tail, which stays verbatim. Fewer than two: nothing
	// can be folded.
	Rounds []int
	// Pressure is the request's pressure figure, Target the figure the fold should bring it
	// under, and Levels the pipeline's levels.
	Pressure, Target int
	Levels           Levels
}

// FoldSpan is a [CollapseProducer]'s choice: View[From:To] of its [FoldRequest] is folded.
// From and To must both be in Rounds, From below To; From == To folds nothing.
type FoldSpan struct {
	From, To int
	// Summary is the span's summary; empty: the pipeline has it written by the compaction's
	// Summarizer ([summarize.Extractive] when none is set), with the span alone as its view.
	Summary string
}

// FoldOldest is the library's [CollapseProducer]: it folds the oldest complete API rounds of
// the view, as few as bring the pressure under the target once their summary (reckoned at a
// quarter of their size) replaces them, or all of them up to the kept tail when fewer do not;
// and nothing when that would gain less than a twentieth of the pressure, which is not worth
// the prompt cache the new prefix costs. Its zero value is ready to use.
type FoldOldest struct{}

// Fold chooses the oldest rounds of req (see [FoldOldest]).
func (FoldOldest) Fold(_ context.Context, req FoldRequest) (FoldSpan, error) {
	if len(req.Rounds) < 2 {
		return FoldSpan{}, nil
	}
	from := req.Rounds[0]
	need := req.Pressure - req.Target
	span, to := 0, from
	for _, end := range req.Rounds[1:] {
		for i := to; i < end; i++ {
			span += req.Tokens[i]
		}
		to = end
		if foldGain(span) >= need {
			break
		}
	}
	if foldGain(span)*20 < req.Pressure {
		return FoldSpan{}, nil
	}
	return FoldSpan{From: from, To: to}, nil
}

// foldGain estimates what folding a span of n tokens frees: its summary is reckoned at a
// quarter of it.
func foldGain(n int) int { return n - n/4 }

// foldPrompt is the instruction ending a fold's summary request.
const foldPrompt = `The messages above are an early part of a longer conversation that is still going on. They will be taken out of the context and replaced by your summary, while the rest of the conversation stays as it is. Write that summary: what was asked and decided, which files and commands were involved and what they showed, what failed and how it was fixed, and anything still open that later messages may rely on. Keep names, paths, numbers and error messages exact. Answer with the summary alone, inside <summary></summary> tags, with no tool calls.`

// folder runs the collapse producer (see [CollapseConfig.Producer]): before auto-compact, it
// folds the oldest rounds of the view into a collapse commit and builds the view again from
// the records with the commit appended.
type folder struct {
	cfg CollapseConfig
	co  *compactor
}

// foldHistory is what the records after the latest compact boundary say of the producer's
// attempts on this thread.
type foldHistory struct {
	failures   int  // failed attempts since the last commit
	failedHere bool // an attempt on the chain's leaf failed
	foldedHere bool // a commit was written after the chain's leaf
}

// commitLevel is the pressure figure at which the producer folds.
func (f *folder) commitLevel(l Levels) int {
	return int(cmp.Or(f.cfg.CommitFraction, defaultFoldCommitFraction) * float64(l.Threshold))
}

// target is the pressure figure a fold aims under.
func (f *folder) target(l Levels) int {
	return int(cmp.Or(f.cfg.TargetFraction, defaultFoldTargetFraction) * float64(l.Threshold))
}

// due reports whether the producer runs on turn t.
func (f *folder) due(t *turn) bool {
	if f.cfg.Producer == nil || f.cfg.Disable || t.in.NoCompact || t.in.SkipCacheWrite || t.reactive || t.chain.Leaf == nil {
		return false
	}
	if pr := t.report.Pressure.Tokens; pr < f.commitLevel(t.levels) && !(pr >= t.levels.Warning && temperatureOf(t, f.co.cache.cfg).cold) {
		return false // under the commit level, and not a cold prefix at the warning level
	}
	// Right after a compaction nothing is new: the next response comes first.
	return t.chain.Boundary == nil || answeredSince(t.items, t.boundaryPos)
}

// history reads the producer's commits and failed attempts after the chain's boundary.
func (f *folder) history(t *turn) foldHistory {
	var h foldHistory
	leaf := t.chain.Leaf
	leafPos := -1
	for k := len(t.chain.Records) - 1; k >= 0; k-- {
		if t.chain.Records[k] == leaf {
			leafPos = t.chain.Index(k)
			break
		}
	}
	t.chain.Scan().Each(t.in.Records, transcript.ScanCollapse|transcript.ScanFailure, func(i int, r *transcript.Record) {
		if i <= t.boundaryPos || r.Type != transcript.TypeSystem || transcript.OtherThread(r, leaf) {
			return
		}
		switch {
		case r.Subtype == transcript.SubtypeCollapseCommit:
			h.failures = 0
			if i > leafPos {
				h.foldedHere = true
			}
		case r.Subtype == transcript.SubtypeCompactFailure && r.CompactFailure != nil && r.CompactFailure.Trigger == transcript.TriggerCollapse:
			h.failures++
			if r.CompactFailure.LeafUUID == leaf.UUID {
				h.failedHere = true
			}
		}
	})
	return h
}

// fold runs the producer on t and returns the turn to go on with: t itself when nothing was
// folded (a failed attempt's record then in t.appended), or the turn built from the records
// with the new commit, which its Append holds first.
func (f *folder) fold(ctx context.Context, t *turn) (*turn, error) {
	rep := t.report.stage("collapse")
	skip := func(why string) (*turn, error) {
		rep.add(Action{Kind: ActionSkipped, Detail: "fold skipped: " + why})
		return t, nil
	}
	h := f.history(t)
	switch limit := f.co.cfg.maxFailures(); {
	case h.foldedHere:
		return skip("a collapse commit was already written on this turn")
	case h.failedHere:
		return skip("an attempt on this very turn already failed; the next turn tries again")
	case h.failures >= limit:
		return skip(fmt.Sprintf("the producer failed %d times in a row; it rests until the next compaction", h.failures))
	}
	req := f.request(t)
	span, err := f.cfg.Producer.Fold(ctx, req)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return t, ctxErr
	}
	if err == nil && span.From == span.To {
		return skip(fmt.Sprintf("the producer chose nothing to fold at %d tokens", req.Pressure))
	}
	by := "producer"
	first, last := "", ""
	if err == nil {
		first, last, err = spanRecords(t.items, req.Rounds, span)
	}
	if err == nil && req.Pressure < t.levels.Threshold {
		// An advisory fold: weighed against the prefix it makes the provider write again.
		cost := f.cost(t, req, span)
		t.report.CacheCosts = append(t.report.CacheCosts, cost)
		if !cost.Made {
			return skip(cost.Reason)
		}
	}
	if err == nil && span.Summary == "" {
		span.Summary, by, err = f.summarize(ctx, t, span)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return t, ctxErr
		}
	}
	var commit transcript.Record
	if err == nil {
		commit, err = NewCollapseCommit(t.in.Records, first, last, span.Summary, t.now)
	}
	if err != nil {
		fr := f.co.failureRecord(t, transcript.CompactFailure{Trigger: transcript.TriggerCollapse, Summarizer: by, Reason: err.Error(),
			Attempts: 1, PreTokens: req.Pressure, LeafUUID: t.chain.Leaf.UUID}, h.failures)
		t.appended = append(t.appended, fr)
		rep.add(Action{Kind: ActionSkipped, UUID: fr.UUID, Record: fr.UUID, Detail: "fold failed: " + err.Error()})
		return t, nil
	}
	in := *t.in
	in.Records = slices.Concat(t.in.Records, []transcript.Record{commit})
	next, err := f.co.build(ctx, &in)
	if err != nil {
		return t, err
	}
	// The turn built again makes the stages' records again (their uuids derive from what they
	// decide): of t's, only the failures and commits go before the new commit, as after a
	// compaction.
	next.appended = slices.Concat(failureRecords(t.appended), []transcript.Record{commit}, next.appended)
	next.report.Degradations = slices.Concat(t.report.Degradations, next.report.Degradations)
	next.report.CacheCosts = slices.Concat(t.report.CacheCosts, next.report.CacheCosts)
	// The collapse stage reported the tokens the commit frees; this says where it came from.
	next.report.stage("collapse").add(Action{Kind: ActionFolded, UUID: commit.UUID, Record: commit.UUID,
		Detail: fmt.Sprintf("folded %d messages %s..%s into collapse %s (summary by %s) at the commit level %d: %d → %d tokens",
			span.To-span.From, first, last, commit.Collapse.CollapseID, by, f.commitLevel(t.levels), req.Pressure, next.report.Pressure.Tokens)})
	return next, nil
}

// request builds the producer's view of t.
func (f *folder) request(t *turn) FoldRequest {
	items := t.items
	ratio := t.report.Pressure.Ratio
	req := FoldRequest{View: make([]summarize.Message, len(items)), Tokens: make([]int, len(items)),
		Pressure: t.report.Pressure.Tokens, Target: f.target(t.levels), Levels: t.levels}
	for i := range items {
		req.View[i] = viewMessage(&items[i])
		req.Tokens[i] = int(math.Ceil(float64(f.co.counter.itemTokens(&items[i])) * cmp.Or(ratio, 1)))
	}
	tail := f.co.planTail(t, len(items))
	lo := tail.lowest
	for i := range items {
		if items[i].origin == "collapse" {
			lo = max(lo, i+1)
		}
	}
	ok := safeCuts(items)
	for c := lo; c <= tail.cut; c++ {
		// A round starts where the role changes: a response after its input, or the next
		// input after a response (or its tool results).
		start := c == lo || c == tail.cut || items[c-1].role != items[c].role
		if ok[c] && start {
			req.Rounds = append(req.Rounds, c)
		}
	}
	return req
}

// spanRecords checks a producer's span against the rounds it was given and returns the uuids
// of the first and last records it covers.
func spanRecords(items []item, rounds []int, s FoldSpan) (string, string, error) {
	if s.From > s.To || !slices.Contains(rounds, s.From) || !slices.Contains(rounds, s.To) {
		return "", "", fmt.Errorf("the producer's span [%d, %d) does not start and end at rounds of the view %v", s.From, s.To, rounds)
	}
	first, last := "", ""
	for i := s.From; i < s.To; i++ {
		if items[i].rec == nil {
			continue
		}
		if first == "" {
			first = items[i].uuid
		}
		last = items[i].uuid
	}
	if first == "" {
		return "", "", errors.New("the producer's span holds no record of the transcript")
	}
	return first, last, nil
}

// summarize has the span of t's view written up by the compaction's Summarizer (Extractive
// when none is set), and returns the summary and who wrote it.
func (f *folder) summarize(ctx context.Context, t *turn, s FoldSpan) (string, string, error) {
	sz := summarize.Summarizer(summarize.Extractive{})
	if f.co.cfg.Summarizer != nil {
		sz = f.co.cfg.Summarizer
	}
	view := summaryView(t.items[s.From:s.To])
	n := 0
	for i := range view {
		n += f.co.counter.itemTokens(&view[i])
	}
	limit := max(min(n/4, f.co.summaryMax()), min(512, n/2), 1)
	req, vm, err := f.co.summaryRequest(t, view, 0, 0, foldPrompt)
	if err != nil {
		return "", summarizerName(sz, ""), err
	}
	req.MaxTokens = limit
	out, err := callSummarizer(ctx, sz, summarize.Request{Request: req, View: vm, Instructions: foldPrompt,
		MaxOutputTokens: limit, Trigger: transcript.TriggerCollapse, Attempt: 1})
	by := summarizerName(sz, out.By)
	if err != nil {
		return "", by, err
	}
	text, err := summarize.FromReply(out.Text)
	if err != nil {
		return "", by, err
	}
	cut, _ := f.co.capSummary(text, limit, calibration{ratio: cmp.Or(t.report.Pressure.Ratio, 1)})
	return cut, by, nil
}
