// Package providertest gives the provider adapters' tests the requests to convert: the
// golden requests of testdata/cases, decoded back into [provider.Request] values, and the
// requests [agentctx.Pipeline.Prepare] builds for every session of the shared corpus.
package providertest

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// Case is one request to convert and where it comes from.
type Case struct {
	// Name names the request in test output: a golden file's path, or a corpus session's
	// file with the configuration it was prepared under.
	Name string
	// Request is the request.
	Request provider.Request
}

// Goldens returns the golden requests under root (the module's testdata/cases): every
// want/request.json and want/turn-N/request.json, decoded. It fails the test when there is
// none, since the module always has them.
func Goldens(t testing.TB, root string) []Case {
	t.Helper()
	var out []Case
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "request.json" {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		req, err := DecodeRequest(body)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, Case{Name: path, Request: req})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no request.json under %s", root)
	}
	return out
}

// DecodeRequest decodes a Messages API request body as [provider.Request.MarshalJSON] writes
// it. Blocks decode with [transcript.UnmarshalBlock], so they encode back to the same JSON;
// a cache_edits block becomes an [*transcript.CacheEdits].
func DecodeRequest(body []byte) (provider.Request, error) {
	var wire struct {
		Model      string               `json:"model"`
		MaxTokens  int                  `json:"max_tokens"`
		System     []json.RawMessage    `json:"system"`
		Messages   []wireMessage        `json:"messages"`
		Tools      []json.RawMessage    `json:"tools"`
		ToolChoice *provider.ToolChoice `json:"tool_choice"`
		Thinking   *provider.Thinking   `json:"thinking"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return provider.Request{}, err
	}
	req := provider.Request{Model: wire.Model, MaxTokens: wire.MaxTokens, ToolChoice: wire.ToolChoice, Thinking: wire.Thinking}
	for i, raw := range wire.System {
		b, err := transcript.UnmarshalBlock(raw)
		if err != nil {
			return req, fmt.Errorf("system[%d]: %w", i, err)
		}
		t, ok := b.(*transcript.Text)
		if !ok {
			return req, fmt.Errorf("system[%d]: a %s block", i, b.Kind())
		}
		req.System = append(req.System, t)
	}
	for i, m := range wire.Messages {
		rm := provider.Message{Role: m.Role}
		for j, raw := range m.Content {
			b, err := decodeBlock(raw)
			if err != nil {
				return req, fmt.Errorf("messages[%d].content[%d]: %w", i, j, err)
			}
			rm.Content = append(rm.Content, b)
		}
		req.Messages = append(req.Messages, rm)
	}
	for i, raw := range wire.Tools {
		var def map[string]json.RawMessage
		if err := json.Unmarshal(raw, &def); err != nil {
			return req, fmt.Errorf("tools[%d]: %w", i, err)
		}
		var tool provider.Tool
		if cc, ok := def["cache_control"]; ok {
			tool.CacheControl = new(transcript.CacheControl)
			if err := json.Unmarshal(cc, tool.CacheControl); err != nil {
				return req, fmt.Errorf("tools[%d].cache_control: %w", i, err)
			}
			delete(def, "cache_control")
		}
		if err := json.Unmarshal(def["name"], &tool.Name); err != nil {
			return req, fmt.Errorf("tools[%d].name: %w", i, err)
		}
		var err error
		if tool.Definition, err = json.Marshal(def); err != nil {
			return req, err
		}
		req.Tools = append(req.Tools, tool)
	}
	return req, nil
}

type wireMessage struct {
	Role    transcript.Role   `json:"role"`
	Content []json.RawMessage `json:"content"`
}

func decodeBlock(raw json.RawMessage) (transcript.Block, error) {
	b, err := transcript.UnmarshalBlock(raw)
	if err != nil || b.Kind() != transcript.KindCacheEdits {
		return b, err
	}
	var ce struct {
		Edits []transcript.CacheEdit `json:"edits"`
	}
	if err := json.Unmarshal(raw, &ce); err != nil {
		return nil, err
	}
	return &transcript.CacheEdits{Edits: ce.Edits}, nil
}

// CorpusDir returns the directory of the shared corpus's Claude Code sessions, which sits
// beside the module whose root is given, or skips the test when it is absent.
func CorpusDir(t testing.TB, root string) string {
	t.Helper()
	dir := filepath.Join(root, "..", "shared", "corpus", "claude-code")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("%s not found; whole-corpus tests skipped (clone without shared/)", dir)
	}
	return dir
}

// Corpus returns the requests Prepare builds for every session of the shared corpus (see
// [CorpusDir]; root is the module root), under each of [CorpusConfigs]. Sessions with nothing
// to send are left out. Under the race detector only the sessions under 256 KB are read.
func Corpus(t testing.TB, root string) []Case {
	t.Helper()
	sessions := CorpusSessions(t, root)
	var out []Case
	for _, c := range CorpusConfigs() {
		for _, s := range sessions {
			req, err := c.Prepare(t, s.Records)
			if err != nil {
				continue // nothing to send, or over the window: no request to convert
			}
			out = append(out, Case{Name: s.Name + " " + c.Name, Request: req})
		}
	}
	return out
}

// Session is one session file of the corpus, read.
type Session struct {
	// Name is the file's base name.
	Name string
	// Records are its records, in file order.
	Records []transcript.Record
}

// CorpusSessions reads every session of the shared corpus (see [CorpusDir]; root is the
// module root), in path order; under the race detector only those under 256 KB.
func CorpusSessions(t testing.TB, root string) []Session {
	t.Helper()
	dir := CorpusDir(t, root)
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	if len(files) == 0 {
		t.Skipf("no sessions under %s; whole-corpus tests skipped", dir)
	}
	var out []Session
	for _, f := range files {
		if fi, err := os.Stat(f); raceEnabled && err == nil && fi.Size() > 256<<10 {
			continue
		}
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, Session{Name: filepath.Base(f), Records: tr.Records})
	}
	return out
}

// CorpusConfig is a configuration the corpus's requests are prepared under.
type CorpusConfig struct {
	// Name names it in test output.
	Name string
	cfg  agentctx.Config
}

// CorpusConfigs returns the configurations of [Corpus]: the model's own window, and a
// 40,000-token window with cached microcompact, which makes cache_edits blocks,
// cache_reference fields and the beta they need, and compacts the long sessions. Tokens are
// estimated, so they are fast. Under the race detector only the second one is returned.
func CorpusConfigs() []CorpusConfig {
	configs := []CorpusConfig{
		{"window=model", agentctx.Config{}},
		{"window=40000,cached", agentctx.Config{ContextWindow: 40_000, Microcompact: agentctx.MicrocompactConfig{
			// The corpus is old: a gap this long never passes, so the stage edits the cache
			// instead of clearing as after an idle hour.
			Cached: true, CacheEditingBeta: "cache-editing-test", CachedTriggerTokens: 10_000, Gap: 100 * 365 * 24 * time.Hour}}},
	}
	if raceEnabled {
		configs = configs[1:]
	}
	return configs
}

// Prepare builds the request for records (with system as the system prompt) with a new
// Pipeline of the configuration, at a fixed time; the error is Prepare's.
func (c CorpusConfig) Prepare(t testing.TB, records []transcript.Record, system ...*transcript.Text) (provider.Request, error) {
	t.Helper()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cfg := c.cfg
	cfg.Model, cfg.Tokens, cfg.Now = "claude-sonnet-4-5", agentctx.EstimateCounter{}, func() time.Time { return now }
	cfg.Budget = agentctx.BudgetConfig{Store: &agentctx.MapStore{}}
	cfg.Compact = agentctx.CompactConfig{Summarizer: summarize.Extractive{}}
	p, err := agentctx.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Prepare(t.Context(), agentctx.Input{Records: records, System: system})
	return res.Request, err
}

// JSONDiff returns "" when a and b hold the same JSON value (keys in any order), else the
// path of the first difference with both values, shortened, for a readable failure.
func JSONDiff(a, b []byte) string {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return "first: " + err.Error()
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return "second: " + err.Error()
	}
	return diff("$", va, vb)
}

func diff(path string, a, b any) string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: object vs %s", path, short(b))
		}
		keys := make([]string, 0, len(a)+len(bm))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			av, aok := a[k]
			bv, bok := bm[k]
			switch {
			case !aok:
				return fmt.Sprintf("%s.%s: missing vs %s", path, k, short(bv))
			case !bok:
				return fmt.Sprintf("%s.%s: %s vs missing", path, k, short(av))
			}
			if d := diff(path+"."+k, av, bv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bs, ok := b.([]any)
		if !ok {
			return fmt.Sprintf("%s: array vs %s", path, short(b))
		}
		if len(a) != len(bs) {
			return fmt.Sprintf("%s: %d items vs %d", path, len(a), len(bs))
		}
		for i := range a {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), a[i], bs[i]); d != "" {
				return d
			}
		}
		return ""
	default:
		if a != b {
			return fmt.Sprintf("%s: %s vs %s", path, short(a), short(b))
		}
		return ""
	}
}

func short(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
