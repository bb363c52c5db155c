package agentctx

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/summarize"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compactSpec is the "compact" object of a golden case: compaction knobs. The scripted
// summarizer answers each call with the next reply of the turn (see turnSpec.Replies).
type compactSpec struct {
	// Summarizer: "" (none: auto-compact off), "extractive" or "scripted".
	Summarizer       string            `json:"summarizer"`
	DisableFallback  bool              `json:"disableFallback"`
	DisableAuto      bool              `json:"disableAuto"`
	Tail             TailConfig        `json:"tail"`
	SummaryMaxTokens int               `json:"summaryMaxTokens"`
	PinnedMaxTokens  int               `json:"pinnedMaxTokens"`
	Files            map[string]string `json:"files"`    // the rehydration file source; nil: none
	FileFill         int               `json:"fileFill"` // characters of filler appended to each file
	// Memory, SessionStart, Post, Pre: install a session memory and hooks driven by the
	// turn's fields.
	Memory       bool `json:"memory"`
	Hooks        bool `json:"hooks"`
	SessionStart bool `json:"sessionStart"`
	ThrashRuns   int  `json:"thrashRuns"`
	// TargetFraction sets Compact.TargetFraction: the ladder cases aim at the threshold.
	TargetFraction float64 `json:"targetFraction"`
	// Server and Pause set ProviderContext: the server strategy, with
	// pause_after_compaction.
	Server bool `json:"server"`
	Pause  bool `json:"pause"`

	script *script
}

// script is the state of a multi-turn case's fakes for the current turn.
type script struct {
	turn  *turnSpec
	calls []summaryCall
	next  int
	posts []string
}

// summaryCall is what golden files record of one Summarize call.
type summaryCall struct {
	Attempt         int    `json:"attempt"`
	Trigger         string `json:"trigger"`
	Custom          string `json:"custom,omitempty"`
	Omitted         int    `json:"omitted"`
	MaxOutputTokens int    `json:"maxOutputTokens"`
	Messages        int    `json:"messages"`
	View            int    `json:"view"`
	ToolChoice      string `json:"toolChoice,omitempty"`
	Marker          string `json:"marker"`
}

func (c *compactSpec) apply(cfg *Config) {
	if c.script == nil {
		c.script = &script{}
	}
	sc := c.script
	cc := &cfg.Compact
	cc.DisableFallback, cc.DisableAuto, cc.Tail = c.DisableFallback, c.DisableAuto, c.Tail
	cc.SummaryMaxTokens, cc.PinnedMaxTokens, cc.ThrashRuns, cc.TargetFraction = c.SummaryMaxTokens, c.PinnedMaxTokens, c.ThrashRuns, c.TargetFraction
	if c.Server {
		cfg.ProviderContext = ProviderContextConfig{Strategy: CompactServer, PauseAfterCompaction: c.Pause}
	}
	cc.Rehydrate.Files = FileSourceFunc(func(_ context.Context, path string) ([]byte, error) {
		if s, ok := c.Files[path]; ok {
			return []byte(s + filler(c.FileFill)), nil
		}
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	})
	switch c.Summarizer {
	case "extractive":
		cc.Summarizer = summarize.Extractive{}
	case "scripted":
		cc.Summarizer = summarize.Func(func(ctx context.Context, req summarize.Request) (summarize.Summary, error) {
			sc.calls = append(sc.calls, describeSummaryRequest(req))
			if sc.turn == nil || sc.next >= len(sc.turn.Replies) {
				return summarize.Summary{}, errors.New("scripted summarizer: no reply left for this call")
			}
			r := sc.turn.Replies[sc.next]
			sc.next++
			switch {
			case r.PTL != nil:
				return summarize.Summary{}, &provider.PromptTooLongError{Tokens: r.PTL.Tokens, Limit: r.PTL.Limit}
			case r.Error != "":
				return summarize.Summary{}, errors.New(r.Error)
			}
			text := r.Text
			if r.Fill > 0 {
				text = strings.Replace(text, "</summary>", filler(r.Fill)+"\n</summary>", 1)
			}
			return summarize.Summary{Text: text, By: "scripted"}, nil
		})
	}
	if c.Memory {
		cc.Memory = SessionMemoryFunc(func(context.Context, MemoryRequest) (Memory, error) {
			if sc.turn == nil || sc.turn.Memory == nil {
				return Memory{}, nil
			}
			return *sc.turn.Memory, nil
		})
	}
	if c.Hooks {
		cc.Hooks.Pre = []func(context.Context, CompactEvent) (PreCompactResult, error){func(_ context.Context, e CompactEvent) (PreCompactResult, error) {
			if sc.turn == nil {
				return PreCompactResult{}, nil
			}
			return PreCompactResult{Instructions: sc.turn.HookInstructions, Veto: sc.turn.Veto != "", Reason: sc.turn.Veto}, nil
		}}
		cc.Hooks.Post = []func(context.Context, PostCompactEvent) error{func(_ context.Context, e PostCompactEvent) error {
			sc.posts = append(sc.posts, fmt.Sprintf("%s %s pre=%d post=%d summary=%d chars", e.Trigger, e.BoundaryUUID, e.PreTokens, e.PostTokens, len(e.Summary)))
			return nil
		}}
	}
	if c.SessionStart {
		cc.Hooks.SessionStart = []func(context.Context, CompactEvent) ([]ContextSection, error){func(_ context.Context, e CompactEvent) ([]ContextSection, error) {
			return []ContextSection{{Name: "sessionStart", Text: "The build is green on main (" + e.Trigger + " compaction)."}}, nil
		}}
	}
}

func describeSummaryRequest(req summarize.Request) summaryCall {
	c := summaryCall{Attempt: req.Attempt, Trigger: req.Trigger, Custom: req.Custom, Omitted: req.Omitted,
		MaxOutputTokens: req.MaxOutputTokens, Messages: len(req.Request.Messages), View: len(req.View)}
	if tc := req.Request.ToolChoice; tc != nil {
		c.ToolChoice = tc.Type
	}
	for i, m := range req.Request.Messages {
		for j, b := range m.Content {
			if transcript.CacheControlOf(b) != nil {
				c.Marker = fmt.Sprintf("messages[%d].content[%d] of %d messages; the last holds %d blocks", i, j, len(req.Request.Messages), len(req.Request.Messages[len(req.Request.Messages)-1].Content))
			}
		}
	}
	return c
}

// turnSpec is one turn of a multi-turn golden case: what is appended to the transcript before
// the turn, how the turn runs, and the answer appended after it.
type turnSpec struct {
	// Now is the clock for the turn; zero: the case's now plus one minute per turn.
	Now time.Time `json:"now"`
	// Results answers the previous answer's tool calls, in order; User is a prompt, Fill
	// characters of filler appended to it.
	Results []resultSpec `json:"results"`
	User    string       `json:"user"`
	Fill    int          `json:"fill"`
	// Announce appends the runtime's announcements (meta user records marked with a
	// transcript.Announcement) after the results, before the prompt.
	Announce []announceSpec `json:"announce"`
	// Pin pins records before the turn, named by uuid.
	Pin []string `json:"pin"`
	// Compact runs a manual compaction with these instructions instead of Prepare.
	Compact *CompactOptions `json:"compact"`
	// Replies are the scripted summarizer's answers to this turn's calls, in order.
	Replies []replySpec `json:"replies"`
	// Memory is the session memory's summary this turn.
	Memory *Memory `json:"memory"`
	// Veto and HookInstructions drive the pre-compact hook.
	Veto             string `json:"veto"`
	HookInstructions string `json:"hookInstructions"`
	// Images are attached to the turn's user message, after its text.
	Images []imageSpec `json:"images"`
	// Recover makes the turn a recovery: the provider refused the previous turn's request
	// with this error, and Pipeline.Recover runs instead of Prepare.
	Recover *recoverSpec `json:"recover"`
	// WantErr is a substring of the turn's error; empty: no error.
	WantErr string `json:"wantErr"`
	// Answer is the response appended after the turn.
	Answer *answerSpec `json:"answer"`
}

// imageSpec is a PNG image of Bytes bytes of data (after its header), filled with Seed.
type imageSpec struct {
	Bytes int  `json:"bytes"`
	Seed  byte `json:"seed"`
}

func (s imageSpec) block() *transcript.Image {
	data := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{s.Seed}, s.Bytes)...)
	return &transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(data)}}
}

// recoverSpec is the provider error of a recovery turn, as an adapter reports it.
type recoverSpec struct {
	Class     provider.ErrorClass `json:"class"`
	Tokens    int                 `json:"tokens"`
	Limit     int                 `json:"limit"`
	Window    int                 `json:"window"`
	Paths     []string            `json:"paths"`
	MaxBytes  int                 `json:"maxBytes"`
	MaxImages int                 `json:"maxImages"`
	Message   string              `json:"message"`
}

// providerError is an adapter's classified error, as agentctx/anthropic builds one.
type providerError struct {
	class provider.ErrorClass
	tree  []error
}

func (e *providerError) Error() string                   { return "provider: " + string(e.class) }
func (e *providerError) ErrorClass() provider.ErrorClass { return e.class }
func (e *providerError) Unwrap() []error                 { return e.tree }
func (e *providerError) Is(target error) bool {
	return target == provider.ErrRequestTooLarge && e.class == provider.ClassRequestTooLarge
}
func (s *recoverSpec) err() error {
	e := &providerError{class: s.Class}
	switch s.Class {
	case provider.ClassOutputTruncated:
		return provider.ErrOutputTruncated
	case provider.ClassPromptTooLong:
		e.tree = append(e.tree, &provider.PromptTooLongError{Tokens: s.Tokens, Limit: s.Limit, Window: s.Window, Reason: "the provider refused the prompt"})
	case provider.ClassMediaRejected:
		e.tree = append(e.tree, &provider.MediaRejectedError{Paths: s.Paths, MaxBytes: s.MaxBytes, MaxImages: s.MaxImages, Message: s.Message})
	}
	return e
}

// announceSpec is an announcement of the runtime: its mark and its text.
type announceSpec struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Text string `json:"text"`
}

type replySpec struct {
	Text string `json:"text"`
	// Fill adds that many characters of filler before the reply's closing </summary>.
	Fill  int    `json:"fill"`
	Error string `json:"error"`
	PTL   *struct {
		Tokens, Limit int
	} `json:"ptl"`
}

type resultSpec struct {
	Text   string      `json:"text"`
	Fill   int         `json:"fill"`
	Error  bool        `json:"error"`
	Images []imageSpec `json:"images"`
}

type answerSpec struct {
	// Thinking, when set, opens the response with a signed thinking block of that text.
	Thinking string `json:"thinking"`
	// Compaction, when set, opens the response with a provider compaction block holding
	// this summary (server-side compaction).
	Compaction string `json:"compaction"`
	// StopReason is the response's stop_reason ("max_tokens": cut at the output cap;
	// "compaction": paused after the provider's compaction).
	StopReason string          `json:"stopReason"`
	Text       string          `json:"text"`
	Fill       int             `json:"fill"`
	Tools      []answerToolUse `json:"tools"`
}

type answerToolUse struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// Fill adds a "content" field of that many characters of filler to Input (an object).
	Fill int `json:"fill"`
}

// input is the tool use's input, with its filler.
func (a answerToolUse) input() json.RawMessage {
	if a.Fill == 0 {
		return a.Input
	}
	var m map[string]any
	if err := json.Unmarshal(a.Input, &m); err != nil || m == nil {
		m = map[string]any{}
	}
	m["content"] = filler(a.Fill)
	b, _ := json.Marshal(m)
	return b
}

// filler returns n characters of varied prose.
func filler(n int) string {
	words := strings.Fields("the parser keeps every token of the input while the lexer reports line and column for each error it meets in the grammar")
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%d", words[i%len(words)], i%97)
	}
	return b.String()[:n]
}

// turnRecorder appends a multi-turn case's records with deterministic uuids.
type turnRecorder struct {
	name    string
	records []transcript.Record
	n       int
	leaf    string
	session string
	pending []string // tool_use ids of the last answer
	msgN    int
}

// ref resolves a record reference of a case: "#N" is the N-th record the case added (from 1),
// anything else a uuid.
func (r *turnRecorder) ref(ref string) string {
	if n, ok := strings.CutPrefix(ref, "#"); ok {
		return transcript.ContentUUID("golden-turns", r.name+"\x00"+n)
	}
	return ref
}

func (r *turnRecorder) add(rec transcript.Record, now time.Time) transcript.Record {
	r.n++
	rec.UUID = transcript.ContentUUID("golden-turns", fmt.Sprintf("%s\x00%d", r.name, r.n))
	rec.ParentUUID = r.leaf
	rec.SessionID = r.session
	rec.Timestamp = now.Format("2006-01-02T15:04:05.000Z")
	r.records = append(r.records, rec)
	r.leaf = rec.UUID
	return rec
}

// runGoldenTurns runs a multi-turn case: for each turn, it appends the turn's input, runs
// Prepare (or Compact), checks the invariants — Validate, the same bytes twice, the same
// bytes after appending Result.Append with nothing new to append and no summarizer call —,
// compares want/turn-N/{request.json,report.txt,appended.jsonl,summarize.json,hooks.txt}, then
// appends Result.Append and the turn's answer.
func runGoldenTurns(t *testing.T, dir string, spec caseSpec) {
	rec := &turnRecorder{name: filepath.Base(dir), session: "22222222-2222-4222-8222-222222222222"}
	if spec.Transcript != "" || fileExists(filepath.Join(dir, "transcript.jsonl")) {
		src := filepath.Join(dir, "transcript.jsonl")
		if spec.Transcript != "" {
			src = filepath.Join(dir, spec.Transcript)
		}
		tr, err := transcript.ReadFile(src, transcript.ReadOptions{Strict: true})
		require.NoError(t, err)
		rec.records = tr.Records
		if ch, err := transcript.BuildChain(tr.Records, transcript.ChainOptions{}); err == nil && ch.Leaf != nil {
			rec.leaf, rec.session = ch.Leaf.UUID, ch.Leaf.SessionID
		}
	}
	original := encodeRecords(t, rec.records)
	sc := spec.Compact.script
	if sc == nil {
		sc = &script{}
		spec.Compact.script = sc
	}
	ctx := t.Context()
	var sent *provider.Request // the last turn's request that could be sent
	sentAt := 0                // len(rec.records) after that turn's records
	for i := range spec.Turns {
		turn := &spec.Turns[i]
		name := fmt.Sprintf("turn-%d", i+1)
		now := turn.Now
		if now.IsZero() {
			now = spec.Now.Add(time.Duration(i) * time.Minute)
		}
		cfgSpec := spec
		cfgSpec.Now = now
		p, err := New(cfgSpec.config())
		require.NoError(t, err, name)

		// The turn's input.
		for j, rs := range turn.Results {
			require.Less(t, j, len(rec.pending), "%s: more results than tool calls", name)
			text := rs.Text + filler(rs.Fill)
			content := []transcript.Block{&transcript.Text{Text: text}}
			for _, im := range rs.Images {
				content = append(content, im.block())
			}
			rec.add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{
				&transcript.ToolResult{ToolUseID: rec.pending[j], Content: content, StringContent: len(rs.Images) == 0, IsError: rs.Error}}}}, now)
		}
		for _, a := range turn.Announce {
			rec.add(transcript.Record{Type: transcript.TypeUser, IsMeta: true, Announcement: &transcript.Announcement{Kind: a.Kind, Name: a.Name},
				Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: a.Text}}}}, now)
		}
		if turn.User != "" || turn.Fill > 0 {
			content := []transcript.Block{&transcript.Text{Text: turn.User + filler(turn.Fill)}}
			for _, im := range turn.Images {
				content = append(content, im.block())
			}
			rec.add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, StringContent: len(turn.Images) == 0, Content: content}}, now)
		}
		if len(turn.Pin) > 0 {
			refs := make([]string, len(turn.Pin))
			for k, ref := range turn.Pin {
				refs[k] = rec.ref(ref)
			}
			pin, err := p.Pin(rec.records, refs, "golden case", now)
			require.NoError(t, err, name)
			rec.records = append(rec.records, pin)
		}

		if turn.Memory != nil {
			turn.Memory.Through = rec.ref(turn.Memory.Through)
		}
		runLeaf := func(records []transcript.Record, leaf string) (Result, error) {
			sc.turn, sc.next, sc.calls, sc.posts = turn, 0, nil, nil
			in := spec.input(records)
			in.Leaf = leaf
			if turn.Compact != nil {
				return p.Compact(ctx, in, *turn.Compact)
			}
			if turn.Recover != nil {
				return p.Recover(ctx, in, turn.Recover.err())
			}
			return p.Prepare(ctx, in)
		}
		run := func(records []transcript.Record) (Result, error) { return runLeaf(records, "") }
		// Naming the leaf (Input.Leaf) gives the same turn as leaving it to the chain.
		named, _ := runLeaf(rec.records, rec.leaf)
		res, err := run(rec.records)
		calls, posts := sc.calls, sc.posts
		assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, named.Request)), "%s: with Input.Leaf", name)
		assert.Equal(t, res.Leaf, named.Leaf, "%s: Result.Leaf with Input.Leaf", name)
		if turn.WantErr != "" {
			require.Error(t, err, name)
			assert.Contains(t, err.Error(), turn.WantErr, name)
		} else {
			require.NoError(t, err, name)
			assert.NoError(t, provider.Validate(res.Request, provider.ValidateOptions{ContextWindow: p.Window(), InputTokens: res.Report.InputTokens}), name)
			cin, cres := recoveredInput(rec.records, res)
			checkConservation(t, name, cin, cres) // no block lost without a reason
		}
		body := string(requestBytes(t, res.Request))
		if err == nil {
			// The prefix the last request marked is sent again byte for byte, unless a
			// decision since explains the change.
			since := slices.Concat(rec.records[sentAt:], res.Append)
			if sent != nil && !slices.ContainsFunc(since, changesView) {
				assert.NoError(t, samePrefix(sent, &res.Request), "%s: the previous request's cached prefix", name)
			}
			sent, sentAt = &res.Request, len(rec.records)+len(res.Append)
		}

		// Twice: the same bytes and records.
		again, _ := run(rec.records)
		assert.Equal(t, body, string(requestBytes(t, again.Request)), "%s: twice", name)
		assert.Equal(t, encodeRecords(t, res.Append), encodeRecords(t, again.Append), "%s: twice: records to append", name)
		checkGoldenTail(t, name, rec.records, run)

		// Resume: the appended records give the same bytes, with nothing new and no
		// summarizer call.
		resumed := append(append([]transcript.Record(nil), rec.records...), roundTrip(t, res.Append)...)
		sc.turn, sc.next, sc.calls = turn, 0, nil
		next, nerr := p.Prepare(ctx, spec.input(resumed))
		if turn.WantErr == "" || errors.Is(err, provider.ErrPromptTooLong) {
			if !errors.Is(err, provider.ErrPromptTooLong) {
				require.NoError(t, nerr, "%s: resume", name)
			}
			assert.Equal(t, body, string(requestBytes(t, next.Request)), "%s: after appending Result.Append", name)
			assert.Empty(t, next.Append, "%s: no new records after appending", name)
			assert.Empty(t, sc.calls, "%s: no summarizer call after appending", name)
		}

		// Goldens.
		indented, err := res.Request.Indent()
		require.NoError(t, err)
		wd := filepath.Join(dir, "want", name)
		golden(t, filepath.Join(wd, "request.json"), indented)
		golden(t, filepath.Join(wd, "report.txt"), []byte(res.Report.String()))
		golden(t, filepath.Join(wd, "appended.jsonl"), []byte(encodeRecords(t, res.Append)))
		if spec.Compact.Summarizer == "scripted" {
			cj, err := json.MarshalIndent(append([]summaryCall{}, calls...), "", "  ")
			require.NoError(t, err)
			golden(t, filepath.Join(wd, "summarize.json"), append(cj, '\n'))
		}
		if spec.Compact.Hooks {
			golden(t, filepath.Join(wd, "hooks.txt"), []byte(strings.Join(append(posts, ""), "\n")))
		}

		// Next: the records and the answer.
		rec.records = append(rec.records, roundTrip(t, res.Append)...)
		if res.Leaf != "" {
			rec.leaf = res.Leaf
		}
		rec.pending = nil
		if a := turn.Answer; a != nil {
			rec.msgN++
			id := fmt.Sprintf("msg_%s_%03d", rec.name, rec.msgN)
			blocks := []transcript.Block{}
			if a.Compaction != "" {
				raw, err := json.Marshal(map[string]string{"type": "compaction", "content": a.Compaction})
				require.NoError(t, err)
				b, err := transcript.UnmarshalBlock(raw)
				require.NoError(t, err)
				blocks = append(blocks, b)
			}
			if a.Thinking != "" {
				blocks = append(blocks, &transcript.Thinking{Thinking: a.Thinking, Signature: fmt.Sprintf("sig%s%03dabcdefghijklmnopqrstuvwxyz0123456789", rec.name, rec.msgN)})
			}
			if text := a.Text + filler(a.Fill); text != "" {
				blocks = append(blocks, &transcript.Text{Text: text})
			}
			for k, tu := range a.Tools {
				tid := fmt.Sprintf("toolu_%03d_%d", rec.msgN, k)
				blocks = append(blocks, &transcript.ToolUse{ID: tid, Name: tu.Name, Input: tu.input()})
				rec.pending = append(rec.pending, tid)
			}
			out := 0
			for _, b := range blocks {
				out += p.counter.Block(b)
			}
			for k, b := range blocks {
				stop := ""
				if k == len(blocks)-1 {
					stop = a.StopReason
				}
				rec.add(transcript.Record{Type: transcript.TypeAssistant, Message: &transcript.Message{ID: id, Type: "message", Role: transcript.RoleAssistant, Model: p.cfg.Model, StopReason: stop,
					Content: []transcript.Block{b}, Usage: &transcript.Usage{InputTokens: res.Report.InputTokens, OutputTokens: out * (k + 1) / len(blocks)}}}, now.Add(time.Second))
			}
			rec.snipCalls(t, p, name, blocks, now.Add(2*time.Second))
		}
	}
	assert.True(t, strings.HasPrefix(encodeRecords(t, rec.records), original), "the original records are an unchanged prefix")
}

// snipCalls carries out the answer's calls of the snip tool with Pipeline.HandleSnip, as a
// runtime would: the snip record, then the call's result, appended at once (the call is no
// longer pending). The outcome's text and record are compared with want/turn-N/snip.txt.
func (r *turnRecorder) snipCalls(t *testing.T, p *Pipeline, name string, blocks []transcript.Block, now time.Time) {
	var texts []string
	for _, b := range blocks {
		tu, ok := b.(*transcript.ToolUse)
		if !ok || tu.Name != SnipToolName {
			continue
		}
		out := p.HandleSnip(r.records, tu.Input, now)
		texts = append(texts, out.Text)
		if out.Record != nil {
			texts = append(texts, strings.TrimSuffix(encodeRecords(t, []transcript.Record{*out.Record}), "\n"))
			r.records = append(r.records, roundTrip(t, []transcript.Record{*out.Record})...)
		}
		r.add(transcript.Record{Type: transcript.TypeUser, Message: &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{out.Result(tu.ID)}}}, now)
		r.pending = slices.DeleteFunc(r.pending, func(id string) bool { return id == tu.ID })
	}
	if len(texts) > 0 {
		golden(t, filepath.Join("testdata", "cases", r.name, "want", name, "snip.txt"), []byte(strings.Join(texts, "\n---\n")+"\n"))
	}
}

// recoveredInput returns the input a conservation check of res starts from: records with
// the recovery's own records (its decision, or the continuation turn) appended — res keeps
// the compaction's, which the compact rule expects in Result.Append.
func recoveredInput(records []transcript.Record, res Result) (Input, Result) {
	rc := res.Report.Recovery
	if rc == nil || rc.Record == "" {
		return Input{Records: records}, res
	}
	in := Input{Records: slices.Clone(records)}
	keep := res.Append[:0:0]
	for _, r := range res.Append {
		if r.Recovery != nil {
			in.Records = append(in.Records, r)
			continue
		}
		keep = append(keep, r)
	}
	res.Append = keep
	return in, res
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// changesView reports whether r is a record that may change a view's earlier messages: a
// compaction's boundary, an answer holding a provider compaction, or a decision other than a failed compaction or a reminder (which
// goes after the latest input).
func changesView(r transcript.Record) bool {
	if r.Type == transcript.TypeAssistant && r.Message != nil && slices.ContainsFunc(r.Message.Content, func(b transcript.Block) bool {
		return transcript.CompactionOf(b) == transcript.CompactionPoint
	}) {
		return true // the provider compacted
	}
	return r.IsCompactBoundary() || r.IsDecision() && r.Subtype != transcript.SubtypeCompactFailure && r.Subtype != transcript.SubtypeReminder
}

// samePrefix checks that cur sends prev's prefix up to prev's last cache marker again: the same
// tools, system blocks and thinking parameter, and the same messages and blocks, cache markers
// aside.
func samePrefix(prev, cur *provider.Request) error {
	mi, bi := -1, -1
	for i, m := range prev.Messages {
		for j, b := range m.Content {
			if transcript.CacheControlOf(b) != nil {
				mi, bi = i, j
			}
		}
	}
	if mi < 0 {
		return nil
	}
	enc := func(b transcript.Block) string {
		if transcript.CacheControlOf(b) != nil {
			b = transcript.WithCacheControl(b, nil)
		}
		out, err := transcript.MarshalBlock(b)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(out)
	}
	if !slices.EqualFunc(prev.Tools, cur.Tools, func(a, b provider.Tool) bool { return a.Name == b.Name && bytes.Equal(a.Definition, b.Definition) }) {
		return errors.New("the tools changed")
	}
	if !slices.EqualFunc(prev.System, cur.System, func(a, b *transcript.Text) bool { return enc(a) == enc(b) }) {
		return errors.New("the system prompt changed")
	}
	if (prev.Thinking == nil) != (cur.Thinking == nil) || prev.Thinking != nil && *prev.Thinking != *cur.Thinking {
		return errors.New("the thinking parameter changed")
	}
	for i := 0; i <= mi; i++ {
		if i >= len(cur.Messages) || cur.Messages[i].Role != prev.Messages[i].Role {
			return fmt.Errorf("messages[%d] is gone or changed role", i)
		}
		last := len(prev.Messages[i].Content) - 1
		if i == mi {
			last = bi
		}
		for j := 0; j <= last; j++ {
			if j >= len(cur.Messages[i].Content) {
				return fmt.Errorf("messages[%d].content[%d] is gone", i, j)
			}
			if a, b := enc(prev.Messages[i].Content[j]), enc(cur.Messages[i].Content[j]); a != b {
				return fmt.Errorf("messages[%d].content[%d] changed: %s → %s", i, j, a, b)
			}
		}
	}
	return nil
}
