package simulate

import (
	"context"
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
	// definitions) does not enter it. It is 1 when fewer than two responses carry usage,
	// when their requests do not grow by at least minCalibrationSpread tokens, or when the
	// slope falls outside 0.5–2.
	Ratio float64 `json:"ratio"`
	// Responses is the number of responses the ratio was fitted on: those with usage from
	// the first one on, up to the file's first compaction after it or the first response of
	// another model, at most 32.
	Responses int `json:"responses"`
	// Scaled reports that the policy's cache split, its totals and its costs are in provider
	// tokens, counted tokens × Ratio ([Options.Calibrate]).
	Scaled bool `json:"scaled"`
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
type calibrationPoint struct{ counted, reported int }

// firstRequests measures the session's first responses with usage, from the first on up to
// the next compact boundary of the file or the first response of another model (whose
// tokenizer may count otherwise), at most maxCalibrationResponses: the counted size of
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
		out   []calibrationPoint
		stop  = -1 // the file's first compact boundary after the first measured response
		model string
	)
	for _, at := range points {
		g := groups[at]
		u := g.usage
		if u == nil {
			continue
		}
		if len(out) > 0 && g.model != model {
			break // another model, another tokenizer
		}
		model = g.model
		if stop < 0 {
			stop = len(records)
			for i := at; i < len(records); i++ {
				if records[i].IsCompactBoundary() {
					stop = i
					break
				}
			}
		}
		if at > stop || len(out) == maxCalibrationResponses {
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
		out = append(out, calibrationPoint{counted: res.Report.InputTokens,
			reported: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens})
	}
	return out, nil
}

// calibrate fits the ratio of provider tokens to counted tokens on pts (see [Calibration]).
func calibrate(pts []calibrationPoint) Calibration {
	cal := Calibration{Ratio: 1, Responses: len(pts)}
	if len(pts) < 2 {
		return cal
	}
	var sx, sy float64
	lo, hi := pts[0].counted, pts[0].counted
	for _, p := range pts {
		sx += float64(p.counted)
		sy += float64(p.reported)
		lo, hi = min(lo, p.counted), max(hi, p.counted)
	}
	if hi-lo < minCalibrationSpread {
		return cal
	}
	n := float64(len(pts))
	mx, my := sx/n, sy/n
	var sxy, sxx float64
	for _, p := range pts {
		dx := float64(p.counted) - mx
		sxy += dx * (float64(p.reported) - my)
		sxx += dx * dx
	}
	if r := sxy / sxx; r >= 0.5 && r <= 2 {
		cal.Ratio = math.Round(r*10000) / 10000
	}
	return cal
}

// scaler turns counted tokens into provider tokens at ratio.
type scaler float64

// usage scales a request's cache split: the running sums of read, the writes and uncached are
// scaled and rounded, so that the parts stay whole, never negative, and sum to the scaled input.
func (s scaler) usage(read, write5m, write1h, uncached int) (int, int, int, int) {
	r := func(n int) int { return int(math.Round(float64(n) * float64(s))) }
	a := r(read)
	b := r(read + write5m)
	c := r(read + write5m + write1h)
	d := r(read + write5m + write1h + uncached)
	return a, b - a, c - b, d - c
}

// tokens scales a counted figure.
func (s scaler) tokens(n int) int { return int(math.Round(float64(n) * float64(s))) }
