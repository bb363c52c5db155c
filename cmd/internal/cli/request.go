package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
)

// providerNames are the values of --provider, each a [Provider] of agentctx-full.
var providerNames = []string{"anthropic", "openai-chat", "openai-responses"}

// damageNotes says on w what the session's damage did to the request — the lines skipped and
// fields dropped, the broken parent links and the repeated records left out — and what the
// turn did short of the policy (Report.Degradations), as inspect shows them.
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
	for _, d := range rep.Degradations {
		fmt.Fprintf(w, "agentctx: degraded: %s: %s\n", d.Kind, d.Detail)
	}
}

// request prints the request body for the session's next turn.
func (a *app) request(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var indent *bool
	var provider *string
	s, err := a.openWith(ctx, "request", args, func(fs *flag.FlagSet) {
		indent = fs.Bool("indent", false, "indent the JSON for reading (the bytes sent are the compact form)")
		provider = fs.String("provider", "", "print the body for this `API`: anthropic (the Anthropic SDK's parameters, the same JSON as the default), "+
			"openai-chat (Chat Completions) or openai-responses (Responses); the parts OpenAI cannot carry are listed on stderr "+
			"(default: the library's own Messages API body)"+onlyFull(len(a.Providers) == 0))
	}, func(*options) error {
		if *provider == "" {
			return nil
		}
		if !slices.Contains(providerNames, *provider) {
			return UsageError{fmt.Sprintf("--provider %q: want %s", *provider, orList(providerNames))}
		}
		if a.Providers[*provider] == nil {
			return needsFull{"--provider " + *provider}
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.close()
	a.limitMemory(s.addr.file)
	s.clockNote(stderr)
	for _, u := range s.tr.Unmapped {
		fmt.Fprintf(stderr, "agentctx: %v\n", u)
	}
	res, err := s.prepare(ctx)
	damageNotes(stderr, &res.Report)
	if err != nil {
		return err
	}
	// The command builds one request: the records and the pipeline's memos are not needed
	// any more, and the body is streamed from the request, never held whole.
	s.release()
	if *provider == "" && !*indent {
		return writeBody(stdout, res.Request)
	}
	var body []byte
	if *provider == "" {
		body, err = res.Request.Indent()
	} else {
		body, err = providerBody(stderr, *provider, a.Providers[*provider], res.Request, *indent)
	}
	if err != nil {
		return err
	}
	_, err = stdout.Write(body)
	return err
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// writeBody writes req's compact body and a newline to w, in pieces.
func writeBody(w io.Writer, req provider.Request) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := req.WriteTo(bw); err != nil {
		return err
	}
	if err := bw.WriteByte('\n'); err != nil {
		return err
	}
	return bw.Flush()
}

// providerBody converts req with the provider's adapter and encodes the SDK parameters, as the
// SDK sends them. What the body needs (the anthropic-beta header values) or leaves out (what
// an OpenAI body cannot carry) goes to stderr.
func providerBody(stderr io.Writer, name string, provider Provider, req provider.Request, indent bool) ([]byte, error) {
	params, notes, err := provider(req)
	for _, n := range notes {
		fmt.Fprintf(stderr, "agentctx: %s\n", n)
	}
	if err != nil {
		return nil, fmt.Errorf("--provider %s: %w", name, err)
	}
	body, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("--provider %s: %w", name, err)
	}
	if indent {
		var b bytes.Buffer
		if err := json.Indent(&b, body, "", "  "); err != nil {
			return nil, err
		}
		body = b.Bytes()
	}
	return append(body, '\n'), nil
}

// limitMemory, when the process is the agentctx command (not a test calling its commands),
// gives it the soft memory limit memoryLimit computes for the session file at path.
func (a *app) limitMemory(path string) {
	if n, ok := memoryLimit(path); ok && a.process {
		debug.SetMemoryLimit(n)
	}
}

// memoryLimit is the soft memory limit of a process that builds its one request from the
// session file at path: false when GOMEMLIMIT sets one, or path is no regular file (a
// database session, a pipe). With it, the collector works harder as the heap nears the limit
// instead of letting the heap grow to twice its live size first. The records and what
// Prepare builds from them hold up to about five times the file (a generated 5,000-turn
// session), so the limit leaves room above that and the collector does not run all the time.
func memoryLimit(path string) (int64, bool) {
	if path == "" || os.Getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return memoryFloor + memoryPerByte*fi.Size(), true
}

// The one-shot memory limit: memoryFloor bytes (the binary and the runtime) plus
// memoryPerByte bytes per byte of the session file.
const (
	memoryFloor   = 16 << 20
	memoryPerByte = 6
)
