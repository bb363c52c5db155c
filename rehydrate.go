package agentctx

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx/internal/prose"
	"github.com/agentctx/agentctx/transcript"
)

// Rehydration defaults: Claude Code's post-compact budgets, in tokens, at a window of 200,000
// tokens and more; below, the token budgets scale with the window (see the package doc's
// table).
const (
	defaultRehydrateFiles       = 5
	defaultRehydrateFileTokens  = 5_000
	defaultRehydrateFilesTokens = 50_000
	defaultRehydrateSkillTokens = 5_000
	defaultRehydrateSkillsTotal = 25_000
)

// DefaultFileTools returns the names of the tools whose file_path (or notebook_path) input
// names a file the conversation works with: Claude Code's file tools. The caller owns the
// slice.
func DefaultFileTools() []string {
	return []string{"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"}
}

// RehydrateConfig chooses what a compaction re-injects after its summary, as meta user records
// of their own (see [transcript.Rehydration]): the files the conversation worked with most recently,
// re-read so the model sees them as they are now; the content of the skills it invoked; the
// last plan (ExitPlanMode) and the last todo list (TodoWrite). Files and skills already in the
// kept tail are not injected again; a text over its budget is cut at a line with a marker. The
// zero value is the default, Claude Code's budgets at a window of 200,000 tokens and more: at
// most 5 files of 5,000 tokens each and 50,000 in all, skills of 5,000 tokens each and 25,000
// in all; below, each token budget is scaled to the window (window/40 a file, window/4 in all,
// window/40 a skill, window/8 all skills; at least 200, 2,000, 200 and 1,000).
//
// Only files whose call succeeded count: a read the runtime refused or that failed is no
// licence to read the file now. Files are read through Files. The default reads them from
// disk, confined to the session's working directory (the "cwd" its records carry) with
// [os.Root]: a path outside it, a symbolic link leading out of it, a missing file, one that is
// not a regular file or not UTF-8 text is skipped and the Report says so. The paths and the
// working directory come from the transcript, which the default trusts as the runtime's own:
// for transcripts from elsewhere set Files (or DisableFiles). The command-line tool reads no
// files unless asked (--rehydrate-files).
type RehydrateConfig struct {
	// Files reads the files to re-inject. Nil: [DirFiles] at the session's working directory;
	// no files when the records name none.
	Files FileSource
	// DisableFiles, DisableSkills and DisableTodos turn the parts off (DisableTodos also
	// covers the plan); DisableAnnouncements turns off the announcements (see
	// [transcript.Announcement]: changes to the tools, MCP servers and agents, the state of
	// background tasks), re-injected like skills, within the skills' budgets.
	DisableFiles, DisableSkills, DisableTodos, DisableAnnouncements bool
	// MaxFiles, MaxFileTokens and MaxFilesTokens bound the files. Zero: 5, and 5,000 and
	// 50,000 scaled to the window.
	MaxFiles, MaxFileTokens, MaxFilesTokens int
	// MaxSkillTokens and MaxSkillsTokens bound the skills. Zero: 5,000 and 25,000 scaled to
	// the window.
	MaxSkillTokens, MaxSkillsTokens int
	// FileTools names the tools whose calls name files. Nil: [DefaultFileTools].
	FileTools []string
}

func (c RehydrateConfig) validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxFiles", c.MaxFiles}, {"MaxFileTokens", c.MaxFileTokens}, {"MaxFilesTokens", c.MaxFilesTokens}, {"MaxSkillTokens", c.MaxSkillTokens}, {"MaxSkillsTokens", c.MaxSkillsTokens}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("agentctx: Compact.Rehydrate.%s %d is negative", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// maxFileTokens, maxFilesTokens, maxSkillTokens and maxSkillsTokens are the budgets for
// window.
func (c RehydrateConfig) maxFileTokens(window int) int {
	return cmp.Or(c.MaxFileTokens, scaled(defaultRehydrateFileTokens, 200, window))
}

func (c RehydrateConfig) maxFilesTokens(window int) int {
	return cmp.Or(c.MaxFilesTokens, scaled(defaultRehydrateFilesTokens, 2_000, window))
}

func (c RehydrateConfig) maxSkillTokens(window int) int {
	return cmp.Or(c.MaxSkillTokens, scaled(defaultRehydrateSkillTokens, 200, window))
}

func (c RehydrateConfig) maxSkillsTokens(window int) int {
	return cmp.Or(c.MaxSkillsTokens, scaled(defaultRehydrateSkillsTotal, 1_000, window))
}

// FileSource reads the files a compaction re-injects. Implementations must be safe for
// concurrent use when one Pipeline serves several conversations.
type FileSource interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
}

// FileSourceFunc adapts a function to a [FileSource].
type FileSourceFunc func(ctx context.Context, path string) ([]byte, error)

// ReadFile calls f(ctx, path).
func (f FileSourceFunc) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return f(ctx, path)
}

// ErrOutsideRoot is returned by [DirFiles] for a path outside its root.
var ErrOutsideRoot = errors.New("agentctx: path is outside the working directory")

// maxRehydrateRead is the most [DirFiles] reads of one file: far more than any file's budget.
const maxRehydrateRead = 4 << 20

// DirFiles is a [FileSource] reading files under Root through [os.Root], so that neither a
// path nor a symbolic link can lead out of it. Paths are absolute or relative to Root. It reads
// at most 4 MiB of a file.
type DirFiles struct {
	Root string
}

// ReadFile reads path under Root; a path outside Root fails with [ErrOutsideRoot], one that is
// not a regular file with an error naming it. It stops at ctx's end.
func (d DirFiles) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel := path
	if filepath.IsAbs(path) {
		var err error
		if rel, err = filepath.Rel(d.Root, path); err != nil {
			return nil, ErrOutsideRoot
		}
	}
	if !filepath.IsLocal(rel) {
		return nil, ErrOutsideRoot
	}
	root, err := os.OpenRoot(d.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// A path that is not a regular file is refused without being opened (opening a device
	// can have effects of its own); openRegular checks again what it opened, since another
	// file may take the path in between.
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, rootError(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	f, size, err := openRegular(root, rel, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(ctx, f, size, maxRehydrateRead)
}

// openRegular opens rel under root for reading and returns the file and its size, or an error
// naming path unless what it opened is a regular file. It opens without blocking
// ([openFlags]): a named pipe put in the file's place would otherwise keep the open waiting
// for a writer, whatever the context says.
func openRegular(root *os.Root, rel, path string) (*os.File, int64, error) {
	f, err := root.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, 0, rootError(err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file", path)
	}
	return f, fi.Size(), nil
}

// readLimited reads r to its end or to its first limit bytes, whichever comes first, and
// stops at ctx's end, which it checks before each read. size is what r is expected to hold.
func readLimited(ctx context.Context, r io.Reader, size int64, limit int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(int(min(max(size, 0)+512, int64(limit))))
	if _, err := buf.ReadFrom(io.LimitReader(ctxReader{ctx, r}, int64(limit))); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ctxReader is a reader that fails with its context's error once the context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read checks the context, then reads from r.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// rootError maps an os.Root error for a path that leaves the root (through a symbolic link)
// to ErrOutsideRoot. os.Root reports it with the message "path escapes from parent" and no
// sentinel error.
func rootError(err error) error {
	if strings.Contains(err.Error(), "escapes from parent") {
		return ErrOutsideRoot
	}
	return err
}

// attachment is one piece of rehydration (or a session-start hook's context) to install.
type attachment struct {
	kind, path, skill string // skill: the skill's (or hook's) name
	text              string
	announce          *transcript.Announcement // an announcement's mark, carried over
}

// attachmentRecords returns the meta user records that re-inject atts, chained from parent: each
// record's uuid derives from ns, key and what it re-injects, so the same re-injection is the
// same record.
func attachmentRecords(t *turn, atts []attachment, ns, key, parent string, sidechain bool) []transcript.Record {
	stamp, cwd := transcript.Timestamp(t.now), transcript.LastCwd(t.in.Records)
	recs := make([]transcript.Record, 0, len(atts))
	for _, a := range atts {
		r := transcript.Record{
			Type:         transcript.TypeUser,
			UUID:         transcript.ContentUUID(ns, key+"\x00"+a.kind+"\x00"+a.path+"\x00"+a.skill),
			ParentUUID:   parent,
			IsSidechain:  sidechain,
			IsMeta:       true,
			SessionID:    t.sessionID,
			Timestamp:    stamp,
			Cwd:          cwd,
			Rehydration:  &transcript.Rehydration{Kind: a.kind, Path: a.path, Name: a.skill},
			Announcement: a.announce,
			Message:      &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: a.text}}},
		}
		recs = append(recs, r)
		parent = r.UUID
	}
	return recs
}

// rehydratedNames lists what was re-injected, for the Report.
func rehydratedNames(groups ...[]attachment) []string {
	var out []string
	for _, g := range groups {
		for _, a := range g {
			out = append(out, strings.TrimSpace(a.kind+" "+a.path+a.skill))
		}
	}
	return out
}

// The wording of rehydration records.
const (
	fileHead  = "<system-reminder>\nThe conversation was compacted. This file was one it had been working with; here it is as it is on disk now: %s\n\n"
	skillHead = "<system-reminder>\nThe conversation was compacted. The skill %s had been invoked in it; its instructions follow again.\n\n"
	todoHead  = "<system-reminder>\nThe conversation was compacted. This was the todo list at that point:\n"
	planHead  = "<system-reminder>\nThe conversation was compacted. This was the plan at that point:\n\n"
	tailNote  = "\n</system-reminder>"
	cutNote   = "\n[cut here to fit the context: %d more lines not shown; read it again for the rest]"
)

// rehydrate returns what to re-inject after a summary when the view is kept from items[cut:],
// with share of the budgets, and notes on what was skipped.
func (co *compactor) rehydrate(ctx context.Context, t *turn, cut int, share float64) ([]attachment, []string) {
	if share <= 0 {
		return nil, nil
	}
	c := co.cfg.Rehydrate
	cal := calibration{ratio: t.report.Pressure.Ratio}
	w := co.window
	budget := func(v int) int { return int(float64(v) * share) }
	var out []attachment
	var notes []string
	if !c.DisableFiles {
		files, n := co.rehydrateFiles(ctx, t, cut, cal, budget(c.maxFileTokens(w)), budget(c.maxFilesTokens(w)))
		out, notes = append(out, files...), append(notes, n...)
	}
	if !c.DisableSkills {
		out = append(out, co.rehydrateSkills(t, cut, cal, budget(c.maxSkillTokens(w)), budget(c.maxSkillsTokens(w)))...)
	}
	if !c.DisableTodos {
		out = append(out, co.rehydrateState(t, cut, cal, budget(c.maxSkillTokens(w)))...)
	}
	if !c.DisableAnnouncements {
		out = append(out, co.rehydrateAnnouncements(t, cut, cal, budget(c.maxSkillTokens(w)), budget(c.maxSkillsTokens(w)))...)
	}
	return out, notes
}

// toolCall is a tool_use of the view and where it is: item and block index.
type toolCall struct {
	at, block int
	tu        *transcript.ToolUse
}

// toolCalls lists the view's client tool calls, in view order.
func toolCalls(items []item) []toolCall {
	var out []toolCall
	for i := range items {
		if items[i].role != transcript.RoleAssistant {
			continue
		}
		for j, b := range items[i].blocks {
			if tu, ok := b.(*transcript.ToolUse); ok {
				out = append(out, toolCall{i, j, tu})
			}
		}
	}
	return out
}

// rehydrateFiles re-reads the files the view worked with most recently.
func (co *compactor) rehydrateFiles(ctx context.Context, t *turn, cut int, cal calibration, each, total int) ([]attachment, []string) {
	c := co.cfg.Rehydrate
	tools := c.FileTools
	if tools == nil {
		tools = DefaultFileTools()
	}
	cwd := transcript.LastCwd(t.in.Records)
	src := c.Files
	if src == nil {
		if cwd == "" {
			return nil, nil
		}
		src = DirFiles{Root: cwd}
	}
	// The paths of calls that succeeded: a call the runtime refused or that failed is no
	// licence to read the file now.
	ok := map[string]bool{} // tool_use id → answered without error
	for i := range t.items {
		for _, b := range t.items[i].blocks {
			if tr, isResult := b.(*transcript.ToolResult); isResult && t.items[i].role == transcript.RoleUser {
				ok[tr.ToolUseID] = !tr.IsError
			}
		}
	}
	// A file is known by its key (fileKey), whatever the spelling of its path: the
	// attachment and the Report take the spelling of its latest mention.
	type mention struct {
		item, block int
		path        string
	}
	last := map[string]mention{} // file key → its latest mention
	inTail := map[string]bool{}  // read again in the kept tail: the model sees it there
	see := func(path string, m mention) {
		key := fileKey(path, cwd)
		if old, seen := last[key]; !seen || cmp.Or(cmp.Compare(m.item, old.item), cmp.Compare(m.block, old.block)) >= 0 {
			m.path = path
			last[key] = m
		}
	}
	for _, tc := range toolCalls(t.items) {
		if !slices.Contains(tools, tc.tu.Name) || !ok[tc.tu.ID] {
			continue
		}
		if path := prose.InputString(tc.tu.Input, "file_path", "notebook_path"); path != "" {
			see(path, mention{item: tc.at, block: tc.block})
			if tc.at >= cut && tc.tu.Name == "Read" {
				inTail[fileKey(path, cwd)] = true
			}
		}
	}
	for i := range t.items {
		if r := t.items[i].rec; r != nil && r.Rehydration != nil && r.Rehydration.Kind == transcript.RehydrateFile {
			see(r.Rehydration.Path, mention{item: i})
		}
	}
	files := make([]mention, 0, len(last))
	for key, m := range last {
		if !inTail[key] {
			files = append(files, m)
		}
	}
	// Newest first; mentions in one message by block order, then by path: map order must
	// never reach the request.
	slices.SortFunc(files, func(a, b mention) int {
		return cmp.Or(cmp.Compare(b.item, a.item), cmp.Compare(b.block, a.block), strings.Compare(a.path, b.path))
	})
	var out []attachment
	var notes []string
	used := 0
	for _, m := range files {
		if len(out) == cmp.Or(c.MaxFiles, defaultRehydrateFiles) || used >= total {
			break
		}
		path := m.path
		data, err := src.ReadFile(ctx, path)
		switch {
		case errors.Is(err, ErrOutsideRoot):
			notes = append(notes, fmt.Sprintf("file %s skipped: outside the working directory", path))
			continue
		case errors.Is(err, fs.ErrNotExist):
			notes = append(notes, fmt.Sprintf("file %s skipped: no longer on disk", path))
			continue
		case err != nil:
			notes = append(notes, fmt.Sprintf("file %s skipped: %v", path, err))
			continue
		case !utf8.Valid(data) || slices.Contains(data, 0):
			notes = append(notes, fmt.Sprintf("file %s skipped: not UTF-8 text", path))
			continue
		}
		head := fmt.Sprintf(fileHead, path)
		room := min(each, total-used) - cal.scale(co.counter.Text(head+tailNote))
		body, n := co.fitText(string(data), room, cal)
		if body == "" {
			continue
		}
		used += n
		out = append(out, attachment{kind: transcript.RehydrateFile, path: path, text: head + body + tailNote})
	}
	return out, notes
}

// fileKey returns the key under which rehydration knows the file at path: its cleaned
// absolute form, a relative path taken from cwd (the session's working directory), so that
// "/repo/a.go", "./a.go" and "a.go" in /repo are one file, and so is a path into a
// subdirectory and back up out of it. Without a cwd a relative path stays relative, cleaned.
func fileKey(path, cwd string) string {
	if !filepath.IsAbs(path) && cwd != "" {
		return filepath.Join(cwd, path)
	}
	return filepath.Clean(path)
}

// rehydrateSkills re-injects the content of the skills the view invoked, newest first.
func (co *compactor) rehydrateSkills(t *turn, cut int, cal calibration, each, total int) []attachment {
	names := map[string]string{} // Skill tool_use id → skill name
	for _, tc := range toolCalls(t.items) {
		if tc.tu.Name == "Skill" {
			names[tc.tu.ID] = prose.InputString(tc.tu.Input, "skill", "command", "name")
		}
	}
	type found struct {
		at   int
		text string
	}
	latest := map[string]found{}
	for i := range t.items {
		it := &t.items[i]
		r := it.rec
		if r == nil || it.role != transcript.RoleUser {
			continue
		}
		name := ""
		switch {
		case r.Rehydration != nil && r.Rehydration.Kind == transcript.RehydrateSkill:
			name = r.Rehydration.Name
		case r.SourceToolUseID != "" && names[r.SourceToolUseID] != "":
			name = names[r.SourceToolUseID]
		default:
			continue
		}
		text := transcript.TextOf(it.blocks)
		if r.Rehydration != nil { // re-injected earlier: strip the wrapper
			text = strings.TrimSuffix(strings.TrimPrefix(text, fmt.Sprintf(skillHead, name)), tailNote)
		}
		if i >= cut {
			latest[name] = found{at: -1} // in the kept tail
			continue
		}
		latest[name] = found{at: i, text: text}
	}
	order := make([]string, 0, len(latest))
	for name, f := range latest {
		if f.at >= 0 && strings.TrimSpace(f.text) != "" {
			order = append(order, name)
		}
	}
	slices.SortFunc(order, func(a, b string) int { return latest[b].at - latest[a].at })
	var out []attachment
	used := 0
	for _, name := range order {
		head := fmt.Sprintf(skillHead, name)
		room := min(each, total-used) - cal.scale(co.counter.Text(head+tailNote))
		body, n := co.fitText(latest[name].text, room, cal)
		if body == "" {
			continue
		}
		used += n
		out = append(out, attachment{kind: transcript.RehydrateSkill, skill: name, text: head + body + tailNote})
	}
	return out
}

// rehydrateState re-injects the last plan and the last todo list, unless the kept tail shows
// them, each within each calibrated tokens.
func (co *compactor) rehydrateState(t *turn, cut int, cal calibration, each int) []attachment {
	var out []attachment
	for _, k := range []struct {
		kind, tool, head string
		render           func(json.RawMessage) string
	}{
		{transcript.RehydratePlan, "ExitPlanMode", planHead, func(in json.RawMessage) string { return prose.InputString(in, "plan") }},
		{transcript.RehydrateTodos, "TodoWrite", todoHead, prose.Todos},
	} {
		text, at := "", -1
		for _, tc := range toolCalls(t.items) {
			if tc.tu.Name == k.tool {
				if s := k.render(tc.tu.Input); s != "" {
					text, at = k.head+s+tailNote, tc.at
				}
			}
		}
		for i := range t.items {
			if r := t.items[i].rec; r != nil && r.Rehydration != nil && r.Rehydration.Kind == k.kind && i > at {
				text, at = transcript.TextOf(t.items[i].blocks), i
			}
		}
		if at >= 0 && at < cut {
			body := strings.TrimSuffix(strings.TrimPrefix(text, k.head), tailNote)
			if fitted, _ := co.fitText(body, each-cal.scale(co.counter.Text(k.head+tailNote)), cal); fitted != "" {
				out = append(out, attachment{kind: k.kind, text: k.head + fitted + tailNote})
			}
		}
	}
	return out
}

// fitText returns text cut at a line (at a space, when the text's last half holds no line
// break) so that it holds at most room calibrated tokens (with a marker saying how many lines
// were left out), and its size; "" when room is too small for a useful part.
func (co *compactor) fitText(text string, room int, cal calibration) (string, int) {
	return co.fitNoted(text, room, cal, func(lines int) string { return fmt.Sprintf(cutNote, lines) })
}

// fitNoted is fitText with the note a cut text ends with, given the number of lines cut.
func (co *compactor) fitNoted(text string, room int, cal calibration, note func(lines int) string) (string, int) {
	if room < 50 {
		return "", 0
	}
	// A first cut by bytes keeps tokenizing bounded: no text holds fewer than one token per
	// eight bytes in practice.
	body := text
	if len(body) > room*8 {
		body = body[:room*8]
	}
	for range 8 {
		if len(body) < len(text) {
			// At the last line break, or, when the last half holds none (one long line), at
			// the last space: never down to a stub of what fits.
			if i := strings.LastIndexByte(body, '\n'); i > len(body)/2 {
				body = body[:i]
			} else if i := strings.LastIndexByte(body, ' '); i > len(body)/2 {
				body = body[:i]
			}
			for len(body) > 0 && !utf8.ValidString(body) {
				body = body[:len(body)-1]
			}
		}
		out := body
		if len(body) < len(text) {
			out += note(strings.Count(text[len(body):], "\n") + 1)
		}
		n := cal.scale(co.counter.Text(out))
		if n <= room {
			return out, n
		}
		body = body[:len(body)*room/n*9/10]
	}
	return "", 0
}
