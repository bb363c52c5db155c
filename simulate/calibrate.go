package simulate

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// Calibration relates the library's counted tokens to the provider's, for one session.
type Calibration struct {
	// Ratio is the provider's tokens per counted token: the slope of the reported prompts
	// (input + cache read + cache write) of the session's first responses over the counted
	// sizes of their requests, fitted by least squares. The slope, not the quotient, so that
	// what every request carries and the file lacks (the system prompt and the tool
	// definitions) does not enter it: that is the fit's intercept, which an estimated fixed
	// prefix stands for ([FixedPrefix]). It is fitted on the responses of Model: the
	// session's first model, or, when its responses do not tell it, the first other model
	// whose responses do. It is 1 when no model's responses do (Unfit says why).
	Ratio float64 `json:"ratio"`
	// Model is the model whose responses Ratio was fitted on (empty when none carries usage).
	Model string `json:"model,omitempty"`
	// Responses is the number of responses the ratio was fitted on: those of Model with
	// usage from the session's first one on, up to the file's first compaction after it, at
	// most 32.
	Responses int `json:"responses"`
	// Unfit says why Ratio is 1 when no model's responses tell it: fewer than two carry
	// usage, their requests grow by under 2,000 counted tokens, or the slope is outside
	// 0.5–2 (the provider's prompts grew by more than twice the counted requests: the client
	// sent what the file does not hold). Empty when fitted.
	Unfit string `json:"unfit,omitempty"`
	// Scaled reports that the policy's cache split, its totals and its costs are in provider
	// tokens, counted tokens × Ratio ([Options.Calibrate]).
	Scaled bool `json:"scaled"`
	// Models holds the models other than Model whose own responses tell their ratio, in the
	// order they first answer: another model may count the same text with another
	// tokenizer, and a client may send another model another system prompt. With
	// [Options.ResponseModels] a turn answered by one of them is scaled at its own ratio and
	// fixed part.
	Models []ModelCalibration `json:"models,omitempty"`
}

// ModelCalibration is the calibration of one model of a session whose responses came from
// several.
type ModelCalibration struct {
	Model string `json:"model"`
	// Ratio is the slope of the model's reported prompts over the counted requests, fitted as
	// [Calibration.Ratio] is, on the model's own responses.
	Ratio float64 `json:"ratio"`
	// Fixed is the provider tokens of what every request starts with on this model — the
	// tool definitions and the system prompt, whatever part of them the file lacks — : the
	// fit's intercept, the mean over the model's responses of the reported prompt less Ratio ×
	// the counted conversation after the tool definitions (at least 0).
	Fixed int `json:"fixed"`
	// Responses is the number of the model's responses the figures were fitted on.
	Responses int `json:"responses"`
}

const (
	// maxCalibrationResponses bounds the responses a calibration measures.
	maxCalibrationResponses = 32
	// minCalibrationSpread is the growth of the counted requests under which the slope is
	// left unfitted: over a few hundred tokens the reported figures' rounding and the
	// client's own additions weigh more than the tokenizers' difference.
	minCalibrationSpread = 2000
)

// calibrationPoint is one response of a calibration: the counted size of the request built
// for it, without any system prompt, and the prompt the provider reported.
type calibrationPoint struct {
	counted, reported int
	model             string
}

// firstRequests measures the session's first responses with usage, from the first on up to
// the next compact boundary of the file, at most maxCalibrationResponses of each model (whose
// tokenizer may count otherwise than another's): the counted size of
// the request cfg's pipeline builds for each, with tools and without a system prompt, auto-
// compact and time-based clearing off (the file's first requests were not compacted), on a
// pipeline of its own (a store of its own, no logger), and the prompt the provider reported. A
// request that cannot be built is left out.
func firstRequests(ctx context.Context, records []transcript.Record, cfg agentctx.Config, tools []provider.Tool,
	points []int, groups map[int]*recordedResponse) ([]calibrationPoint, error) {
	var clock time.Time
	cfg.Now = func() time.Time { return clock }
	cfg.Compact.DisableAuto = true
	cfg.Microcompact.Disable = true
	cfg.Budget.Store = &agentctx.MapStore{} // the replay's store sees none of this
	cfg.Logger = nil
	p, err := agentctx.New(cfg)
	if err != nil {
		return nil, err
	}
	var (
		out  []calibrationPoint
		stop = -1 // the file's first compact boundary after the first measured response
		per  = map[string]int{}
	)
	for _, at := range points {
		g := groups[at]
		u := g.usage
		if u == nil || per[g.model] == maxCalibrationResponses {
			continue
		}
		if stop < 0 {
			stop = len(records)
			for i := at; i < len(records); i++ {
				if records[i].IsCompactBoundary() {
					stop = i
					break
				}
			}
		}
		if at > stop {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		clock = time.Time{}
		for i := range at {
			if t := records[i].Time(); t.After(clock) {
				clock = t
			}
		}
		res, err := p.Prepare(ctx, agentctx.Input{Records: records[:at], Leaf: records[at].ParentUUID, Tools: tools})
		if err != nil {
			continue
		}
		per[g.model]++
		out = append(out, calibrationPoint{counted: res.Report.InputTokens, model: g.model,
			reported: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens})
	}
	return out, nil
}

// calibrate fits the ratio of provider tokens to counted tokens on pts (see [Calibration]),
// and each other model's own ratio where its points tell it; their fixed parts are filled in
// by [Calibration.fixParts] once the fixed prefix is known.
func calibrate(pts []calibrationPoint) Calibration {
	var models []string
	byModel := map[string][]calibrationPoint{}
	for _, p := range pts {
		if _, ok := byModel[p.model]; !ok {
			models = append(models, p.model)
		}
		byModel[p.model] = append(byModel[p.model], p)
	}
	cal := Calibration{Ratio: 1}
	if len(models) == 0 {
		cal.Unfit = unfitFew
		return cal
	}
	cal.Model, cal.Responses = models[0], len(byModel[models[0]])
	found := false
	for _, m := range models {
		r, why := slope(byModel[m])
		switch {
		case why != "":
			if m == models[0] {
				cal.Unfit = why
			}
		case !found:
			found, cal.Ratio, cal.Model, cal.Responses, cal.Unfit = true, r, m, len(byModel[m]), ""
		default:
			cal.Models = append(cal.Models, ModelCalibration{Model: m, Ratio: r, Responses: len(byModel[m])})
		}
	}
	return cal
}

// Why a slope is not fitted (see [Calibration.Unfit]).
const (
	unfitFew    = "fewer than two responses with usage"
	unfitSpread = "the requests grow by under 2000 counted tokens"
)

// intercept is the mean over the points of model of the reported prompt / ratio less the
// counted request: with the least-squares slope, the fit's intercept in counted tokens.
func intercept(pts []calibrationPoint, model string, ratio float64) int {
	var sum float64
	n := 0
	for _, p := range pts {
		if p.model == model {
			sum += float64(p.reported)/ratio - float64(p.counted)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return int(math.Round(sum / float64(n)))
}

// slope fits the slope of the reported prompts over the counted requests of pts by least
// squares, rounded to four decimals; or says why it does not: fewer than two points, their
// counted requests spread over less than minCalibrationSpread tokens, or a slope outside
// 0.5–2.
func slope(pts []calibrationPoint) (float64, string) {
	if len(pts) < 2 {
		return 0, unfitFew
	}
	var sx, sy float64
	lo, hi := pts[0].counted, pts[0].counted
	for _, p := range pts {
		sx += float64(p.counted)
		sy += float64(p.reported)
		lo, hi = min(lo, p.counted), max(hi, p.counted)
	}
	if hi-lo < minCalibrationSpread {
		return 0, unfitSpread
	}
	n := float64(len(pts))
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for _, p := range pts {
		dx := float64(p.counted) - mx
		sxy += dx * (float64(p.reported) - my)
		sxx += dx * dx
	}
	r := sxy / sxx
	if r < 0.5 || r > 2 {
		return 0, fmt.Sprintf("the slope %.2f is outside 0.5–2", r)
	}
	return math.Round(r*10000) / 10000, ""
}

// fixParts fills in each other model's fixed part (see [ModelCalibration.Fixed]) from pts,
// whose counted sizes hold tools counted tokens of tool definitions and no system prompt.
func (c *Calibration) fixParts(pts []calibrationPoint, tools int) {
	for i := range c.Models {
		m := &c.Models[i]
		m.Fixed = max(0, int(math.Round(m.Ratio*float64(intercept(pts, m.Model, m.Ratio)+tools))))
	}
}

// scaler turns counted tokens into provider tokens: a request's first fixed counted tokens
// (the tool definitions and the system prompt every request starts with) are fixedTo
// provider tokens, spread evenly, and every token after them ratio tokens. With fixed 0 it
// scales every token at ratio.
type scaler struct {
	ratio   float64
	fixed   int
	fixedTo float64
}

// uniform scales every token at ratio.
func uniform(ratio float64) scaler { return scaler{ratio: ratio} }

// identity reports that s changes nothing.
func (s scaler) identity() bool { return s.ratio == 1 && s.fixed == 0 }

// at is the provider tokens of a request's first n counted tokens.
func (s scaler) at(n int) int {
	if n <= s.fixed {
		return int(math.Round(float64(n) * s.fixedTo / float64(max(s.fixed, 1))))
	}
	return int(math.Round(s.fixedTo + float64(n-s.fixed)*s.ratio))
}

// usage scales a request's cache split, laid out from the request's start: read first, then
// the writes, then uncached. The running sums are scaled as positions in the request and
// rounded, so that the parts stay whole, never negative, and sum to the scaled input.
func (s scaler) usage(read, write5m, write1h, uncached int) (int, int, int, int) {
	a := s.at(read)
	b := s.at(read + write5m)
	c := s.at(read + write5m + write1h)
	d := s.at(read + write5m + write1h + uncached)
	return a, b - a, c - b, d - c
}

// tokens scales a counted figure that is no request's start (an output) at the ratio.
func (s scaler) tokens(n int) int { return int(math.Round(float64(n) * s.ratio)) }

// scales holds a session's scalers: main, and those of the models with a calibration of
// their own.
type scales struct {
	main   scaler
	models map[string]scaler
}

// of returns model's scaler: its own, or main.
func (s scales) of(model string) scaler {
	if m, ok := s.models[model]; ok {
		return m
	}
	return s.main
}
