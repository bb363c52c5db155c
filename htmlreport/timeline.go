package htmlreport

import (
	"fmt"
	"strings"
)

// part is one part of a request in the page's breakdown (turnData.Parts).
type part struct{ name, color string }

// The indexes of turnData.Parts that are no input: what cache_edits delete, the free space
// and the auto-compact buffer.
const (
	partDeleted = 10
	partFree    = 11
	partBuffer  = 12
)

// parts lists the parts of turnData.Parts in order: the input's, then the rest of the window.
func parts() []part {
	return []part{
		{"system prompt", "#6a51a3"}, {"tool definitions", "#9e9ac8"}, {"base context", "#bcbddc"},
		{"user text", "#2171b5"}, {"assistant text", "#6baed6"}, {"thinking", "#c6dbef"},
		{"tool_use", "#238b45"}, {"tool_result", "#74c476"}, {"media", "#fd8d3c"},
		{"framing and other", "#bdbdbd"}, {"deleted by cache_edits", "#fdd0a2"},
		{"free space", "#f7f7f7"}, {"auto-compact buffer", "#fee0d2"},
	}
}

// The timeline's geometry, in SVG user units: the plot's left edge and width, and the top
// and height of its charts (tokens, prompt cache, cost) and of the rows of marks.
const (
	plotLeft   = 176
	plotWidth  = 1200
	plotRight  = 24
	tokensTop  = 28
	tokensH    = 300
	cacheTop   = tokensTop + tokensH + 40
	cacheH     = 110
	costTop    = cacheTop + cacheH + 40
	costH      = 80
	marksTop   = costTop + costH + 40
	markRowH   = 14
	timelineW  = plotLeft + plotWidth + plotRight
	axisLabelW = 70
)

// timeline is the page's inline SVG, ready for the template: every path is drawn at most one
// point per column of the plot, however many turns there are.
type timeline struct {
	Width, Height int
	Charts        []chart
	Marks         []markPath
	// Turns is the number of turns; the script maps a click's x to a turn with it.
	Turns    int
	Left     int
	Plot     int
	MarksTop int
}

// chart is one chart of the timeline: its frame, its areas, its lines and its axis.
type chart struct {
	ID, Title        string
	Top, Height      int
	Areas, Lines     []shape
	Ticks            []tick
	TurnTicks        []tick
	Bottom, AxisLeft int
	Right            int
}

// shape is one path with its colour and its legend.
type shape struct {
	Name, Color, D string
	Dash           bool
}

// tick is an axis label.
type tick struct {
	Label string
	X, Y  float64
}

// markPath is one row of marks: a tick at each marked turn.
type markPath struct {
	Name, Color, D string
	Y, Count       int
}

// drawTimeline draws the turns.
func drawTimeline(d *pageData) timeline {
	n := len(d.Turns)
	cols := min(n, plotWidth)
	tl := timeline{Width: timelineW, Turns: n, Left: plotLeft, Plot: plotWidth}
	if n == 0 {
		tl.Height = tokensTop + tokensH + 40
		tl.Charts = []chart{{ID: "tokens", Title: "no turns", Top: tokensTop, Height: tokensH, Bottom: tokensTop + tokensH, AxisLeft: plotLeft}}
		return tl
	}
	// Each column shows the turn of its range that sent the most.
	rep := make([]int, cols)
	for j := range cols {
		lo, hi := j*n/cols, max((j+1)*n/cols, j*n/cols+1)
		best := lo
		for i := lo; i < hi; i++ {
			if d.Turns[i].In > d.Turns[best].In {
				best = i
			}
		}
		rep[j] = best
	}
	x := func(j int) float64 { return plotLeft + (float64(j)+0.5)*plotWidth/float64(cols) }
	turnX := func(i int) float64 { return plotLeft + (float64(i)+0.5)*plotWidth/float64(n) }

	// Tokens: the input's parts stacked, then the free space and the buffer up to the window.
	// The scale is the window's (or the largest request's): the real figures of a session
	// that ran at a larger window than the policy's are cut at the top.
	top := d.Window
	for _, t := range d.Turns {
		top = max(top, t.In, t.Pressure)
	}
	top = max(top, 1)
	tokens := chart{ID: "tokens", Title: "request tokens by part; levels and the pressure figure as lines", Top: tokensTop, Height: tokensH}
	ps := parts()
	stack := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, partFree, partBuffer}
	below := make([]int, cols)
	for _, k := range stack {
		above := make([]int, cols)
		for j, i := range rep {
			above[j] = below[j] + d.Turns[i].Parts[k]
		}
		tokens.Areas = append(tokens.Areas, shape{Name: ps[k].name, Color: ps[k].color, D: area(cols, x, yScale(tokensTop, tokensH, top), below, above)})
		below = above
	}
	y := yScale(tokensTop, tokensH, top)
	for k, name := range []string{"warning", "auto-compact threshold", "blocking limit"} {
		if v := d.Levels[k]; v > 0 {
			tokens.Lines = append(tokens.Lines, shape{Name: fmt.Sprintf("%s %d", name, v), Color: []string{"#fd8d3c", "#d94801", "#a50f15"}[k],
				D: fmt.Sprintf("M%d %.1fH%d", plotLeft, y(v), plotLeft+plotWidth), Dash: true})
		}
	}
	tokens.Lines = append(tokens.Lines, shape{Name: "pressure figure", Color: "#000000",
		D: line(cols, x, y, func(j int) int { return d.Turns[rep[j]].Pressure })})
	if hasReal(d) {
		tokens.Lines = append(tokens.Lines, shape{Name: "real input (provider's usage)", Color: "#e31a1c", Dash: true,
			D: realLine(rep, x, y, func(t *turnData) int { return min(top, realInput(t.Real)) }, d)})
	}
	tokens.Ticks = yTicks(tokensTop, tokensH, top, func(v int) string { return fmt.Sprint(v) })

	// The prompt cache: reads, writes and uncached input stacked.
	ctop := 1
	for _, t := range d.Turns {
		ctop = max(ctop, t.Use[0]+t.Use[1]+t.Use[2]+t.Use[3])
		if t.Real != nil {
			ctop = max(ctop, t.Real[3])
		}
	}
	cache := chart{ID: "cache", Title: "prompt cache: read, written, uncached", Top: cacheTop, Height: cacheH}
	cy := yScale(cacheTop, cacheH, ctop)
	below = make([]int, cols)
	for _, s := range []struct {
		name, color string
		v           func(t *turnData) int
	}{
		{"cache read", "#9ecae1", func(t *turnData) int { return t.Use[3] }},
		{"cache write", "#fdae6b", func(t *turnData) int { return t.Use[1] + t.Use[2] }},
		{"uncached", "#d9d9d9", func(t *turnData) int { return t.Use[0] }},
	} {
		above := make([]int, cols)
		for j, i := range rep {
			above[j] = below[j] + s.v(&d.Turns[i])
		}
		cache.Areas = append(cache.Areas, shape{Name: s.name, Color: s.color, D: area(cols, x, cy, below, above)})
		below = above
	}
	if hasReal(d) {
		cache.Lines = append(cache.Lines, shape{Name: "real cache read", Color: "#e31a1c", Dash: true,
			D: realLine(rep, x, cy, func(t *turnData) int { return t.Real[3] }, d)})
	}
	cache.Ticks = yTicks(cacheTop, cacheH, ctop, func(v int) string { return fmt.Sprint(v) })

	// Cost per turn, in micro-dollars on the axis's scale.
	cmax := 1e-9
	for _, t := range d.Turns {
		cmax = max(cmax, t.Cost, t.RealCost)
	}
	const micro = 1e6
	costTopV := int(cmax*micro) + 1
	cost := chart{ID: "cost", Title: "cost per turn (USD)", Top: costTop, Height: costH}
	ky := yScale(costTop, costH, costTopV)
	zero := make([]int, cols)
	costs := make([]int, cols)
	for j, i := range rep {
		costs[j] = int(d.Turns[i].Cost * micro)
	}
	cost.Areas = []shape{{Name: "simulated cost", Color: "#a1d99b", D: area(cols, x, ky, zero, costs)}}
	if hasReal(d) {
		cost.Lines = append(cost.Lines, shape{Name: "real cost", Color: "#e31a1c", Dash: true,
			D: realLine(rep, x, ky, func(t *turnData) int { return int(t.RealCost * micro) }, d)})
	}
	cost.Ticks = yTicks(costTop, costH, costTopV, func(v int) string { return fmt.Sprintf("$%.4f", float64(v)/micro) })

	step := max(1, (n+9)/10)
	for _, c := range []*chart{&tokens, &cache, &cost} {
		c.Bottom, c.AxisLeft, c.Right = c.Top+c.Height, plotLeft, plotLeft+plotWidth
		for i := 0; i < n; i += step {
			c.TurnTicks = append(c.TurnTicks, tick{Label: fmt.Sprint(d.Turns[i].N), X: turnX(i), Y: float64(c.Bottom + 14)})
		}
	}
	tl.Charts = []chart{tokens, cache, cost}

	// The marks: a row for each kind of decision the session has.
	rowY := marksTop
	for _, row := range markRows() {
		var b strings.Builder
		count, last := 0, -1.0
		for i := range d.Turns {
			for _, m := range d.Turns[i].Marks {
				if m != row.name {
					continue
				}
				count++
				if px := turnX(i); px-last >= 1 || last < 0 { // one tick a pixel column
					fmt.Fprintf(&b, "M%.1f %dv%d", px, rowY+2, markRowH-4)
					last = px
				}
			}
		}
		if count > 0 {
			tl.Marks = append(tl.Marks, markPath{Name: row.name, Color: row.color, D: b.String(), Y: rowY, Count: count})
			rowY += markRowH
		}
	}
	tl.MarksTop = marksTop
	tl.Height = rowY + 24
	return tl
}

// yScale maps a value of [0, top] to the y of a chart.
func yScale(chartTop, height, top int) func(int) float64 {
	return func(v int) float64 { return float64(chartTop) + float64(height)*(1-float64(v)/float64(top)) }
}

// area is the closed path between below and above over the columns.
func area(cols int, x func(int) float64, y func(int) float64, below, above []int) string {
	var b strings.Builder
	for j := range cols {
		sep := "L"
		if j == 0 {
			sep = "M"
		}
		fmt.Fprintf(&b, "%s%.1f %.1f", sep, x(j), y(above[j]))
	}
	for j := cols - 1; j >= 0; j-- {
		fmt.Fprintf(&b, "L%.1f %.1f", x(j), y(below[j]))
	}
	b.WriteString("Z")
	return b.String()
}

// line is the path through the columns' values.
func line(cols int, x func(int) float64, y func(int) float64, v func(int) int) string {
	var b strings.Builder
	for j := range cols {
		sep := "L"
		if j == 0 {
			sep = "M"
		}
		fmt.Fprintf(&b, "%s%.1f %.1f", sep, x(j), y(v(j)))
	}
	return b.String()
}

// realLine is the path through the columns whose turn carries the provider's usage, broken
// where one does not.
func realLine(rep []int, x func(int) float64, y func(int) float64, v func(*turnData) int, d *pageData) string {
	var b strings.Builder
	pen := false
	for j, i := range rep {
		t := &d.Turns[i]
		if t.Real == nil {
			pen = false
			continue
		}
		sep := "L"
		if !pen {
			sep = "M"
		}
		fmt.Fprintf(&b, "%s%.1f %.1f", sep, x(j), y(v(t)))
		pen = true
	}
	return b.String()
}

// yTicks labels a chart's value axis at five steps.
func yTicks(chartTop, height, top int, label func(int) string) []tick {
	y := yScale(chartTop, height, top)
	var ts []tick
	for k := 0; k <= 4; k++ {
		v := top * k / 4
		ts = append(ts, tick{Label: label(v), X: plotLeft - 6, Y: y(v) + 4})
	}
	return ts
}

// hasReal reports whether any turn carries the provider's usage.
func hasReal(d *pageData) bool {
	for i := range d.Turns {
		if d.Turns[i].Real != nil {
			return true
		}
	}
	return false
}

// realInput is the input of a provider's usage: uncached, writes and reads.
func realInput(u *[5]int) int { return u[0] + u[1] + u[2] + u[3] }
