// Command footprint builds the next turn's request from a session file the way `agentctx
// request` does (read, Prepare, MarshalJSON, write), linking only the root package, so that
// the library's own memory can be measured apart from what the CLI links (the provider SDKs,
// pgx). With -phases it reports on stderr, after each step, the process's peak and current
// resident memory and the Go heap. With -stream it writes the body as the CLI does
// ([provider.Request.WriteTo]). With -tail it reads a long file from its active tail
// ([transcript.ReadOptions.TailMinBytes]), without counting the lines before its cut
// ([transcript.ReadOptions.SkipLineCount]), as the CLI's request does.
//
// Usage:
//
//	go build -o /tmp/footprint ./internal/testkit/cmd/footprint
//	/usr/bin/time -f '%M KB' /tmp/footprint -now 2026-01-03T00:00:00Z -window 40000000 session.jsonl > out
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}

// run parses args, builds the request for the session file they name and writes it on stdout.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("footprint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "the model `name` (default: the session's last known model, else claude-sonnet-4-5, as agentctx request chooses)")
	window := fs.Int("window", 0, "the context window, `N` tokens (default: the model's)")
	nowFlag := fs.String("now", "", "the `time` of the next turn, RFC 3339 (default: the wall clock)")
	phases := fs.Bool("phases", false, "report memory after each step on stderr")
	stream := fs.Bool("stream", false, "write the body with Request.WriteTo, as agentctx request does, instead of MarshalJSON")
	tail := fs.Bool("tail", false, "read a file over transcript.DefaultTailMinBytes from its active tail, as agentctx request does")
	memprofile := fs.String("memprofile", "", "write a heap profile to `FILE` after Prepare, with the pipeline still alive")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one session FILE, got %d arguments", fs.NArg())
	}
	now := time.Now().UTC()
	if *nowFlag != "" {
		var err error
		if now, err = time.Parse(time.RFC3339Nano, *nowFlag); err != nil {
			return fmt.Errorf("-now: %w", err)
		}
	}
	if *memprofile != "" {
		// Every allocation sampled: the profile then adds up to what the steps allocated.
		runtime.MemProfileRate = 1
	}
	report := func(string) {}
	if *phases {
		report = func(step string) { fmt.Fprintf(stderr, "%-8s %s\n", step, usage()) }
	}
	report("start")

	path := fs.Arg(0)
	tr, err := read(path, *tail)
	if err != nil {
		return err
	}
	report("read")
	if *model == "" {
		*model = sessionModel(tr)
	}
	p, err := agentctx.New(agentctx.Config{
		Model:         *model,
		ContextWindow: *window,
		Budget:        agentctx.BudgetConfig{Store: agentctx.FileStore{Root: filepath.Join(os.TempDir(), "agentctx-tool-results", sessionID(tr, path))}},
		Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{},
			Rehydrate: agentctx.RehydrateConfig{DisableFiles: true}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		return err
	}
	res, err := p.Prepare(context.Background(), agentctx.Input{Records: tr.Records, System: tr.System})
	if err != nil {
		return err
	}
	report("prepare")
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile); err != nil {
			return err
		}
		runtime.KeepAlive(p)
	}
	if *stream {
		w := bufio.NewWriterSize(stdout, 64<<10)
		if _, err := res.Request.WriteTo(w); err != nil {
			return err
		}
		if err := errors.Join(w.WriteByte('\n'), w.Flush()); err != nil {
			return err
		}
		report("write")
		return nil
	}
	body, err := res.Request.MarshalJSON()
	if err != nil {
		return err
	}
	report("marshal")
	if _, err := stdout.Write(append(body, '\n')); err != nil {
		return err
	}
	report("write")
	return nil
}

// read reads the transcript at path; with tail, from its active tail when it is long.
func read(path string, tail bool) (*transcript.File, error) {
	if tail {
		return transcript.ReadFile(path, transcript.ReadOptions{TailMinBytes: transcript.DefaultTailMinBytes, SkipLineCount: true})
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return transcript.Read(bufio.NewReaderSize(f, 64<<10), path, transcript.ReadOptions{})
}

// sessionModel is the model of the session's last assistant record that the model table
// knows, else the CLI's default.
func sessionModel(tr *transcript.File) string {
	models := agentctx.DefaultModels()
	for i := len(tr.Records) - 1; i >= 0; i-- {
		if m := tr.Records[i].Message; tr.Records[i].Type == transcript.TypeAssistant && m != nil {
			if _, ok := models.Lookup(m.Model); ok {
				return m.Model
			}
		}
	}
	return "claude-sonnet-4-5"
}

// sessionID names the session's tool-result directory as the CLI does: its first session
// id, else the file's name.
func sessionID(tr *transcript.File, path string) string {
	for _, r := range tr.Records {
		if r.SessionID != "" {
			return filepath.Base(r.SessionID)
		}
	}
	return filepath.Base(path)
}

// usage is the process's peak and current resident memory (from /proc/self/status, where
// the system has one) and the Go heap's live and total bytes.
func usage() string {
	var b strings.Builder
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(status)) {
			if k, v, ok := strings.Cut(line, ":"); ok && (k == "VmHWM" || k == "VmRSS" || k == "RssAnon" || k == "RssFile") {
				fmt.Fprintf(&b, "%s %s  ", k, strings.TrimSpace(v))
			}
		}
	}
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/total:bytes"},
	}
	metrics.Read(s)
	fmt.Fprintf(&b, "live %.1f MB  objects %.1f MB  runtime total %.1f MB",
		mb(s[0].Value.Uint64()), mb(s[1].Value.Uint64()), mb(s[2].Value.Uint64()))
	return b.String()
}

func mb(n uint64) float64 { return float64(n) / 1e6 }

// writeHeapProfile collects garbage and writes the heap profile to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.Lookup("heap").WriteTo(f, 0), f.Close())
}
