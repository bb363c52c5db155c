package prose

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCutMiddle(t *testing.T) {
	long := "HEAD " + strings.Repeat("middle words ", 100) + "TAIL-END"
	tests := []struct {
		name, in string
		n        int
		has      []string
	}{
		{"fits", "short", 10, []string{"short"}},
		{"head and tail", long, 300, []string{"HEAD ", "TAIL-END", "characters left out here"}},
		{"too small for both: the end goes", long, 100, []string{"HEAD ", "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CutMiddle(tt.in, tt.n)
			assert.LessOrEqual(t, len([]rune(got)), tt.n+2, got)
			for _, h := range tt.has {
				assert.Contains(t, got, h)
			}
		})
	}
}

func TestAllot(t *testing.T) {
	tests := []struct {
		name          string
		needs, shares []int
		budget        int
		want          []int
	}{
		{"all fit", []int{10, 20}, []int{50, 50}, 100, []int{10, 20}},
		{"the rest passes on", []int{10, 500}, []int{50, 50}, 100, []int{10, 90}},
		{"shares when none fits", []int{500, 500}, []int{75, 25}, 100, []int{75, 25}},
		{"empty sections take nothing", []int{0, 500, 0}, []int{40, 20, 40}, 100, []int{0, 100, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Allot(tt.needs, tt.shares, tt.budget))
		})
	}
}
