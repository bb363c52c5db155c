package main

import (
	"context"
	"flag"
	"io"
)

// request prints the request body for the session's next turn.
func request(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("request", flag.ContinueOnError)
	var o options
	o.register(fs)
	indent := fs.Bool("indent", false, "indent the JSON for reading (the bytes sent are the compact form)")
	path, err := parse(fs, args)
	if err != nil {
		return err
	}
	s, err := load(path, o)
	if err != nil {
		return err
	}
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
