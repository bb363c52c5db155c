package agentctx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/b64"

	"github.com/agentctx/agentctx/transcript"
)

// maxContinuations bounds the "continue where you stopped" turns [Pipeline.Recover] adds
// after responses cut at max_tokens, counted along the chain since the last user input.
const maxContinuations = 3

// raisedOutputCap is the output cap the output-cap rung raises max_tokens to, or the model's
// maximum output from the model table when that is lower.
const raisedOutputCap = 64_000

// strippedMediaText replaces a media block the provider refused.
const strippedMediaText = "[%s removed: the provider refused it, so it is no longer sent]"

// continueText is the user turn of [transcript.RungContinue].
const continueText = "Your previous reply was cut off at the output token limit. Carry on from the exact point where it stopped, without repeating or summarizing what you already wrote. If much remains, work in smaller steps."

// RecoveryReport says what [Pipeline.Recover] did with a provider error.
type RecoveryReport struct {
	// Class is the error's class ([Config.ClassifyError], then [provider.ClassOf]).
	Class provider.ErrorClass
	// Rung is the rung that ran (a Rung* constant), or "" when none did.
	Rung string
	// Outcome is "recovered" (Result.Request is the next request), "terminal" (the rung is
	// spent: the error says why) or "passed" (not the context's to fix: the caller's retry
	// policy or the caller acts on the error).
	Outcome RecoveryOutcome
	// Record names the record that makes the fix durable.
	Record string
	// Reason says why, in one line.
	Reason string
}

// RecoveryOutcome is what [Pipeline.Recover] made of an error ([RecoveryReport.Outcome]).
type RecoveryOutcome string

// The outcomes of [RecoveryReport].
const (
	RecoveryRecovered RecoveryOutcome = "recovered"
	RecoveryTerminal  RecoveryOutcome = "terminal"
	RecoveryPassed    RecoveryOutcome = "passed"
)

// Recover answers err, the provider's error for the request built from in (in.Records as
// they were when it was sent; classified by [Config.ClassifyError], then [provider.ClassOf]), with the next request and the
// records that make the fix durable (Result.Append, appended like Prepare's), or with a
// terminal error. Each rung is bounded, and whether it already ran is read from the records,
// so that a restart or a fork climbs the same ladder:
//
//   - [provider.ClassPromptTooLong]: the provider's figures are recorded (a [transcript.RungPromptTooLong]
//     decision: the pressure figure is at least the provider's count, and at least the
//     blocking limit, until the next compaction; the calibration ratio is at least the
//     provider's count over the counted size from then on), and one reactive compaction
//     runs — the Summarizer's, counted by the circuit breaker, or [github.com/agentctx/agentctx/summarize.Extractive] when none is
//     configured. The provider refusing the prompt again with no response since is terminal:
//     a [*provider.PromptTooLongError] with its figures.
//     When the provider's figures say the prompt fits its window and only max_tokens on top
//     of it did not (and the prompt is under the blocking limit), a [transcript.RungOutputRoom] decision
//     records its count instead, and the request goes again with max_tokens lowered to the
//     room left, without compacting; a second such refusal with no response since compacts.
//   - [provider.ClassRequestTooLarge]: the same by bytes: the refused body's size is recorded (the
//     session's body limit drops one byte below it) and one reactive compaction runs; when the
//     body is still over (what every compaction keeps, the latest input, holds that much
//     media), the largest media blocks of the request are stripped too, by a
//     [transcript.RungMediaRejected] decision. A second refusal with no response since is terminal: a
//     [*provider.RequestTooLargeError].
//   - [provider.ClassMediaRejected]: the refused blocks — named by the error's request paths (see
//     [provider.MediaRejectedError]), or else the images over the size it names, the oldest images
//     beyond the count it implies, or the media of the latest message that holds any — are
//     recorded by [transcript.MediaHash] and replaced by a text marker in every later request. An error
//     that names no block still sent is terminal.
//   - [provider.ClassOutputTruncated] ([provider.ErrOutputTruncated]; the chain's leaf is the response cut at
//     max_tokens): the output cap is raised to 64,000 tokens or the model's maximum (a
//     [transcript.RungOutputCap] decision that also withholds the cut response, so the request asks for
//     it again), then at most 3 user turns ask the model to continue where it
//     stopped; then terminal: an [*provider.OutputTruncatedError]. The raise applies to the retried
//     request and its continuations only: once a response stops other than at max_tokens,
//     requests carry the configured cap again, and a later cut answer climbs the rung anew.
//   - [provider.ClassRetryable] (429, 529, 5xx, timeouts, transport) and every other class: nothing is
//     recorded and err is returned as it is: retrying, after the delay the provider asked
//     for, is the caller's retry policy (the SDKs have one); an invalid or fatal request is
//     the caller's to fix.
//
// Result.Report.Recovery says which rung ran and why, also with an error (outcome "passed"
// when the records cannot rebuild the refused request or the caller's context ended: nothing
// is recorded then). The output-cap rung runs only when the window leaves room above the
// cap; otherwise the continuation turns come at once. A fork
// ([Input.SkipCacheWrite]) or [Input.NoCompact] never compacts: the compacting rungs are
// terminal for it.
func (p *Pipeline) Recover(ctx context.Context, in Input, err error) (Result, error) {
	p, verr := p.forTurn(&in)
	if verr != nil {
		return Result{}, verr
	}
	res, rerr := p.recover(ctx, in, err)
	p.logTurn(ctx, &res.Report, rerr)
	return res, rerr
}

// recover is Recover without the logging.
func (p *Pipeline) recover(ctx context.Context, in Input, err error) (Result, error) {
	if err == nil {
		return Result{}, errors.New("agentctx: recover: no error to recover from")
	}
	class := p.classOf(err)
	switch class {
	case provider.ClassPromptTooLong, provider.ClassRequestTooLarge, provider.ClassMediaRejected, provider.ClassOutputTruncated:
	default:
		why := "not the context's to fix: the caller acts on the error"
		if class == provider.ClassRetryable {
			why = "retryable: the caller's retry policy sends the same request again, after the delay the provider asked for"
		}
		return Result{Report: Report{Recovery: &RecoveryReport{Class: class, Outcome: RecoveryPassed, Reason: why}}}, err
	}
	t, berr := p.build(ctx, &in)
	if berr != nil {
		if ctx.Err() != nil {
			return cutShort(class, ""), berr
		}
		return Result{Report: Report{Recovery: &RecoveryReport{Class: class, Outcome: RecoveryPassed,
			Reason: "the refused request cannot be rebuilt from the records: " + berr.Error()}}}, berr
	}
	r := &recovery{p: p, in: in, t: t, class: class, state: readRecovery(in.Records, t.chain.Scan(), t.chain.Leaf)}
	switch class {
	case provider.ClassPromptTooLong:
		return r.promptTooLong(ctx, err)
	case provider.ClassRequestTooLarge:
		return r.requestTooLarge(ctx, err)
	case provider.ClassMediaRejected:
		return r.media(ctx, err)
	}
	return r.output(ctx)
}

// cutShort is the result of a Recover call whose context ended before its rung was done:
// nothing is recorded, and the caller acts on the context's error.
func cutShort(class provider.ErrorClass, rung string) Result {
	return Result{Report: Report{Recovery: &RecoveryReport{Class: class, Rung: rung, Outcome: RecoveryPassed,
		Reason: "the caller's context ended before the rung was done: nothing is recorded"}}}
}

// recovery is one call of Recover: the turn built from the records the refused request came
// from, and what the records say of the ladder.
type recovery struct {
	p     *Pipeline
	in    Input
	t     *turn
	class provider.ErrorClass
	state recoveryState
}

// terminal returns the turn's result with the rung reported as spent.
func (r *recovery) terminal(rung, reason string, err error) (Result, error) {
	res := r.p.result(r.t)
	res.Append = nil
	res.Report.Recovery = &RecoveryReport{Class: r.class, Rung: rung, Outcome: RecoveryTerminal, Reason: reason}
	return res, err
}

// decision returns a recovery decision record.
func (r *recovery) decision(d transcript.RecoveryDecision) transcript.Record {
	key := strings.Join([]string{d.Rung, d.LeafUUID, readPoint(r.in.Records)}, "\x00")
	rec := r.t.newDecision(transcript.SubtypeRecovery, key, "Recovery: "+d.Reason)
	rec.IsSidechain = r.t.chain.Leaf != nil && r.t.chain.Leaf.IsSidechain
	rec.Recovery = &d
	return rec
}

func (r *recovery) leafUUID() string {
	if r.t.chain.Leaf == nil {
		return ""
	}
	return r.t.chain.Leaf.UUID
}

// next builds the request from in.Records with recs appended, compacting reactively when
// compact is set, and reports the rung.
func (r *recovery) next(ctx context.Context, rung, reason string, compact bool, recs ...transcript.Record) (Result, error) {
	in := r.in
	in.Records = slices.Concat(r.in.Records, recs)
	if leaf := lastChainRecord(recs); leaf != "" && in.Leaf != "" {
		in.Leaf = leaf
	}
	var res Result
	var err error
	if compact {
		res, err = r.p.reactive(ctx, &in)
	} else {
		res, err = r.p.prepare(ctx, &in, nil)
	}
	res.Append = slices.Concat(recs, res.Append)
	if ctx.Err() != nil {
		// Cut short: nothing was tried, so nothing is recorded as tried.
		return cutShort(r.class, rung), ctx.Err()
	}
	outcome := RecoveryRecovered
	if err != nil {
		outcome = RecoveryTerminal
		reason += "; " + err.Error()
	}
	res.Report.Recovery = &RecoveryReport{Class: r.class, Rung: rung, Outcome: outcome, Record: recs[0].UUID, Reason: reason}
	return res, err
}

// reactive builds the turn of in and compacts it whatever its pressure, as auto-compact
// would (the circuit breaker counts a failure), with the Summarizer or [github.com/agentctx/agentctx/summarize.Extractive].
func (p *Pipeline) reactive(ctx context.Context, in *Input) (Result, error) {
	t, err := p.build(ctx, in)
	if err != nil {
		return Result{}, err
	}
	switch {
	case in.SkipCacheWrite:
		return p.result(t), errors.New("agentctx: recover: a fork never compacts the conversation")
	case in.NoCompact:
		return p.result(t), errors.New("agentctx: recover: compaction is off for this request (NoCompact)")
	}
	t.reactive = true
	if t, err = p.compactor.compact(ctx, t, nil); err != nil {
		return p.result(t), err
	}
	res := p.result(t)
	if len(res.Request.Messages) == 0 {
		return res, ErrNoMessages
	}
	if err := p.fits(t); err != nil {
		return res, err
	}
	return res, p.validateTurn(t)
}

func (r *recovery) promptTooLong(ctx context.Context, err error) (Result, error) {
	figures, _ := errors.AsType[*provider.PromptTooLongError](err)
	if figures == nil {
		figures = &provider.PromptTooLongError{}
	}
	st := &r.state
	floor := r.p.cfg.Pressure.minOutput(r.p.window, r.p.maxOutput)
	if w := figures.Window; w > 0 && figures.Tokens > 0 && figures.Tokens < r.t.levels.Blocking && w-figures.Tokens >= floor &&
		!(st.room != nil && st.roomPos > st.responsePos) && !(st.ptl != nil && st.ptlPos > st.responsePos) {
		// The prompt fits; the room it leaves for output did not: no compaction is needed,
		// only the provider's count of this very prompt.
		reason := fmt.Sprintf("the provider counted the prompt at %d tokens, which leaves %d of its window of %d for output, less than max_tokens %d: max_tokens is lowered to that room",
			figures.Tokens, w-figures.Tokens, w, r.t.req.MaxTokens)
		d := r.decision(transcript.RecoveryDecision{Rung: transcript.RungOutputRoom, LeafUUID: r.leafUUID(), Tokens: figures.Tokens, Limit: figures.Limit,
			Window: w, Counted: r.t.report.InputTokens, Reason: reason})
		return r.next(ctx, transcript.RungOutputRoom, reason, false, d)
	}
	if d := st.ptl; d != nil && st.ptlPos > st.responsePos {
		return r.terminal(transcript.RungPromptTooLong, "the provider refused the prompt again after the reactive compaction of record "+d.UUID+", with no response between",
			&provider.PromptTooLongError{Tokens: figures.Tokens, Limit: figures.Limit, Window: figures.Window,
				Reason: "the provider refused the prompt again after a reactive compaction (record " + d.UUID + ")"})
	}
	reason := "the provider refused the prompt as too long"
	if figures.Tokens > 0 {
		reason += fmt.Sprintf(": %d tokens", figures.Tokens)
		if figures.Limit > 0 {
			reason += fmt.Sprintf(" > %d maximum", figures.Limit)
		}
	}
	d := r.decision(transcript.RecoveryDecision{Rung: transcript.RungPromptTooLong, LeafUUID: r.leafUUID(), Tokens: figures.Tokens, Limit: figures.Limit,
		Window: figures.Window, Counted: r.t.report.InputTokens, Reason: reason})
	return r.next(ctx, transcript.RungPromptTooLong, reason+"; one reactive compaction", true, d)
}

func (r *recovery) requestTooLarge(ctx context.Context, err error) (Result, error) {
	body, merr := r.t.req.MarshalJSON()
	if merr != nil {
		return Result{}, merr
	}
	if d := r.state.large; d != nil && r.state.largePos > r.state.responsePos {
		return r.terminal(transcript.RungRequestTooLarge, "the provider refused the body again after the reactive compaction of record "+d.UUID+", with no response between",
			&provider.RequestTooLargeError{Bytes: len(body), Limit: r.t.maxBody, Reason: "the provider refused the body again after a reactive compaction (record " + d.UUID + ")"})
	}
	reason := fmt.Sprintf("the provider refused a body of %d bytes as too large: the body limit is %d bytes from now on", len(body), len(body)-1)
	d := r.decision(transcript.RecoveryDecision{Rung: transcript.RungRequestTooLarge, LeafUUID: r.leafUUID(), Bytes: len(body), Counted: r.t.report.InputTokens, Reason: reason})
	res, nerr := r.next(ctx, transcript.RungRequestTooLarge, reason+"; one reactive compaction", true, d)
	if !errors.Is(nerr, provider.ErrRequestTooLarge) {
		return res, nerr
	}
	return r.stripLargest(ctx, res, nerr, len(body)-1, reason)
}

// stripLargest answers a body still over limit after the reactive compaction — what it kept
// verbatim, the latest input above all, holds that much media — by stripping the request's
// largest media blocks until the body fits: a media decision recorded after the
// compaction's records. With no media to strip it returns res and err.
func (r *recovery) stripLargest(ctx context.Context, res Result, err error, limit int, why string) (Result, error) {
	media := mediaOf(&res.Request)
	size := func(m requestMedia) int { return len(m.src.Data) + len(m.src.URL) + len(m.src.FileID) }
	slices.SortStableFunc(media, func(a, b requestMedia) int { return size(b) - size(a) })
	over := res.Report.BodyBytes - limit
	var picked []transcript.StrippedMedia
	seen := map[string]bool{}
	for _, m := range media {
		if over <= 0 {
			break
		}
		h := transcript.MediaHash(m.src)
		if seen[h] {
			continue
		}
		seen[h] = true
		picked = append(picked, transcript.StrippedMedia{Hash: h, Kind: string(m.kind), Path: m.path})
		over -= size(m)
	}
	if len(picked) == 0 {
		return res, err
	}
	reason := fmt.Sprintf("the body is still %d bytes after the reactive compaction, over the limit %d: its %d largest media blocks are replaced by a text marker from now on",
		res.Report.BodyBytes, limit, len(picked))
	prior := res.Append
	in := r.in
	in.Records = slices.Concat(r.in.Records, prior)
	if in.Leaf != "" && res.Leaf != "" {
		in.Leaf = res.Leaf
	}
	sr := &recovery{p: r.p, in: in, t: r.t, class: r.class}
	md := sr.decision(transcript.RecoveryDecision{Rung: transcript.RungMediaRejected, LeafUUID: res.Leaf, Media: picked, Reason: reason})
	next, nerr := sr.next(ctx, transcript.RungRequestTooLarge, why+"; one reactive compaction; "+reason, false, md)
	if ctx.Err() != nil {
		return next, nerr // cut short: not even the compaction's records are kept
	}
	next.Append = slices.Concat(prior, next.Append)
	next.Report.Recovery.Record = prior[0].UUID
	if next.Report.Compaction == nil {
		next.Report.Compaction = res.Report.Compaction
	}
	return next, nerr
}

func (r *recovery) media(ctx context.Context, err error) (Result, error) {
	me, _ := errors.AsType[*provider.MediaRejectedError](err)
	if me == nil {
		me = &provider.MediaRejectedError{Message: err.Error()}
	}
	picked, rule := pickMedia(&r.t.req, me)
	if len(picked) == 0 {
		why := "the error names no media block the request still sends (" + rule + ")"
		return r.terminal(transcript.RungMediaRejected, why, fmt.Errorf("agentctx: recover: media rejected again: %s: %w", why, err))
	}
	reason := fmt.Sprintf("the provider refused media, %d blocks (%s): %s", len(picked), rule, me.Message)
	d := r.decision(transcript.RecoveryDecision{Rung: transcript.RungMediaRejected, LeafUUID: r.leafUUID(), Media: picked, Reason: reason})
	return r.next(ctx, transcript.RungMediaRejected, reason+"; replaced by a text marker from now on", false, d)
}

func (r *recovery) output(ctx context.Context) (Result, error) {
	leaf := r.t.chain.Leaf
	if leaf == nil || leaf.Type != transcript.TypeAssistant || !leaf.Message.Truncated() {
		return r.terminal("", "the chain's leaf is no response cut at max_tokens", fmt.Errorf("agentctx: recover: %w, but the chain's leaf is no response that stopped at max_tokens", provider.ErrOutputTruncated))
	}
	raised := raisedOutputCap
	if r.p.modelMax > 0 {
		raised = min(raised, r.p.modelMax)
	}
	if (r.state.outputCap == nil || r.state.capDone) && raised > r.t.maxOutput {
		reason := fmt.Sprintf("response %s stopped at max_tokens %d: the output cap is raised to %d and the response asked for again", leaf.Message.ID, r.t.maxOutput, raised)
		d := r.decision(transcript.RecoveryDecision{Rung: transcript.RungOutputCap, LeafUUID: leaf.UUID, MaxTokens: raised, MessageID: leaf.Message.ID,
			Withheld: responseRecords(r.t.chain, leaf), Reason: reason})
		res, err := r.next(ctx, transcript.RungOutputCap, reason, false, d)
		if err != nil || res.Request.MaxTokens > r.t.maxOutput {
			return res, err
		}
		// The window leaves no room above the cap it has: the raised request would ask for
		// no more output than the refused one. The raise stays unspent; a continuation asks
		// for the rest instead.
	}
	n := continuations(r.t.chain)
	if n >= maxContinuations {
		return r.terminal(transcript.RungContinue, fmt.Sprintf("%d continuations already followed responses cut at max_tokens %d", n, r.t.maxOutput),
			&provider.OutputTruncatedError{MaxTokens: r.t.maxOutput, Continuations: n})
	}
	reason := fmt.Sprintf("response %s stopped at max_tokens %d: continuation %d of at most %d", leaf.Message.ID, r.t.maxOutput, n+1, maxContinuations)
	c := transcript.Record{
		Type: transcript.TypeUser, UUID: transcript.ContentUUID("recovery_continue", leaf.UUID+"\x00"+readPoint(r.in.Records)), ParentUUID: leaf.UUID, IsSidechain: leaf.IsSidechain,
		AgentID: leaf.AgentID, IsMeta: true, SessionID: r.t.sessionID, Timestamp: transcript.Timestamp(r.t.now), Cwd: transcript.LastCwd(r.in.Records),
		Message:  &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: continueText}}},
		Recovery: &transcript.RecoveryDecision{Rung: transcript.RungContinue, LeafUUID: leaf.UUID, MessageID: leaf.Message.ID, Continuation: n + 1, Reason: reason},
	}
	return r.next(ctx, transcript.RungContinue, reason, false, c)
}

// responseRecords returns the uuids of the chain's records of the response leaf ends.
func responseRecords(chain *transcript.Chain, leaf *transcript.Record) []string {
	var out []string
	for i := len(chain.Records) - 1; i >= 0; i-- {
		r := chain.Records[i]
		if r.Type != transcript.TypeAssistant || r.Message == nil || r.Message.ID != leaf.Message.ID {
			break
		}
		out = append(out, r.UUID)
	}
	slices.Reverse(out)
	return out
}

// continuations counts the continuation turns of the run of cut responses the chain ends
// with: walking back from the leaf over assistant records and continuation turns, up to the
// first other record.
func continuations(chain *transcript.Chain) int {
	n := 0
	for i := len(chain.Records) - 1; i >= 0; i-- {
		r := chain.Records[i]
		switch {
		case r.Type == transcript.TypeAssistant:
		case r.Type == transcript.TypeUser && r.Recovery != nil && r.Recovery.Rung == transcript.RungContinue:
			n++
		case !r.IsConversation():
		default:
			return n
		}
	}
	return n
}

// recoveryState is what the records say of the recovery ladder of the leaf's thread, in file
// order.
type recoveryState struct {
	// responsePos is the file position of the thread's latest response (-1: none).
	responsePos int
	// ptl, room and large are the latest prompt-too-long, output-room and request-too-large
	// decisions, at ptlPos, roomPos and largePos.
	ptl, room, large          *transcript.Record
	ptlPos, roomPos, largePos int
	// bodyLimit is one byte below the smallest refused body (0: none), from record bodyRec.
	bodyLimit int
	bodyRec   string
	// outputCap is the latest output-cap decision, at outputCapPos, or nil; capDone is true
	// once a response after it ended other than at max_tokens: the raise covered the
	// retried request and its continuations, and is over.
	outputCap    *transcript.Record
	outputCapPos int
	capDone      bool
	// stripped maps the hash of each refused media block to the decision that stripped it;
	// withheld maps the records of a cut response asked for again to the decision.
	stripped, withheld map[string]string
	// ratio is the provider's count over the counted size of the latest prompt-too-long
	// decision (0: none), from record ratioRec.
	ratio    float64
	ratioRec string
}

// readRecovery scans records for the recovery decisions of leaf's thread; sc, when it covers
// records, lists the decisions and responses (nil: every record is read).
func readRecovery(records []transcript.Record, sc *transcript.Scan, leaf *transcript.Record) recoveryState {
	s := recoveryState{responsePos: -1, ptlPos: -1, roomPos: -1, largePos: -1}
	if sc.Covers(records) {
		s.responsePos = sc.LastResponse(records, leaf)
		sc.Each(records, transcript.ScanRecovery, func(i int, r *transcript.Record) {
			if !transcript.OtherThread(r, leaf) && !transcript.ProviderResponse(r) {
				s.decision(i, r)
			}
		})
		if s.outputCap != nil {
			s.capDone = sc.LastResponseAfter(records, leaf, s.outputCapPos, completed) >= 0
		}
		return s
	}
	for i := range records {
		r := &records[i]
		if transcript.OtherThread(r, leaf) {
			continue
		}
		if transcript.ProviderResponse(r) {
			s.responsePos = i
			s.capDone = s.capDone || s.outputCap != nil && completed(r)
			continue
		}
		s.decision(i, r)
	}
	return s
}

// completed reports whether r, a provider response, ended other than at max_tokens.
func completed(r *transcript.Record) bool {
	stop := r.Message.StopReason
	return stop != "" && stop != "max_tokens"
}

// decision reads the record at position i when it is a recovery decision.
func (s *recoveryState) decision(i int, r *transcript.Record) {
	if r.Type != transcript.TypeSystem || r.Subtype != transcript.SubtypeRecovery || r.Recovery == nil {
		return
	}
	d := r.Recovery
	switch d.Rung {
	case transcript.RungPromptTooLong, transcript.RungOutputRoom:
		if d.Rung == transcript.RungPromptTooLong {
			s.ptl, s.ptlPos = r, i
		} else {
			s.room, s.roomPos = r, i
		}
		if d.Tokens > 0 && d.Counted > 0 {
			s.ratio, s.ratioRec = float64(d.Tokens)/float64(d.Counted), r.UUID
		}
	case transcript.RungRequestTooLarge:
		s.large, s.largePos = r, i
		if d.Bytes > 1 && (s.bodyLimit == 0 || d.Bytes-1 < s.bodyLimit) {
			s.bodyLimit, s.bodyRec = d.Bytes-1, r.UUID
		}
	case transcript.RungMediaRejected:
		for _, m := range d.Media {
			if s.stripped == nil {
				s.stripped = map[string]string{}
			}
			if _, ok := s.stripped[m.Hash]; !ok {
				s.stripped[m.Hash] = r.UUID
			}
		}
	case transcript.RungOutputCap:
		s.outputCap, s.outputCapPos, s.capDone = r, i, false
		for _, u := range d.Withheld {
			if s.withheld == nil {
				s.withheld = map[string]string{}
			}
			s.withheld[u] = r.UUID
		}
	}
}

// applyRecovery sets the turn's limits from the recovery decisions and withholds the cut
// responses an output-cap decision asks for again; newTurn calls it before the stages run.
func applyRecovery(t *turn, maxBody, maxOutput int, c *Counter) {
	s := readRecovery(t.in.Records, t.chain.Scan(), t.chain.Leaf)
	t.recovery = s
	t.maxBody = maxBody
	if s.bodyLimit > 0 && s.bodyLimit < t.maxBody {
		t.maxBody = s.bodyLimit
	}
	t.maxOutput = maxOutput
	if d := s.outputCap; d != nil && !s.capDone && d.Recovery.MaxTokens > t.maxOutput {
		t.maxOutput = d.Recovery.MaxTokens // the retried request, and its continuations
	}
	if len(s.withheld) == 0 {
		return
	}
	var st *StageReport
	t.items = slices.DeleteFunc(t.items, func(it item) bool {
		rec, ok := s.withheld[it.uuid]
		if !ok || it.rec == nil || it.role != transcript.RoleAssistant {
			return false // a decision withholds only the records of a response
		}
		if st == nil {
			st = t.report.stage("recovery")
		}
		st.add(Action{Kind: ActionSnipped, UUID: it.uuid, Record: rec, Tokens: -c.itemTokens(&it),
			Detail: "response cut at max_tokens, asked for again with a higher output cap"})
		return true
	})
}

// stripMedia replaces the media blocks a recovery decision names by a text marker; it runs
// before the other stages and reports as stage "media" only when a decision names any.
func stripMedia(t *turn, c *Counter) {
	if len(t.recovery.stripped) == 0 {
		return
	}
	st := t.report.stage("media")
	marker := func(b transcript.Block) (transcript.Block, string, bool) {
		var src transcript.MediaSource
		switch b := b.(type) {
		case *transcript.Image:
			src = b.Source
		case *transcript.Document:
			src = b.Source
		default:
			return nil, "", false
		}
		rec, ok := t.recovery.stripped[transcript.MediaHash(src)]
		if !ok {
			return nil, "", false
		}
		return strippedMarker(transcript.KindOf(b)), rec, true
	}
	for i := range t.items {
		it := &t.items[i]
		for j, b := range it.blocks {
			if m, rec, ok := marker(b); ok {
				st.add(Action{Kind: ActionReplaced, UUID: it.uuid, Record: rec, Tokens: c.Block(m) - c.Block(b),
					Detail: fmt.Sprintf("%s the provider refused, replaced by a text marker", transcript.KindOf(b))})
				it.setBlock(j, m)
				continue
			}
			tr, ok := b.(*transcript.ToolResult)
			if !ok {
				continue
			}
			var content []transcript.Block
			for k, cb := range tr.Content {
				m, rec, ok := marker(cb)
				if !ok {
					continue
				}
				if content == nil {
					content = slices.Clone(tr.Content)
				}
				content[k] = m
				st.add(Action{Kind: ActionReplaced, UUID: it.uuid, ToolUseID: tr.ToolUseID, Record: rec, Tokens: c.Block(m) - c.Block(cb),
					Detail: fmt.Sprintf("%s in tool_result %s the provider refused, replaced by a text marker", transcript.KindOf(cb), tr.ToolUseID)})
			}
			if content != nil {
				c := *tr
				c.Content = content
				it.setBlock(j, &c)
			}
		}
	}
}

// strippedMarker returns the text marker that replaces a stripped media block of kind.
func strippedMarker(kind transcript.BlockKind) *transcript.Text {
	return &transcript.Text{Text: fmt.Sprintf(strippedMediaText, kind)}
}

// requestMedia is one media block of a request and where it stands.
type requestMedia struct {
	path string
	msg  int
	src  transcript.MediaSource
	kind transcript.BlockKind
}

// mediaOf lists the media blocks of req, in request order.
func mediaOf(req *provider.Request) []requestMedia {
	var out []requestMedia
	add := func(path string, msg int, b transcript.Block) {
		switch b := b.(type) {
		case *transcript.Image:
			out = append(out, requestMedia{path, msg, b.Source, transcript.KindImage})
		case *transcript.Document:
			out = append(out, requestMedia{path, msg, b.Source, transcript.KindDocument})
		}
	}
	for i, m := range req.Messages {
		for j, b := range m.Content {
			path := fmt.Sprintf("messages.%d.content.%d", i, j)
			add(path, i, b)
			if tr, ok := b.(*transcript.ToolResult); ok {
				for k, cb := range tr.Content {
					add(path+".content."+strconv.Itoa(k), i, cb)
				}
			}
		}
	}
	return out
}

// pickMedia returns the media blocks of req the error refused, each once, and the rule that
// picked them.
func pickMedia(req *provider.Request, e *provider.MediaRejectedError) ([]transcript.StrippedMedia, string) {
	media := mediaOf(req)
	var picked []requestMedia
	rule := ""
	switch {
	case len(e.Paths) > 0:
		rule = "the blocks at the paths the error names"
		for _, m := range media {
			if slices.Contains(e.Paths, m.path) {
				picked = append(picked, m)
			}
		}
	case e.MaxBytes > 0:
		rule = fmt.Sprintf("the images over the %d bytes the error names", e.MaxBytes)
		for _, m := range media {
			if m.kind == transcript.KindImage && m.src.Type == "base64" && b64.DecodedLen(m.src.Data) > e.MaxBytes {
				picked = append(picked, m)
			}
		}
	case e.MaxImages > 0:
		rule = fmt.Sprintf("the oldest images beyond the %d the error's limit allows", e.MaxImages)
		var images []requestMedia
		for _, m := range media {
			if m.kind == transcript.KindImage {
				images = append(images, m)
			}
		}
		if len(images) > e.MaxImages {
			picked = images[:len(images)-e.MaxImages]
		}
	default:
		rule = "the media of the latest message that holds any: the error names no block"
		if len(media) > 0 {
			last := media[len(media)-1].msg
			for _, m := range media {
				if m.msg == last {
					picked = append(picked, m)
				}
			}
		}
	}
	var out []transcript.StrippedMedia
	seen := map[string]bool{}
	for _, m := range picked {
		h := transcript.MediaHash(m.src)
		if seen[h] {
			continue
		}
		seen[h] = true
		path := m.path
		out = append(out, transcript.StrippedMedia{Hash: h, Kind: string(m.kind), Path: path})
	}
	return out, rule
}

// classOf classifies err with Config.ClassifyError, then with [provider.ClassOf].
func (p *Pipeline) classOf(err error) provider.ErrorClass {
	if f := p.cfg.ClassifyError; f != nil {
		if c := f(err); c != provider.ClassNone {
			return c
		}
	}
	return provider.ClassOf(err)
}
