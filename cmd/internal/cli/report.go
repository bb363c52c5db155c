package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentctx/agentctx/htmlreport"
)

// report writes a session, replayed under a policy, as one self-contained HTML page.
func (a *app) report(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		out     string
		maxText int
		pf      policyFlags
	)
	pf.register(fs, a)
	fs.StringVar(&out, "o", "", "write the page to this `file` (required; - for standard output)")
	fs.IntVar(&maxText, "max-text", htmlreport.DefaultMaxText, "the longest text block the page holds whole, in `characters`; a longer one keeps its head and tail (-1: every text whole)")
	files, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return helpRequest{flagUsage(fs)}
	}
	if err != nil {
		return UsageError{flagMessage(err)}
	}
	if len(files) != 1 {
		return UsageError{fmt.Sprintf("report needs exactly one session FILE, got %d", len(files))}
	}
	if out == "" {
		return UsageError{"report needs -o FILE, the page to write (- for standard output)"}
	}
	if maxText == 0 {
		return UsageError{"--max-text must not be 0 (-1 keeps every text whole)"}
	}
	rp, err := pf.replay(ctx, a, fs, files[0], stderr)
	if err != nil {
		return err
	}
	defer rp.close()
	page, err := htmlreport.Build(ctx, rp.records, rp.cfg, htmlreport.Options{Simulate: rp.opts, Title: rp.addr.String(), MaxText: maxText})
	if err != nil {
		return fmt.Errorf("%s: %w", rp.addr, err)
	}
	if out == "-" {
		_, err := page.WriteTo(stdout)
		return err
	}
	// The page is written beside its place and renamed into it, so that a page open in a
	// browser is never half written.
	tmp, err := os.CreateTemp(filepath.Dir(out), ".agentctx-report-*.html")
	if err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	defer os.Remove(tmp.Name())
	n, err := page.WriteTo(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	fmt.Fprintf(stderr, "%s: %d turns, %d bytes\n", out, len(page.Result.Turns), n)
	return nil
}
