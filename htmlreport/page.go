package htmlreport

import (
	"cmp"
	"context"
	"io"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
)

// DefaultMaxText is the longest text block the page shows whole, in characters.
const DefaultMaxText = 4000

// Options configures [Build]. The zero value is ready to use.
type Options struct {
	// Simulate configures the replay (prices, system prompt, tools, progress). Its Observe,
	// when set, is called after the page's own.
	Simulate simulate.Options
	// Title names the session on the page: its file or address.
	Title string
	// MaxText is the longest text block the page holds whole, in characters; a longer one
	// keeps its first three quarters and its last quarter of MaxText around a note of what was
	// left out. 0 means [DefaultMaxText]; a negative value keeps every text whole.
	MaxText int
	// Generated is the time the page names as its making; zero leaves it out, so that the
	// same session gives the same bytes.
	Generated time.Time
}

// Page is a session replayed for the page: the simulation and what each turn's request held.
type Page struct {
	// Result is the simulation the page draws.
	Result *simulate.Result
	data   pageData
}

// Build replays records (a session's records in file order) under cfg with [simulate.Run]
// and keeps what the page shows of each turn. Its errors are Run's.
func Build(ctx context.Context, records []transcript.Record, cfg agentctx.Config, opts Options) (*Page, error) {
	c := newCollector(opts.MaxText)
	so := opts.Simulate
	next := so.Observe
	so.Observe = func(s *simulate.Step) {
		c.observe(s)
		if next != nil {
			next(s)
		}
	}
	sim, err := simulate.Run(ctx, records, cfg, so)
	if err != nil {
		return nil, err
	}
	p := &Page{Result: sim}
	p.data = c.finish(sim, cmp.Or(opts.Title, "session"), opts.Generated)
	return p, nil
}

// WriteTo writes the page's HTML to w.
func (p *Page) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	err := render(cw, p)
	return cw.n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
