package agentctx

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/cases/*/want")

// caseSpec is a golden case's case.json: the knobs of one turn. Zero fields keep the
// pipeline's defaults.
type caseSpec struct {
	// Transcript names the input when it is not the case's own transcript.jsonl (a path
	// relative to the case directory, e.g. a bundled session).
	Transcript     string             `json:"transcript"`
	Now            time.Time          `json:"now"`
	Model          string             `json:"model"`
	Window         int                `json:"window"`
	MaxTokens      int                `json:"maxTokens"`
	Thinking       *provider.Thinking `json:"thinking"`
	SkipCacheWrite bool               `json:"skipCacheWrite"`
	System         string             `json:"system"`
	SystemFill     int                `json:"systemFill"` // characters of filler appended to System
	Tools          []json.RawMessage  `json:"tools"`
	// SnipTool adds [SnipTool] to the tools; a multi-turn answer calling it is handled by
	// Pipeline.HandleSnip (see golden_turns_test.go).
	SnipTool      bool             `json:"snipTool"`
	SystemContext []ContextSection `json:"systemContext"`
	UserContext   []ContextSection `json:"userContext"`
	Budget        struct {
		MaxResultChars, MaxMessageChars, PreviewBytes int
		Disable                                       bool
	} `json:"budget"`
	Microcompact struct {
		Cached              bool
		CacheEditingBeta    string
		CachedTriggerTokens int
		KeepRecent          int
		Disable             bool
	} `json:"microcompact"`
	Snip  SnipConfig `json:"snip"`
	Cache struct {
		TTL                       string
		SystemMarker, ToolsMarker bool
		MinGain                   float64
	} `json:"cache"`
	// Collapse turns the collapse producer on: Producer "oldest" is [FoldOldest].
	Collapse struct {
		Producer                       string
		CommitFraction, TargetFraction float64
	} `json:"collapse"`
	// Compact configures compaction; Turns makes the case a multi-turn one (see
	// golden_turns_test.go).
	Compact compactSpec `json:"compact"`
	Turns   []turnSpec  `json:"turns"`
	// TranscriptPath sets Input.TranscriptPath.
	TranscriptPath string `json:"transcriptPath"`
}

func (c caseSpec) config() Config {
	cfg := Config{
		Model:           c.Model,
		ContextWindow:   c.Window,
		MaxOutputTokens: c.MaxTokens,
		Tokens:          EstimateCounter{},
		Thinking:        c.Thinking,
		Now:             func() time.Time { return c.Now },
		Budget: BudgetConfig{MaxResultChars: c.Budget.MaxResultChars, MaxMessageChars: c.Budget.MaxMessageChars,
			PreviewBytes: c.Budget.PreviewBytes, Disable: c.Budget.Disable, Store: &MapStore{}},
		Microcompact: MicrocompactConfig{Cached: c.Microcompact.Cached, CacheEditingBeta: c.Microcompact.CacheEditingBeta, CachedTriggerTokens: c.Microcompact.CachedTriggerTokens,
			KeepRecent: c.Microcompact.KeepRecent, Disable: c.Microcompact.Disable},
		Snip:  c.Snip,
		Cache: CacheConfig{TTL: c.Cache.TTL, SystemMarker: c.Cache.SystemMarker, ToolsMarker: c.Cache.ToolsMarker, MinGain: c.Cache.MinGain},
	}
	if cfg.Model == "" {
		cfg.Model = "claude-sonnet-4-5"
	}
	if len(c.SystemContext) > 0 {
		cfg.Context.System = staticContext(c.SystemContext)
	}
	if len(c.UserContext) > 0 {
		cfg.Context.User = staticContext(c.UserContext)
	}
	if c.Collapse.Producer == "oldest" {
		cfg.Collapse = CollapseConfig{Producer: FoldOldest{}, CommitFraction: c.Collapse.CommitFraction, TargetFraction: c.Collapse.TargetFraction}
	}
	c.Compact.apply(&cfg)
	return cfg
}

func staticContext(s []ContextSection) ContextProvider {
	return ContextProviderFunc(func(context.Context) ([]ContextSection, error) { return s, nil })
}

func (c caseSpec) input(records []transcript.Record) Input {
	in := Input{Records: records, SkipCacheWrite: c.SkipCacheWrite, TranscriptPath: c.TranscriptPath}
	if c.System != "" || c.SystemFill > 0 {
		in.System = []*transcript.Text{{Text: c.System + filler(c.SystemFill)}}
	}
	for _, d := range c.Tools {
		var head struct{ Name string }
		_ = json.Unmarshal(d, &head)
		in.Tools = append(in.Tools, provider.Tool{Name: head.Name, Definition: d})
	}
	if c.SnipTool {
		in.Tools = append(in.Tools, SnipTool())
	}
	return in
}

// TestGolden runs every case under testdata/cases: one turn of Prepare, compared with
// want/request.json (the body, indented), want/report.txt and want/appended.jsonl. Every case
// also checks the invariants no golden file can forget: the request passes Validate, Prepare
// twice gives the same bytes, and Prepare after appending the turn's records gives the same
// bytes again with nothing new to append.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cases", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			if !*update {
				t.Parallel()
			}
			runGolden(t, dir)
		})
	}
}

func runGolden(t *testing.T, dir string) {
	var spec caseSpec
	if data, err := os.ReadFile(filepath.Join(dir, "case.json")); err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&spec), "case.json")
	}
	if len(spec.Turns) > 0 {
		runGoldenTurns(t, dir, spec)
		return
	}
	src := filepath.Join(dir, "transcript.jsonl")
	if spec.Transcript != "" {
		src = filepath.Join(dir, spec.Transcript)
	}
	tr, err := transcript.ReadFile(src, transcript.ReadOptions{Strict: true})
	require.NoError(t, err)
	p, err := New(spec.config())
	require.NoError(t, err)

	ctx := t.Context()
	res, err := p.Prepare(ctx, spec.input(tr.Records))
	require.NoError(t, err)
	body, err := res.Request.MarshalJSON()
	require.NoError(t, err)

	// Invariants.
	assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}))
	checkConservation(t, filepath.Base(dir), spec.input(tr.Records), res) // no block lost without a reason
	again, err := p.Prepare(ctx, spec.input(tr.Records))
	require.NoError(t, err)
	body2, err := again.Request.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(body), string(body2), "Prepare twice")
	assert.Equal(t, encodeRecords(t, res.Append), encodeRecords(t, again.Append), "Prepare twice: records to append")

	resumed := append(append([]transcript.Record(nil), tr.Records...), roundTrip(t, res.Append)...)
	next, err := p.Prepare(ctx, spec.input(resumed))
	require.NoError(t, err)
	body3, err := next.Request.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, string(body), string(body3), "Prepare after appending the turn's records")
	assert.Empty(t, next.Append, "no new decisions after appending")

	// Goldens.
	indented, err := res.Request.Indent()
	require.NoError(t, err)
	golden(t, filepath.Join(dir, "want", "request.json"), indented)
	golden(t, filepath.Join(dir, "want", "report.txt"), []byte(res.Report.String()))
	golden(t, filepath.Join(dir, "want", "appended.jsonl"), []byte(encodeRecords(t, res.Append)))
}

// golden compares got with the file at path, or rewrites the file under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		t.Logf("updated %s", path)
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run go test -run Golden -update and review the diff")
	if !assert.Equal(t, string(want), string(got), "golden %s differs (go test -run Golden -update rewrites it)", path) {
		_ = os.WriteFile(filepath.Join(t.ArtifactDir(), filepath.Base(path)), got, 0o644)
	}
}

// TestGoldenActionsNameTheirRecord checks, on every golden case, that each action carrying out
// a decision names the decision record it carries out, and that the record exists: in the
// transcript (a recorded decision) or in Result.Append (one made this turn).
func TestGoldenActionsNameTheirRecord(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cases", "*"))
	require.NoError(t, err)
	decisive := map[ActionKind]bool{ActionReplaced: true, ActionReapplied: true, ActionKept: true,
		ActionSnipped: true, ActionCleared: true, ActionCollapsed: true}
	checked := 0
	for _, dir := range dirs {
		var spec caseSpec
		if data, err := os.ReadFile(filepath.Join(dir, "case.json")); err == nil {
			require.NoError(t, json.Unmarshal(data, &spec))
		}
		if len(spec.Turns) > 0 {
			continue // multi-turn cases check their actions per turn
		}
		src := filepath.Join(dir, "transcript.jsonl")
		if spec.Transcript != "" {
			src = filepath.Join(dir, spec.Transcript)
		}
		tr, err := transcript.ReadFile(src, transcript.ReadOptions{Strict: true})
		require.NoError(t, err)
		p, err := New(spec.config())
		require.NoError(t, err)
		res, err := p.Prepare(t.Context(), spec.input(tr.Records))
		require.NoError(t, err)
		known := map[string]bool{}
		claude := map[string]bool{} // tool_use ids a Claude Code content-replacement record (often without a uuid) replaces
		for _, r := range append(append([]transcript.Record(nil), tr.Records...), res.Append...) {
			if r.IsDecision() || r.MicrocompactBoundary() != nil {
				known[r.UUID] = true
			}
			for _, c := range r.ContentReplacements() {
				claude[c.ToolUseID] = true
			}
		}
		for _, s := range res.Report.Stages {
			for _, a := range s.Actions {
				if !decisive[a.Kind] && !(a.Kind == ActionMarked && a.ToolUseID != "") {
					continue
				}
				checked++
				if s.Stage == "budget" && a.Record == "" && claude[a.ToolUseID] {
					continue
				}
				assert.True(t, known[a.Record], "%s: %s %s action names record %q, which is no decision record", filepath.Base(dir), s.Stage, a.Kind, a.Record)
			}
		}
	}
	assert.Positive(t, checked)
}
