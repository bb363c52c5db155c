package agentctx

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/agentctx/agentctx/internal/wire"
	"github.com/agentctx/agentctx/tiktoken"
	"github.com/agentctx/agentctx/transcript"
)

// Limit is a token figure given either absolutely or as a fraction of the context window. The
// zero Limit means "the default". When both are set, Tokens wins.
type Limit struct {
	// Tokens is the figure in tokens.
	Tokens int
	// Fraction is the figure as a fraction of the context window, in (0, 1].
	Fraction float64
}

func (l Limit) isZero() bool { return l.Tokens == 0 && l.Fraction == 0 }

// resolve returns the limit in tokens for window, or def when the limit is zero.
func (l Limit) resolve(window, def int) int {
	switch {
	case l.Tokens != 0:
		return l.Tokens
	case l.Fraction != 0:
		return int(math.Round(l.Fraction * float64(window)))
	}
	return def
}

func (l Limit) validate(name string) error {
	if l.Tokens < 0 {
		return fmt.Errorf("agentctx: Pressure.%s.Tokens %d is negative", name, l.Tokens)
	}
	if l.Fraction < 0 || l.Fraction > 1 || math.IsNaN(l.Fraction) {
		return fmt.Errorf("agentctx: Pressure.%s.Fraction %v is not in (0, 1]", name, l.Fraction)
	}
	return nil
}

// Level names how close a request is to the context window, from [LevelOK] to
// [LevelBlocking]. See [Levels].
type Level string

// The pressure levels, in increasing order.
const (
	// LevelOK: below the warning level.
	LevelOK Level = "ok"
	// LevelWarning: at or above the warning level; a runtime may tell the user.
	LevelWarning Level = "warning"
	// LevelError: at or above the error level (by default the same figure as the warning).
	LevelError Level = "error"
	// LevelCompact: at or above the auto-compact threshold: auto-compact is due.
	LevelCompact Level = "compact"
	// LevelBlocking: at or above the blocking limit: the request is not sent (Prepare returns
	// a [*provider.PromptTooLongError]) unless compaction brings it under.
	LevelBlocking Level = "blocking"
)

// Levels are the pressure levels of one pipeline, in tokens: the pressure figure of a request
// (see [Pressure]) is compared with them. They satisfy 0 ≤ Warning ≤ Error ≤ Threshold ≤
// Blocking ≤ Window; the defaults also keep Blocking ≤ Effective.
type Levels struct {
	// Window is the context window.
	Window int
	// Effective is the window minus the room kept for output: Window − min(max output,
	// 20,000, Window/4).
	Effective int
	// Warning and Error are the two early-warning levels: Threshold − min(20,000, Window/8)
	// by default, both.
	Warning, Error int
	// Threshold is the auto-compact threshold: Effective − min(13,000, Window/8) by default.
	Threshold int
	// Blocking is the largest pressure figure a request may have and still be sent:
	// Effective − min(3,000, Window/32) by default.
	Blocking int
}

// DefaultLevels returns the levels Claude Code uses for a window and a maximum output, with a
// rule that keeps them meaningful for small windows. Claude Code's are: effective window =
// window − min(max output, 20,000), threshold = effective − 13,000, warning = error =
// threshold − 20,000, blocking = effective − 3,000 (167,000 and 177,000 for a 200k window).
// Each reserve is also capped by a share of the window — the output reserve by a quarter, the
// auto-compact and warning buffers by an eighth, the blocking buffer by a thirty-second — so
// no level is ever negative or above the window; the caps change nothing for windows of
// 160,000 tokens and more. A 30,000-token window gets threshold 18,750 and blocking 21,563,
// where Claude Code's formula gives −3,000.
func DefaultLevels(window, maxOutput int) Levels {
	window = max(window, 0)
	reserve := min(max(maxOutput, 0), 20_000, window/4)
	l := Levels{Window: window, Effective: window - reserve}
	l.Threshold = l.Effective - min(13_000, window/8)
	l.Blocking = l.Effective - min(3_000, window/32)
	l.Warning = max(0, l.Threshold-min(20_000, window/8))
	l.Error = l.Warning
	return l
}

// Of returns the level of a pressure figure.
func (l Levels) Of(tokens int) Level {
	switch {
	case tokens >= l.Blocking:
		return LevelBlocking
	case tokens >= l.Threshold:
		return LevelCompact
	case tokens >= l.Error && l.Error > l.Warning:
		return LevelError
	case tokens >= l.Warning:
		return LevelWarning
	}
	return LevelOK
}

// PressureConfig configures the pressure levels and the pressure figure. The zero value is the
// default: the levels of [DefaultLevels], a calibration ratio fitted on the session, and a
// max_tokens floor of min(max output, 4,096, window/8).
//
// The pressure figure estimates what the provider will count for the request: the last
// response's reported usage (the anchor: input, cache creation, cache read and output tokens)
// plus what was added to the view after it, minus what this turn's stages freed in the part the
// anchor covers — the counted parts multiplied by the calibration ratio. It is never less than
// the request's own counted size, nor, on a turn whose stages freed tokens the anchor covers
// (an estimate taken off a real count), than the counted size times the ratio. Without an
// anchor (a new session, or the first turn after a compaction) it is the counted size times
// the ratio.
//
// The ratio converts the pipeline's counted tokens into the provider's: tiktoken's cl100k
// counts about 21 % fewer tokens than Claude's tokenizer on real sessions. It is fitted on the
// session itself: for each pair of consecutive responses after the latest compact boundary,
// the growth of the reported prompt size is compared with the counted size of what the view
// gained between them; pairs whose ratio lies outside [0.5, 3] (a reduction, a cache rewrite)
// are left out, and the ratio is Σ reported ÷ Σ counted over the rest, bounded to
// [0.5, 2]. With fewer than 3 usable pairs or under 2,000 counted tokens of
// growth, the default ratio is used. Once the provider refused a prompt as too long and
// [Pipeline.Recover] recorded its count, the ratio (fitted or default, not a configured one) is
// at least that count over the counted size of the refused request, bounded to 2.
type PressureConfig struct {
	// Warning, Error, Threshold and Blocking override the levels of [DefaultLevels]. A level
	// left zero keeps its default, computed from the overridden Threshold where it depends on
	// it (Warning and Error: Threshold − min(20,000, window/8); Blocking: at least Threshold).
	// New rejects levels out of order.
	Warning, Error, Threshold, Blocking Limit
	// Ratio fixes the calibration ratio (provider tokens per counted token) instead of fitting
	// it. Zero: fitted. New rejects a ratio outside [0.5, 2], the bounds of a fitted one.
	Ratio float64
	// DefaultRatio is the ratio used when the session has too little data to fit one, in
	// [0.5, 2]. Zero: 1.25 when the pipeline counts with a [tiktoken.Encoding] (as the default
	// counter does), 1
	// otherwise.
	DefaultRatio float64
	// MinOutputTokens is the floor of max_tokens: a request whose window leaves less room for
	// output is not squeezed in; Prepare compacts or returns a [*provider.PromptTooLongError]. Zero:
	// min(max output, 4,096, window/8).
	MinOutputTokens int
	// MaxBodyBytes is the largest request body, in bytes, the provider accepts: a request over
	// it is compacted or refused with a [*provider.RequestTooLargeError]. Zero: 32,000,000 bytes.
	MaxBodyBytes int
}

// Ratio bounds of a fitted calibration.
const (
	minRatio = 0.5
	maxRatio = 2.0
)

// Fit requirements of the calibration ratio.
const (
	minFitPairs  = 3
	minFitTokens = 2_000
)

func (c PressureConfig) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		l    Limit
	}{{"Warning", c.Warning}, {"Error", c.Error}, {"Threshold", c.Threshold}, {"Blocking", c.Blocking}} {
		if err := f.l.validate(f.name); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Ratio", c.Ratio}, {"DefaultRatio", c.DefaultRatio}} {
		if f.v != 0 && (f.v < minRatio || f.v > maxRatio || math.IsNaN(f.v)) {
			errs = append(errs, fmt.Errorf("agentctx: Pressure.%s %v is not in [%v, %v]", f.name, f.v, minRatio, maxRatio))
		}
	}
	if c.MinOutputTokens < 0 {
		errs = append(errs, fmt.Errorf("agentctx: Pressure.MinOutputTokens %d is negative", c.MinOutputTokens))
	}
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("agentctx: Pressure.MaxBodyBytes %d is negative", c.MaxBodyBytes))
	}
	return errors.Join(errs...)
}

// levels resolves the configured levels for a window.
func (c PressureConfig) levels(window, maxOutput int) (Levels, error) {
	l := DefaultLevels(window, maxOutput)
	if !c.Threshold.isZero() {
		l.Threshold = c.Threshold.resolve(window, l.Threshold)
		l.Warning = max(0, l.Threshold-min(20_000, window/8))
		l.Error = l.Warning
		l.Blocking = max(l.Blocking, l.Threshold)
	}
	l.Warning = c.Warning.resolve(window, l.Warning)
	l.Error = c.Error.resolve(window, max(l.Error, l.Warning))
	l.Blocking = c.Blocking.resolve(window, l.Blocking)
	if !(0 <= l.Warning && l.Warning <= l.Error && l.Error <= l.Threshold && l.Threshold <= l.Blocking && l.Blocking <= window) {
		return l, fmt.Errorf("agentctx: pressure levels out of order for window %d: want 0 ≤ warning %d ≤ error %d ≤ threshold %d ≤ blocking %d ≤ window",
			window, l.Warning, l.Error, l.Threshold, l.Blocking)
	}
	return l, nil
}

// minOutput is the max_tokens floor.
func (c PressureConfig) minOutput(window, maxOutput int) int {
	if c.MinOutputTokens > 0 {
		return min(c.MinOutputTokens, maxOutput)
	}
	return max(1, min(maxOutput, 4_096, window/8))
}

// Pressure is how full this turn's request is, in the provider's tokens, and the parts of the
// figure. See [PressureConfig].
type Pressure struct {
	// Tokens is the pressure figure that levels and compaction decisions use.
	Tokens int
	// Level is the level of Tokens.
	Level Level
	// Levels are the pipeline's levels.
	Levels Levels
	// Remaining is the room before auto-compact fires: Levels.Threshold − Tokens, or 0.
	Remaining int
	// Counted is the request's counted size (Report.InputTokens).
	Counted int
	// Anchor is the usage the provider reported for the anchor response (its prompt plus its
	// output); 0 without an anchor. AnchorUUID names the anchor's last record.
	Anchor     int
	AnchorUUID string
	// Added is what the view gained after the anchor, counted and calibrated.
	Added int
	// Freed is what this turn's stages freed in the part of the view the anchor covers
	// (decisions the anchor's request did not have yet), counted and calibrated.
	Freed int
	// ServerCleared is what the provider's context editing cleared from the anchor's prompt
	// ([transcript.Message.ClearedInputTokens]): the request still sends it and the counted
	// size holds it, but the provider clears it again, so the counted size that may raise
	// the figure leaves it out.
	ServerCleared int
	// Ratio is the calibration ratio; RatioSource says where it comes from: "configured",
	// "fitted on N response pairs" or "default (…)".
	Ratio       float64
	RatioSource string
	// Why explains the figure and the decision it led to, in one line.
	Why string
}

// calibration is a ratio and where it comes from.
type calibration struct {
	ratio  float64
	source string
}

// responseMark is one provider response of the view, for the calibration fit and the anchor.
type responseMark struct {
	first  int    // index in the view of the response's first item
	msgID  string // message id
	prompt int    // reported prompt size (input + cache creation + cache read)
	total  int    // prompt + output, from the response's last record
	uuid   string // uuid of the response's last record
	pos    int    // file index of the response's first record
}

// responses lists the provider responses of the view whose records come after the latest
// compact boundary in the file: a kept tail's older responses carry usage measured before the
// compaction and must anchor nothing.
func responses(items []item, boundaryPos int) []responseMark {
	var out []responseMark
	index := map[string]int{}
	for i := range items {
		it := &items[i]
		if it.role != transcript.RoleAssistant || it.rec == nil || it.msgID == "" || it.pos <= boundaryPos {
			continue
		}
		m := it.rec.Message
		if it.rec.IsAPIErrorMessage || m.Model == transcript.SyntheticModel || m.Usage.Total() <= 0 {
			continue
		}
		k, ok := index[it.msgID]
		if !ok {
			index[it.msgID] = len(out)
			out = append(out, responseMark{first: i, msgID: it.msgID, pos: it.pos})
			k = len(out) - 1
		}
		r := &out[k]
		r.prompt = m.Usage.ContextTokens()
		r.total = max(r.total, m.Usage.Total())
		r.uuid = it.uuid
	}
	return out
}

// isResponse reports whether it is a record of a provider response that responses lists.
func isResponse(it *item, boundaryPos int) bool {
	if it.role != transcript.RoleAssistant || it.rec == nil || it.msgID == "" || it.pos <= boundaryPos {
		return false
	}
	m := it.rec.Message
	return !it.rec.IsAPIErrorMessage && m.Model != transcript.SyntheticModel && m.Usage.Total() > 0
}

// lastResponse is the last of responses(items, boundaryPos), false when there is none. It
// reads the last response's records from the end of the view; only when its message id also
// appears before them (a response split around another, which responses orders by its first
// record) does it list every response.
func lastResponse(items []item, boundaryPos int) (responseMark, bool) {
	last := len(items) - 1
	for last >= 0 && !isResponse(&items[last], boundaryPos) {
		last--
	}
	if last < 0 {
		return responseMark{}, false
	}
	id := items[last].msgID
	first := last
	for i := last - 1; i >= 0; i-- {
		if it := &items[i]; isResponse(it, boundaryPos) {
			if it.msgID != id {
				break
			}
			first = i
		}
	}
	for i := range first {
		if it := &items[i]; it.msgID == id && isResponse(it, boundaryPos) {
			rs := responses(items, boundaryPos)
			return rs[len(rs)-1], true
		}
	}
	r := responseMark{first: first, msgID: id, pos: items[first].pos}
	for i := first; i <= last; i++ {
		if it := &items[i]; isResponse(it, boundaryPos) {
			u := it.rec.Message.Usage
			r.prompt = u.ContextTokens()
			r.total = max(r.total, u.Total())
			r.uuid = it.uuid
		}
	}
	return r, true
}

// itemTokens is the counted size of one view item as a request message part.
func (c *Counter) itemTokens(it *item) int {
	return messageOverheadTokens + c.Blocks(it.blocks)
}

// fitRatio fits the calibration ratio on the chain's responses after the latest compact
// boundary (see [PressureConfig]). It counts the records as the provider was sent them: a tool
// result counts as the budget's preview only when the replacement was recorded before the
// response that followed it (a replacement decided later, like this turn's, or a clearing
// after an idle gap, came after the provider saw the result whole). The fit thus depends on
// the transcript's records alone, not on what this turn decides, and the pairs an earlier turn
// summed on the same records are taken from the gauge's fit memo (see [fitMemo]).
func (g *gauge) fitRatio(t *turn) calibration {
	c := g.cfg
	if c.Ratio != 0 {
		return calibration{c.Ratio, "configured"}
	}
	def := c.DefaultRatio
	if def == 0 {
		def = 1
		if _, ok := g.counter.TokenCounter().(*tiktoken.Encoding); ok {
			def = 1.25
		}
	}
	// The records after the boundary. A response starts at the first record of a provider
	// response with usage; the records from one start up to the next (a segment) are what the
	// view gained between the two responses, and the later one measures them: at each start,
	// the segment before it is counted as the provider was sent it before that response, and
	// the pair's reported growth is compared with it. The records before the first start and
	// after the last are measured by no response, so they are never counted here (a result
	// the budget replaces this turn is never tokenized).
	records := t.chain.Records
	fit := countScratch(0)   // the chain indices of the records after the boundary
	start := countScratch(0) // the indices into fit of the response starts
	prevID := ""
	for i := range records {
		if !g.fitsFit(t, i) {
			continue
		}
		if r := records[i]; r.Type == transcript.TypeAssistant && r.Message.ID != prevID {
			m := r.Message
			prevID = m.ID
			if m.Model != transcript.SyntheticModel && m.Usage.Total() > 0 {
				*start = append(*start, len(*fit))
			}
		}
		*fit = append(*fit, i)
	}
	var replaced map[string]frozenAt // read on first need
	var sums fitSums
	if n := len(*start); n >= 2 {
		first, last := (*start)[0], (*start)[n-1]
		// The pairs the memo summed on records this turn holds as they were: pair j reads
		// the records from start j-1 to start j.
		e := g.calib.take(records[(*fit)[first]])
		c := 0 // the measured records the entry holds as they are
		for c < e.len() && first+c <= last && e.same(c, records[(*fit)[first+c]], t.chain.Index((*fit)[first+c])) {
			c++
		}
		e.truncate(c)
		if len(e.sums) == 0 {
			e.starts, e.sums = append(e.starts[:0], 0), append(e.sums[:0], fitSums{})
		}
		j0 := 0 // the last pair summed as it is
		for j0+1 < n && j0+1 < len(e.starts) && e.starts[j0+1] == (*start)[j0+1]-first {
			j0++
		}
		e.starts, e.sums = e.starts[:j0+1], e.sums[:j0+1]
		sums = e.sums[j0]
		for q := first + e.len(); q <= last; q++ {
			e.add(records[(*fit)[q]], t.chain.Index((*fit)[q]))
		}

		// Each record the other pairs measure as it was sent: a tool result as the budget's
		// preview when its replacement was recorded before the response that measures it.
		from0 := (*start)[j0]
		sent := make([][]transcript.Block, last-from0)
		roles := make([]transcript.Role, last-from0)
		s := j0 + 1
		for q := from0; q < last; q++ {
			for (*start)[s] <= q {
				s++
			}
			r := records[(*fit)[q]]
			roles[q-from0], sent[q-from0] = r.Message.Role, g.sentBlocks(r, t.chain.Index((*fit)[(*start)[s]]), &replaced, t.in.Records, t.chain)
		}
		own := countScratch(last - from0) // their counts as sent, without the framing
		if j0 == 0 {
			g.counter.sequence(seqRecords, last-from0, func(k int) (transcript.Role, []transcript.Block) { return roles[k], sent[k] }, *own)
		} else {
			// A few new pairs: the message memo counts them without the sequence memo
			// taking this shorter sequence for the conversation's.
			for k := range sent {
				(*own)[k] = g.counter.keyed(g.counter.messageKey(roles[k], sent[k]), roles[k], sent[k]).bd.Total()
			}
		}
		for j := j0 + 1; j < n; j++ {
			from, k := (*start)[j-1], (*start)[j]
			prev := records[(*fit)[from]].Message.Usage.ContextTokens()
			u := records[(*fit)[k]].Message.Usage
			grown := 0
			for q := from; q < k; q++ {
				grown += messageOverheadTokens + (*own)[q-from0]
			}
			// A deletion by cache_edits shrank the context the provider reports: the
			// growth is what it reports plus what it deleted.
			d := u.ContextTokens() + u.CacheDeletedInputTokens() - prev
			if ratio := float64(d) / float64(max(grown, 1)); d > 0 && grown > 0 && ratio >= 0.5 && ratio <= 3 {
				sums.reported += float64(d)
				sums.counted += float64(grown)
				sums.pairs++
			}
			e.starts, e.sums = append(e.starts, k-first), append(e.sums, sums)
		}
		putCountScratch(own)
		g.calib.keep(e)
	}
	reported, counted, pairs := sums.reported, sums.counted, sums.pairs
	putCountScratch(fit)
	putCountScratch(start)
	if pairs < minFitPairs || counted < minFitTokens {
		return g.providerRatio(t, calibration{def, fmt.Sprintf("default (%d usable response pairs, %d counted tokens of growth: too few to fit)", pairs, int(counted))})
	}
	r := math.Round(reported/counted*1000) / 1000
	r = min(max(r, minRatio), maxRatio)
	return g.providerRatio(t, calibration{r, fmt.Sprintf("fitted on %d response pairs", pairs)})
}

// fitsFit reports whether chain record i takes part in the calibration fit: a message the
// provider was sent, after the latest compact boundary.
func (g *gauge) fitsFit(t *turn, i int) bool {
	r := t.chain.Records[i]
	return r.IsConversation() && !r.IsAPIErrorMessage && t.chain.Index(i) > t.boundaryPos
}

// providerRatio raises a fitted or default calibration to the ratio of the provider's count
// to the counted size of the latest prompt the provider refused as too long, when that is
// higher: the provider counted that very request.
func (g *gauge) providerRatio(t *turn, c calibration) calibration {
	s := &t.recovery
	r := min(math.Round(s.ratio*1000)/1000, maxRatio)
	if r <= c.ratio {
		return c
	}
	return calibration{r, fmt.Sprintf("the provider's count over the counted size of the prompt it refused (record %s)", s.ratioRec)}
}

// frozenAt is a recorded budget replacement and the file position of its record.
type frozenAt struct {
	preview string
	pos     int
}

// budgetPreviews returns the budget's recorded replacements in records from position from on
// (a chain's start, as frozenBudget reads them), Claude Code's content replacements among
// them, the first on each tool_use id winning. sc, when it covers records, lists the budget
// decisions (nil: every record is read).
func budgetPreviews(records []transcript.Record, sc *transcript.Scan, from int) map[string]frozenAt {
	m := map[string]frozenAt{}
	sc.EachFrom(records, transcript.ScanBudget, from, func(i int, r *transcript.Record) {
		for _, c := range r.ContentReplacements() {
			if _, ok := m[c.ToolUseID]; !ok {
				m[c.ToolUseID] = frozenAt{c.Replacement, i}
			}
		}
		if d := r.Budget; d != nil && r.Subtype == transcript.SubtypeToolResultBudget {
			for _, res := range d.Results {
				if _, ok := m[res.ToolUseID]; !ok && res.Replaced && res.Preview != "" {
					m[res.ToolUseID] = frozenAt{res.Preview, i}
				}
			}
		}
	})
	return m
}

// sentBlocks returns a record's content as the provider was sent it before the response at
// file position before: a tool result whose replacement was recorded before that is its
// preview. The content itself when nothing in it was replaced. replaced is read from records
// on first need (see budgetPreviews).
func (g *gauge) sentBlocks(r *transcript.Record, before int, replaced *map[string]frozenAt, records []transcript.Record, chain *transcript.Chain) []transcript.Block {
	content := r.Message.Content
	if r.Type != transcript.TypeUser || !slices.ContainsFunc(content, func(b transcript.Block) bool { return b.Kind() == transcript.KindToolResult }) {
		return content
	}
	if *replaced == nil {
		*replaced = budgetPreviews(records, chain.Scan(), chain.Start())
	}
	var out []transcript.Block
	for j, b := range content {
		if tr, f, ok := sentAsPreview(b, before, *replaced); ok {
			if out == nil {
				out = slices.Clone(content)
			}
			out[j] = replacedResult(tr, f.preview)
		}
	}
	if out == nil {
		return content
	}
	return out
}

// sentAsPreview returns b and its recorded replacement when b is a tool result whose
// replacement was recorded before the response at file position before (-1: none).
func sentAsPreview(b transcript.Block, before int, replaced map[string]frozenAt) (*transcript.ToolResult, frozenAt, bool) {
	if tr, ok := b.(*transcript.ToolResult); ok && before >= 0 {
		if f, ok := replaced[tr.ToolUseID]; ok && f.pos < before {
			return tr, f, true
		}
	}
	return nil, frozenAt{}, false
}

// scale converts counted tokens into the provider's, rounding up.
func (c calibration) scale(n int) int { return int(math.Ceil(float64(n) * c.ratio)) }

// gauge measures a turn's pressure (see [PressureConfig]): the counted request scaled by the
// calibration ratio it fits on the chain's responses, or anchored on the latest response's
// usage. It keeps the fit's sums of the last conversations served (see [fitMemo]).
type gauge struct {
	cfg     PressureConfig
	counter *Counter
	calib   *fitMemo
}

// measure computes the turn's pressure figure from the view (t.items after the stages), the
// stages' actions and the counted request size.
func (g *gauge) measure(t *turn) Pressure {
	a, hasAnchor := lastResponse(t.items, t.boundaryPos)
	cal := g.fitRatio(t)
	pr := Pressure{Levels: t.levels, Counted: t.report.InputTokens, Ratio: cal.ratio, RatioSource: cal.source}
	anchored := cal.scale(pr.Counted)
	why := "no provider usage after the latest compact boundary: the counted request times the ratio"
	if hasAnchor {
		pr.Anchor, pr.AnchorUUID = a.total, a.uuid
		added := 0
		for i := a.first + 1; i < len(t.items); i++ {
			if it := &t.items[i]; it.msgID != a.msgID || it.role != transcript.RoleAssistant {
				added += g.counter.itemTokens(it)
			}
		}
		pr.Added = cal.scale(added)
		pr.Freed = cal.scale(g.freedBeforeAnchor(t, a))
		anchored = max(0, pr.Anchor+pr.Added-pr.Freed)
		why = fmt.Sprintf("anchored on the usage of response %s", a.msgID)
		why += serverCleared(&pr, t.items[a.first].rec)
	}
	pr.Tokens = anchored
	if counted := pr.Counted - pr.ServerCleared; counted > anchored {
		pr.Tokens = counted
		why += fmt.Sprintf("; raised to the counted size %d, which is larger", counted)
	}
	// What this turn freed is an estimate taken off a real count: the figure it lowers is
	// never below what is sent, counted at the ratio.
	if pr.Freed > 0 {
		if scaled := cal.scale(pr.Counted - pr.ServerCleared); scaled > pr.Tokens {
			pr.Tokens = scaled
			why += fmt.Sprintf("; raised to the counted size times the ratio, %d, since this turn freed tokens", scaled)
		}
	}
	if s := &t.recovery; s.room != nil && s.roomPos > t.boundaryPos && s.roomPos > s.responsePos {
		// The provider counted this prompt when it refused the output room on top of it.
		if n := s.room.Recovery.Tokens; n > pr.Tokens {
			pr.Tokens = n
			why += fmt.Sprintf("; raised to %d: the provider's count of the prompt when it refused max_tokens on top of it (record %s)", n, s.room.UUID)
		}
	}
	if s := &t.recovery; s.ptl != nil && s.ptlPos > t.boundaryPos && s.ptlPos > s.responsePos {
		// The provider refused this conversation's prompt since its latest response and
		// compaction: it is too long whatever the figure says.
		if floor := max(s.ptl.Recovery.Tokens, t.levels.Blocking); floor > pr.Tokens {
			pr.Tokens = floor
			why += fmt.Sprintf("; raised to %d: the provider refused the prompt as too long (record %s)", floor, s.ptl.UUID)
		}
	}
	pr.Level = t.levels.Of(pr.Tokens)
	pr.Remaining = max(0, t.levels.Threshold-pr.Tokens)
	pr.Why = why
	return pr
}

// freedBeforeAnchor sums the tokens freed by the reduction stages' actions that the anchor's
// request did not have yet (decisions made this turn, or recorded after the anchor's first
// record) on items the anchor covers (at or before its first record).
func (g *gauge) freedBeforeAnchor(t *turn, a responseMark) int {
	var appended map[string]bool // the records this turn appends, read on first need
	fresh := func(uuid string) bool {
		if appended == nil {
			appended = make(map[string]bool, len(t.appended))
			for i := range t.appended {
				appended[t.appended[i].UUID] = true
			}
		}
		return appended[uuid]
	}
	var recPos map[string]int
	pos := func(uuid string) (int, bool) {
		if recPos == nil {
			recPos = recordPositions(t.in.Records)
		}
		i, ok := recPos[uuid]
		return i, ok
	}
	freed := 0
	for _, s := range t.report.Stages {
		switch s.Stage {
		case "media", "recovery", "budget", "snip", "microcompact", "collapse":
		default:
			continue
		}
		for _, act := range s.Actions {
			if act.Tokens >= 0 || act.Record == "" {
				continue
			}
			if !fresh(act.Record) {
				if rp, ok := pos(act.Record); !ok || rp <= a.pos {
					continue // in effect when the anchor's request was built
				}
			}
			if s.Stage != "collapse" { // a collapse commit names history: its span is covered
				if ip, ok := pos(act.UUID); !ok || ip > a.pos {
					continue // counted in Added, after the reduction
				}
			}
			freed -= act.Tokens
		}
	}
	return freed
}

// maxBody is the body limit Prepare keeps the request under: MaxBodyBytes, or the provider's.
func (c PressureConfig) maxBody() int { return cmp.Or(c.MaxBodyBytes, wire.MaxBodyBytes) }
