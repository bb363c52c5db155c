package htmlreport

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"

	"github.com/agentctx/agentctx/simulate"
)

// The page's template, style and script, written into every page.
var (
	//go:embed page.tmpl
	pageTemplate string
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// view is what the template reads.
type view struct {
	Data     *pageData
	Timeline timeline
	Parts    []legendItem
	Totals   []totalRow
	Real     bool
	CSS      template.CSS
	JS       template.JS
}

// legendItem is one swatch of the legend.
type legendItem struct{ Name, Color string }

// totalRow is one row of the totals: the policy's figure and the real one.
type totalRow struct{ Name, Policy, Real string }

// render writes p's page to w.
func render(w io.Writer, p *Page) error {
	t, err := template.New("page").Parse(pageTemplate)
	if err != nil {
		return fmt.Errorf("htmlreport: the page template: %w", err)
	}
	v := view{Data: &p.data, Timeline: drawTimeline(&p.data), Totals: totals(p), Real: p.Result.Real != nil,
		CSS: template.CSS(pageCSS), JS: template.JS(pageJS)}
	for _, pt := range parts() {
		v.Parts = append(v.Parts, legendItem{pt.name, pt.color})
	}
	return t.Execute(w, v)
}

// totals is the totals table: the policy's figures beside the provider's.
func totals(p *Page) []totalRow {
	sim := p.Result
	real := sim.Real
	row := func(name string, f func(t *simulate.Totals) string) totalRow {
		r := totalRow{Name: name, Policy: f(&sim.Totals), Real: "–"}
		if real != nil {
			r.Real = f(real)
		}
		return r
	}
	rows := []totalRow{
		row("turns", func(t *simulate.Totals) string { return fmt.Sprint(t.Turns) }),
		row("input tokens", func(t *simulate.Totals) string { return fmt.Sprint(t.InputTokens) }),
		row("peak input (turn)", func(t *simulate.Totals) string { return fmt.Sprintf("%d (%d)", t.PeakTokens, t.PeakTurn) }),
		row("cache read", func(t *simulate.Totals) string { return fmt.Sprint(t.CacheRead) }),
		row("cache write", func(t *simulate.Totals) string { return fmt.Sprint(t.CacheWrite5m + t.CacheWrite1h) }),
		row("uncached input", func(t *simulate.Totals) string { return fmt.Sprint(t.Uncached) }),
		row("output tokens", func(t *simulate.Totals) string { return fmt.Sprint(t.Output) }),
		row("cost (USD)", func(t *simulate.Totals) string { return fmt.Sprintf("%.4f", t.Cost) }),
	}
	rows = append(rows, totalRow{Name: "compactions (failed)", Policy: fmt.Sprintf("%d (%d)", sim.Totals.Compactions, sim.Totals.CompactFailures), Real: "–"},
		totalRow{Name: "turns not sendable", Policy: fmt.Sprint(sim.Totals.Failed), Real: "–"})
	return rows
}
