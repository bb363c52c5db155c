package main

import (
	"context"
	"flag"
	"io"
)

// request prints the request body for the session's next turn.
func request(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var indent *bool
	s, err := open("request", args, func(fs *flag.FlagSet) {
		indent = fs.Bool("indent", false, "indent the JSON for reading (the bytes sent are the compact form)")
	})
	if err != nil {
		return err
	}
	s.clockNote(stderr)
	res, err := s.prepare(ctx)
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
