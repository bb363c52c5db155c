package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// options are the flags inspect and request share.
type options struct {
	model     string
	window    int
	maxTokens int
	now       string
	tools     string
	store     string
	files     bool
	// summarizer is the compaction's summarizer; nil: the extractive one.
	summarizer summarize.Summarizer
	// tail reads a large compacted session file from its active tail (request and inspect:
	// see readSession), and skipping the count of the lines before its cut (request, which
	// names no line of a clean tail: transcript.ReadOptions.SkipLineCount).
	tail transcript.ReadOptions
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.model, "model", "", "the model `name` (default: the session's last model that the model table knows, else "+defaultModel+")")
	fs.IntVar(&o.window, "window", 0, "the context window, `N` tokens (default: the model's)")
	fs.IntVar(&o.maxTokens, "max-tokens", 0, "the request's max_tokens, `N` tokens before clamping to the window (default: the model's maximum output)")
	fs.StringVar(&o.now, "now", "", "the `time` of the next turn, RFC 3339, e.g. 2026-11-30T12:00:00Z (default: the wall clock)")
	fs.StringVar(&o.tools, "tools", "", "a JSON `file` holding the tool definitions, an array of tool objects (default: none; the tools the history uses are declared unavailable)")
	fs.StringVar(&o.store, "store", "", "the `directory` for the tool results the budget replaces (default: the database of a postgres:// session, else a temporary directory per session)")
	fs.BoolVar(&o.files, "rehydrate-files", false, "after a compaction, re-read from disk the files the session worked with, under its working directory (off by default: the paths come from the file)")
}

// open parses a command's flags (the shared ones, plus those extra registers) and loads the
// one session FILE it names. Flags may come before or after FILE. --help returns a
// [helpRequest] holding the command's usage.
func (a *app) open(ctx context.Context, name string, args []string, extra func(*flag.FlagSet)) (*session, error) {
	return a.openWith(ctx, name, args, extra, nil)
}

// openWith is [app.open] with a step between parsing and loading: prep may complete the options
// from the command's own flags (the summarizer), and its error is the command's.
func (a *app) openWith(ctx context.Context, name string, args []string, extra func(*flag.FlagSet), prep func(*options) error) (*session, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o options
	o.register(fs)
	extra(fs)
	files, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, helpRequest{flagUsage(fs)}
	}
	if err != nil {
		return nil, UsageError{flagMessage(err)}
	}
	if len(files) != 1 {
		return nil, UsageError{fmt.Sprintf("%s needs exactly one session FILE, got %d", name, len(files))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["window"] && o.window <= 0 {
		return nil, UsageError{fmt.Sprintf("--window must be positive, got %d", o.window)}
	}
	if set["max-tokens"] && o.maxTokens <= 0 {
		return nil, UsageError{fmt.Sprintf("--max-tokens must be positive, got %d", o.maxTokens)}
	}
	if _, ok := agentctx.DefaultModels().Lookup(o.model); o.model != "" && !ok && o.window == 0 {
		return nil, UsageError{fmt.Sprintf("--model %q is not in the model table, so its context window is unknown: pass --window", o.model)}
	}
	if prep != nil {
		if err := prep(&o); err != nil {
			return nil, err
		}
	}
	if name == "request" || name == "inspect" {
		o.tail = transcript.ReadOptions{TailMinBytes: transcript.DefaultTailMinBytes, SkipLineCount: name == "request"}
	}
	return a.load(ctx, files[0], o)
}

// parse parses args with fs, letting flags follow the positional arguments too ("inspect
// FILE --window 40000"); everything after "--" is positional. It returns the positional
// arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// flagRef matches a flag as the flag package names it in its errors ("-window").
var flagRef = regexp.MustCompile(`(flag|argument:|defined:) -([^-\s])`)

// flagMessage rewrites a flag package error to name flags as --name, as the usage does.
func flagMessage(err error) string {
	return flagRef.ReplaceAllString(err.Error(), "$1 --$2")
}

// flagUsage lists every flag of fs with its description, as agentctx COMMAND --help shows them.
func flagUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		arg, desc := flag.UnquoteUsage(f)
		if isBool(f) {
			fmt.Fprintf(&b, "  --%s\n", f.Name)
		} else {
			fmt.Fprintf(&b, "  --%s %s\n", f.Name, arg)
		}
		b.WriteString(wrap(desc, "        ", 92))
	})
	return b.String()
}

// wrap breaks text into lines of at most width columns (a longer word stays whole), each
// starting with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	n := 0
	for w := range strings.FieldsSeq(text) {
		if n > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		}
		if n == 0 {
			b.WriteString(indent)
			n = len(indent)
		} else {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	b.WriteByte('\n')
	return b.String()
}

// isBool reports whether f is a boolean flag (given without a value).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// session is a read transcript and the pipeline configured for it.
type session struct {
	addr     address
	db       Store // the session's database, or nil for a file
	tr       *transcript.File
	model    string
	modelSrc string // "flag", "session" or "default"
	pipeline *agentctx.Pipeline
	counter  *agentctx.Counter
	input    agentctx.Input
	now      time.Time
	wallNow  bool // now is the wall clock, not --now
}

// clockNote says on w that the output depends on the wall clock, when it does.
func (s *session) clockNote(w io.Writer) {
	if s.wallNow {
		fmt.Fprintf(w, "agentctx: the time of the next turn is the wall clock (%s): pass --now for repeatable output\n", s.now.Format(time.RFC3339))
	}
}

// defaultModel is used when neither --model nor the session names a known model.
const defaultModel = "claude-sonnet-4-5"

func (a *app) load(ctx context.Context, arg string, o options) (*session, error) {
	addr, err := parseAddress(arg, true, a.Database)
	if err != nil {
		return nil, err
	}
	s := &session{addr: addr, model: o.model, modelSrc: "flag"}
	s.tr, s.db, err = readAddress(ctx, addr, o.tail)
	if err != nil {
		s.close()
		return nil, err
	}
	s2, err := s.configure(o)
	if err != nil {
		s.close()
	}
	return s2, err
}

// close closes the session's database connections, if any.
func (s *session) close() {
	if s.db != nil {
		s.db.Close()
	}
}

// configure sets up the pipeline for the read transcript.
func (s *session) configure(o options) (*session, error) {
	tr := s.tr
	var err error
	models := agentctx.DefaultModels()
	if s.model == "" {
		s.model, s.modelSrc = defaultModel, "default"
		for i := len(tr.Records) - 1; i >= 0; i-- {
			r := &tr.Records[i]
			if r.Type == transcript.TypeAssistant && r.Message != nil {
				if _, ok := models.Lookup(r.Message.Model); ok {
					s.model, s.modelSrc = r.Message.Model, "session"
					break
				}
			}
		}
	}
	now, wall := time.Now().UTC(), o.now == ""
	if o.now != "" {
		now, err = time.Parse(time.RFC3339Nano, o.now)
		if err != nil {
			return nil, UsageError{fmt.Sprintf("--now: %v", err)}
		}
	}
	tools, err := readTools(o.tools)
	if err != nil {
		return nil, err
	}
	var results agentctx.ResultStore = agentctx.FileStore{Root: o.store}
	switch {
	case o.store == "" && s.db != nil:
		results = s.db
	case o.store == "":
		name := s.addr.file
		results = agentctx.FileStore{Root: filepath.Join(os.TempDir(), "agentctx-tool-results", sessionID(tr, name))}
	}
	var summarizer summarize.Summarizer = summarize.Extractive{}
	if o.summarizer != nil {
		summarizer = o.summarizer
	}
	p, err := agentctx.New(agentctx.Config{
		Model:           s.model,
		ContextWindow:   o.window,
		MaxOutputTokens: o.maxTokens,
		Budget:          agentctx.BudgetConfig{Store: results},
		Compact: agentctx.CompactConfig{Summarizer: summarizer,
			Rehydrate: agentctx.RehydrateConfig{DisableFiles: !o.files}},
		Now: func() time.Time { return now },
	})
	if err != nil {
		return nil, err
	}
	// inspect counts the chain's records with the pipeline's own Counter, so that Prepare
	// finds them in its memo instead of tokenizing the session a second time.
	s.pipeline, s.counter, s.now, s.wallNow = p, p.Counter(), now, wall
	s.input = agentctx.Input{Records: tr.Records, System: tr.System, Tools: tools}
	return s, nil
}

func (s *session) prepare(ctx context.Context) (agentctx.Result, error) {
	return s.pipeline.Prepare(ctx, s.input)
}

// release drops the session's records and pipeline (its memos), for a command that is done
// preparing: what the result refers to stays alive, the rest can be collected. The database
// connection, if any, stays open for close.
func (s *session) release() {
	s.tr, s.input, s.pipeline, s.counter = nil, agentctx.Input{}, nil, nil
}

func sessionID(tr *transcript.File, path string) string {
	for _, r := range tr.Records {
		if r.SessionID != "" {
			return filepath.Base(r.SessionID)
		}
	}
	return filepath.Base(path)
}

// readAddress reads the session addr names: a file, or a session in a PostgreSQL database,
// whose open Store it returns too (the caller closes it); db is nil for a file. A tail with
// TailMinBytes reads a file of so many bytes or more from its active tail (see readSession),
// and a database session from its latest boundary's cut when that boundary carries its
// history.
func readAddress(ctx context.Context, addr address, tail transcript.ReadOptions) (tr *transcript.File, db Store, err error) {
	if addr.url == "" {
		tr, err = readSession(addr.file, tail)
		return tr, nil, err
	}
	if db, err = addr.open(ctx, false); err != nil {
		return nil, nil, err
	}
	// A database session loads from its cut when it can.
	if tr, err = db.Load(ctx, addr.session, tail); err != nil {
		return nil, db, addr.dbError(err)
	}
	return tr, db, nil
}

// readSession reads the session file at path. A file that cannot be opened, a directory, a
// device, a file over maxSessionBytes and a JSON array (a common mistake: one record per line
// is expected) get their own errors, which name path. With tail's TailMinBytes, a regular
// file of so many bytes or more is read from its active tail
// (transcript.ReadOptions.TailMinBytes) with tail's options: the next request is the same, and
// a long session that compacted many times costs what its latest stretch costs.
func readSession(path string, tail transcript.ReadOptions) (*transcript.File, error) {
	f, fi, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a session file (JSONL: one JSON record per line)", path)
	}
	if tail.TailMinBytes > 0 && fi.Mode().IsRegular() && fi.Size() >= tail.TailMinBytes {
		if fi.Size() > maxSessionBytes {
			return nil, fmt.Errorf("cannot read %s: larger than %d MiB", path, maxSessionBytes>>20)
		}
		if startsJSONArray(bufio.NewReader(io.NewSectionReader(f, 0, 4096))) {
			return nil, fmt.Errorf("%s is a JSON array, not JSONL: one record per line expected", path)
		}
		return transcript.Read(f, path, tail)
	}
	lr := &io.LimitedReader{R: f, N: maxSessionBytes + 1}
	r := bufio.NewReaderSize(lr, 64<<10)
	if startsJSONArray(r) {
		return nil, fmt.Errorf("%s is a JSON array, not JSONL: one record per line expected", path)
	}
	tr, err := transcript.Read(r, path, transcript.ReadOptions{})
	if lr.N == 0 {
		return nil, fmt.Errorf("cannot read %s: larger than %d MiB", path, maxSessionBytes>>20)
	}
	return tr, err
}

// The most the commands read of a file they read whole: far more than any real one holds, so
// that a device or a pipe that never ends (--config /dev/zero) is an error, not a read that
// fills the memory.
const (
	maxConfigBytes  = 1 << 20 // --config: a policy is a few kilobytes
	maxToolsBytes   = 4 << 20 // --tools: Claude Code's definitions are some 60 KB
	maxSessionBytes = 1 << 30 // a session file
)

// readFile reads the file at path whole, as os.ReadFile does, but refuses a device and stops
// after limit bytes: a larger file is an error. Its errors name path.
func readFile(path string, limit int64) ([]byte, error) {
	f, fi, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if fi.Mode().IsRegular() {
		buf.Grow(int(min(fi.Size(), limit)) + 512)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, fileError(path, err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("cannot read %s: larger than %d MiB", path, limit>>20)
	}
	return buf.Bytes(), nil
}

// openFile opens the file at path for reading and stats it, refusing a device; its errors
// name path.
func openFile(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fileError(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fileError(path, err)
	}
	if fi.Mode()&fs.ModeDevice != 0 {
		f.Close()
		return nil, nil, fmt.Errorf("cannot read %s: it is a device, not a file", path)
	}
	return f, fi, nil
}

// fileError says that path cannot be read, and why, without the Go operation name.
func fileError(path string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	return fmt.Errorf("cannot read %s: %w", path, err)
}

// startsJSONArray reports whether the first character of r after a byte-order mark and white
// space is '['. Claude Code writes one JSON object per line, so no session file does.
func startsJSONArray(r *bufio.Reader) bool {
	buf, _ := r.Peek(r.Size())
	buf = bytes.TrimPrefix(buf, []byte("\xef\xbb\xbf"))
	buf = bytes.TrimLeft(buf, " \t\r\n")
	return len(buf) > 0 && buf[0] == '['
}

// readTools reads a JSON array of tool definitions (--tools).
func readTools(path string) ([]provider.Tool, error) {
	if path == "" {
		return nil, nil
	}
	data, err := readFile(path, maxToolsBytes)
	if err != nil {
		return nil, fmt.Errorf("--tools: %w", err)
	}
	var defs []json.RawMessage
	if err := json.Unmarshal(data, &defs); err != nil {
		return nil, fmt.Errorf("--tools: %s: want a JSON array of tool definitions: %v", path, err)
	}
	tools := make([]provider.Tool, 0, len(defs))
	for i, d := range defs {
		var head struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(d, &head); err != nil || head.Name == "" {
			return nil, fmt.Errorf("--tools: %s: tool %d: field name: missing or not a string", path, i)
		}
		tools = append(tools, provider.Tool{Name: head.Name, Definition: d})
	}
	return tools, nil
}
