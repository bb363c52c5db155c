package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressLine shows how far a simulation is on a terminal, "simulate: turn 120 of 450",
// rewritten in place at most every progressEvery and erased when the simulation ends. It
// uses the standard library only: a progress bar module brought net/http and crypto/tls into
// the build of agentctx, which is meant to compile little more than the library.
type progressLine struct {
	w     io.Writer
	last  time.Time // when the line was last written
	width int       // the line's length on screen, for erasing it
}

// progressEvery is how often the progress line is rewritten at most.
const progressEvery = 100 * time.Millisecond

// newProgress returns a progress line on w when w is a terminal (a character device), else
// nil: a file or a pipe gets no progress, so the command's output does not depend on it.
func newProgress(w io.Writer) *progressLine {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progressLine{w: w}
}

// set shows done turns of total; [SimOptions.Progress] calls it after each turn.
func (p *progressLine) set(done, total int) {
	now := time.Now()
	if done < total && now.Sub(p.last) < progressEvery {
		return
	}
	p.last = now
	s := fmt.Sprintf("simulate: turn %d of %d", done, total)
	fmt.Fprintf(p.w, "\r%s%s", s, strings.Repeat(" ", max(0, p.width-len(s))))
	p.width = max(p.width, len(s))
}

// clear erases the line, if it was written.
func (p *progressLine) clear() {
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}
