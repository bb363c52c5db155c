package simulate

import (
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCalibrate: the ratio is the slope of the reported prompts over the counted requests,
// whatever the fixed part every request carries; 1 when it cannot be told.
func TestCalibrate(t *testing.T) {
	line := func(ratio float64, fixed int, counted ...int) []calibrationPoint {
		var pts []calibrationPoint
		for _, c := range counted {
			pts = append(pts, calibrationPoint{counted: c, reported: fixed + int(ratio*float64(c))})
		}
		return pts
	}
	for _, tc := range []struct {
		name string
		pts  []calibrationPoint
		want float64
	}{
		{"slope, not quotient", line(1.19, 30000, 3000, 5000, 9000, 20000), 1.19},
		{"below one", line(0.85, 12000, 1000, 4000, 8000), 0.85},
		{"none", nil, 1},
		{"one response", line(1.2, 30000, 3000), 1},
		{"too little growth", line(1.2, 30000, 3000, 3500, 4000), 1},
		{"out of range", line(3, 0, 1000, 9000), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cal := calibrate(tc.pts)
			assert.InDelta(t, tc.want, cal.Ratio, 0.001)
			assert.Equal(t, len(tc.pts), cal.Responses)
			assert.Equal(t, tc.want == 1, cal.Unfit != "", "Unfit %q says why the ratio is 1", cal.Unfit)
			assert.Empty(t, cal.Models)
		})
	}
}

// TestCalibrateModels: each model's responses are fitted on their own; the first model whose
// responses tell a ratio gives Ratio and its fit's intercept the fixed prefix, and every other
// model that tells one its own ratio and fixed part.
func TestCalibrateModels(t *testing.T) {
	on := func(model string, ratio float64, fixed int, counted ...int) []calibrationPoint {
		var pts []calibrationPoint
		for _, c := range counted {
			pts = append(pts, calibrationPoint{counted: c, reported: fixed + int(ratio*float64(c)), model: model})
		}
		return pts
	}
	const tools = 500
	for _, tc := range []struct {
		name   string
		pts    []calibrationPoint
		model  string
		ratio  float64
		prefix int // the estimated fixed prefix, counted tokens
		others []ModelCalibration
		unfit  bool
	}{
		{"one model", on("a", 1.3, 13000, 3000, 6000, 9000), "a", 1.3, 10000, nil, false},
		{"a second tokenizer", append(on("a", 1.3, 13000, 3000, 6000, 9000), on("b", 1.6, 9000, 12000, 15000)...),
			"a", 1.3, 10000, []ModelCalibration{{Model: "b", Ratio: 1.6, Fixed: 9800, Responses: 2}}, false},
		{"the first model tells nothing", append(on("a", 1.3, 13000, 3000), on("b", 1.6, 16000, 4000, 9000, 12000)...),
			"b", 1.6, 10000, nil, false},
		{"no model tells", append(on("a", 1.3, 13000, 3000), on("b", 1.6, 16000, 4000)...), "a", 1, 13900, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cal := calibrate(tc.pts)
			assert.Equal(t, tc.model, cal.Model)
			assert.InDelta(t, tc.ratio, cal.Ratio, 0.001)
			assert.Equal(t, tc.unfit, cal.Unfit != "")
			cal.fixParts(tc.pts, tools)
			for i := range cal.Models {
				assert.InDelta(t, tc.others[i].Fixed, cal.Models[i].Fixed, 2)
				cal.Models[i].Fixed = tc.others[i].Fixed
			}
			assert.Equal(t, tc.others, cal.Models)
			assert.InDelta(t, tc.prefix, estimatePrefix(tc.pts, &cal).Tokens, 2, "the fit's intercept")
		})
	}
}

// TestScalerUsage: a scaled split stays whole, never negative, and sums to the scaled input.
func TestScalerUsage(t *testing.T) {
	for _, tc := range []struct {
		s                 scaler
		read, w5, w1, unc int
	}{{uniform(1.19), 1000, 3, 0, 1}, {uniform(0.84), 0, 0, 0, 7}, {uniform(1.5), 1, 1, 1, 1}, {uniform(1), 1234, 5, 6, 7}, {scaler{ratio: 1.6, fixed: 20000, fixedTo: 25000}, 18000, 3000, 0, 500}, {scaler{ratio: 1.3, fixed: 1000, fixedTo: 0}, 0, 999, 2, 5}} {
		a, b, c, d := tc.s.usage(tc.read, tc.w5, tc.w1, tc.unc)
		for _, v := range []int{a, b, c, d} {
			assert.GreaterOrEqual(t, v, 0)
		}
		assert.Equal(t, tc.s.at(tc.read+tc.w5+tc.w1+tc.unc), a+b+c+d, "%+v", tc)
	}
}

// TestSyntheticSystem: the synthetic prompt counts exactly the tokens asked, and the same
// count gives the same text.
func TestSyntheticSystem(t *testing.T) {
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5"})
	require.NoError(t, err)
	c := p.Counter()
	for _, n := range []int{1, 2, 17, 500, 35300} {
		text := syntheticSystem(c, n)
		assert.Equal(t, n, c.Text(text), "n=%d", n)
		assert.Equal(t, text, syntheticSystem(c, n))
	}
	assert.Empty(t, syntheticSystem(c, 0))
}
