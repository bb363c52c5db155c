package testkit

import "github.com/agentctx/agentctx/transcript"

// JSONL returns records as the lines of a session file: each as [transcript.Record.MarshalLine]
// encodes it (the bytes an Appender writes), followed by a newline.
func JSONL(records []transcript.Record) ([]byte, error) {
	var out []byte
	for _, r := range records {
		line, err := r.MarshalLine()
		if err != nil {
			return nil, err
		}
		out = append(append(out, line...), '\n')
	}
	return out, nil
}
