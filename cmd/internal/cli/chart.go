package cli

import (
	"fmt"
	"html"
	"strings"

	"github.com/agentctx/agentctx"
	simulation "github.com/agentctx/agentctx/simulate"
)

// The chart's geometry, in SVG user units.
const (
	chartW, chartH                       = 960, 400
	padLeft, padRight, padTop, padBottom = 72, 24, 40, 48
)

// chart draws a simulation as one self-contained SVG file (no scripts, fonts or links): the
// input tokens of each turn's request as a line over a shaded area for the part read from
// the prompt cache, the auto-compact threshold as a dashed line, each compaction as a
// vertical marker, and each request that could not be sent as a cross.
func chart(sim *simulation.Result, path string) []byte {
	top := sim.Threshold
	for _, t := range sim.Turns {
		top = max(top, t.InputTokens)
	}
	top = max(1, top+top/10)
	n := len(sim.Turns)
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBottom)
	x := func(i int) float64 {
		if n <= 1 {
			return padLeft + plotW/2
		}
		return padLeft + plotW*float64(i)/float64(n-1)
	}
	y := func(v int) float64 { return padTop + plotH*(1-float64(v)/float64(top)) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	title := fmt.Sprintf("agentctx simulate %s: %s, window %d", path, sim.Model, sim.ContextWindow)
	fmt.Fprintf(&b, "<title>%s</title>\n", xmlText(title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="14">%s</text>`+"\n", padLeft, xmlText(title))

	// Axes and ticks: five on the tokens axis, up to ten on the turns axis.
	b.WriteString(`<g id="axes" stroke="#888888" fill="#444444">` + "\n")
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", padLeft, y(0), chartW-padRight, y(0))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f"/>`+"\n", padLeft, padTop, padLeft, y(0))
	for k := 0; k <= 5; k++ {
		v := top * k / 5
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" stroke="none">%d</text>`+"\n", padLeft-6, y(v)+4, v)
	}
	step := max(1, (n+9)/10)
	for i := 0; i < n; i += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" stroke="none">%d</text>`+"\n", x(i), chartH-padBottom+18, sim.Turns[i].Turn)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" stroke="none">turn</text>`+"\n", padLeft+int(plotW)/2, chartH-8)
	b.WriteString("</g>\n")

	if n > 0 {
		// The cached share: an area from the axis up to each turn's cache read.
		var cached, input strings.Builder
		fmt.Fprintf(&cached, "M%.1f %.1f", x(0), y(0))
		for i, t := range sim.Turns {
			fmt.Fprintf(&cached, " L%.1f %.1f", x(i), y(t.CacheRead))
			sep := " L"
			if i == 0 {
				sep = "M"
			}
			fmt.Fprintf(&input, "%s%.1f %.1f", sep, x(i), y(t.InputTokens))
		}
		fmt.Fprintf(&cached, " L%.1f %.1f Z", x(n-1), y(0))
		fmt.Fprintf(&b, `<path id="cached" d="%s" fill="#9ecae1" fill-opacity="0.7" stroke="none"><title>read from the prompt cache</title></path>`+"\n", cached.String())
		fmt.Fprintf(&b, `<path id="input" d="%s" fill="none" stroke="#08519c" stroke-width="2"><title>input tokens per request</title></path>`+"\n", input.String())
	}
	fmt.Fprintf(&b, `<line id="threshold" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d94801" stroke-dasharray="6 4"><title>auto-compact threshold %d</title></line>`+"\n",
		padLeft, y(sim.Threshold), chartW-padRight, y(sim.Threshold), sim.Threshold)
	fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#d94801">threshold %d</text>`+"\n", chartW-padRight, y(sim.Threshold)-4, sim.Threshold)

	b.WriteString(`<g id="compactions" stroke="#54278f" stroke-width="1.5">` + "\n")
	for i, t := range sim.Turns {
		if c := t.Compaction; c != nil && c.Outcome == agentctx.CompactCompacted {
			fmt.Fprintf(&b, `<line class="compaction" x1="%.1f" y1="%d" x2="%.1f" y2="%.1f"><title>turn %d: compacted %d → %d tokens</title></line>`+"\n",
				x(i), padTop, x(i), y(0), t.Turn, c.PreTokens, c.PostTokens)
		}
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g id="failed" stroke="#cb181d" stroke-width="2">` + "\n")
	for i, t := range sim.Turns {
		if t.Error != "" {
			cx, cy := x(i), y(t.InputTokens)
			fmt.Fprintf(&b, `<path class="failed" d="M%.1f %.1f l8 8 m0 -8 l-8 8"><title>turn %d not sent: %s</title></path>`+"\n",
				cx-4, cy-4, t.Turn, xmlText(t.Error))
		}
	}
	b.WriteString("</g>\n")

	// Legend.
	lx := padLeft + 12
	fmt.Fprintf(&b, `<g id="legend"><rect x="%d" y="%d" width="12" height="12" fill="#9ecae1"/><text x="%d" y="%d">cache read</text>`, lx, padTop+6, lx+18, padTop+16)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#08519c" stroke-width="2"/><text x="%d" y="%d">input tokens</text>`, lx+110, padTop+12, lx+130, padTop+12, lx+136, padTop+16)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#54278f" stroke-width="1.5"/><text x="%d" y="%d">compaction</text></g>`+"\n", lx+240, padTop+4, lx+240, padTop+18, lx+248, padTop+16)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// xmlText escapes s for an SVG text node or attribute: markup escaped, and runes XML 1.0
// does not allow (control characters, invalid UTF-8, from a session's content) replaced by
// U+FFFD, so that the chart stays well-formed whatever the session holds.
func xmlText(s string) string {
	return html.EscapeString(strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD")))
}
