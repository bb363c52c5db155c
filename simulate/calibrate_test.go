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
		})
	}
}

// TestScalerUsage: a scaled split stays whole, never negative, and sums to the scaled input.
func TestScalerUsage(t *testing.T) {
	for _, tc := range []struct {
		s                 scaler
		read, w5, w1, unc int
	}{{1.19, 1000, 3, 0, 1}, {0.84, 0, 0, 0, 7}, {1.5, 1, 1, 1, 1}, {1, 1234, 5, 6, 7}} {
		a, b, c, d := tc.s.usage(tc.read, tc.w5, tc.w1, tc.unc)
		for _, v := range []int{a, b, c, d} {
			assert.GreaterOrEqual(t, v, 0)
		}
		assert.Equal(t, tc.s.tokens(tc.read+tc.w5+tc.w1+tc.unc), a+b+c+d, "%+v", tc)
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
