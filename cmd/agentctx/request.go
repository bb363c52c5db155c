package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/agentctx/agentctx"
)

// damageNotes says on w what the session's damage did to the request: the lines skipped and
// fields dropped, the broken parent links and the repeated records left out.
func damageNotes(w io.Writer, rep *agentctx.Report) {
	for _, d := range rep.Damage {
		what := "skipped"
		if d.Field != "" {
			what = "the record is kept without it"
		}
		fmt.Fprintf(w, "agentctx: %v (%s)\n", d, what)
	}
	for _, p := range rep.ChainProblems {
		fmt.Fprintf(w, "agentctx: %s\n", p)
	}
	for _, r := range rep.Replays {
		fmt.Fprintf(w, "agentctx: %s\n", r)
	}
}

// request prints the request body for the session's next turn.
func request(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var indent *bool
	s, err := open(ctx, "request", args, func(fs *flag.FlagSet) {
		indent = fs.Bool("indent", false, "indent the JSON for reading (the bytes sent are the compact form)")
	})
	if err != nil {
		return err
	}
	defer s.close()
	s.clockNote(stderr)
	res, err := s.prepare(ctx)
	damageNotes(stderr, &res.Report)
	if err != nil {
		return err
	}
	var body []byte
	if *indent {
		body, err = res.Request.Indent()
	} else {
		body, err = res.Request.MarshalJSON()
		body = append(body, '\n')
	}
	if err != nil {
		return err
	}
	_, err = stdout.Write(body)
	return err
}
