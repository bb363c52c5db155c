package agentctx

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
)

// Invalid UTF-8. The provider rejects a body that is not valid UTF-8, and a JSON string
// escape of half a surrogate pair ("\ud83d" alone) that the Go decoder would quietly turn
// into U+FFFD. Strings decoded from a transcript are already valid (encoding/json replaces
// each invalid byte by U+FFFD), but raw JSON fields (tool inputs, server tool blocks,
// citations, search results) keep their bytes, and blocks built in Go may hold anything.
// Normalize replaces each invalid byte, and each lone surrogate escape, by U+FFFD, and
// reports it, except in thinking: see [normalizer.clean].

// textRepair collects the UTF-8 repairs of one block, reported as one action. Field names
// are built only for a repair, so that a block with nothing to repair costs no allocation.
type textRepair struct {
	n      int      // sequences replaced
	fields []string // where, as JSON paths inside the block
	item   int      // 1 + the index of the tool_result content block being repaired; 0 outside
}

func (f *textRepair) note(field string, n int) {
	if n == 0 {
		return
	}
	f.n += n
	if f.item > 0 {
		field = fmt.Sprintf("content[%d].%s", f.item-1, field)
	}
	f.fields = append(f.fields, field)
}

// str repairs a string in place.
func (f *textRepair) str(field string, s *string) {
	v, n := wire.ValidUTF8(*s)
	*s = v
	f.note(field, n)
}

// json repairs raw JSON text in place.
func (f *textRepair) json(field string, raw *json.RawMessage) {
	v, n := wire.ValidJSONText(*raw)
	*raw = v
	f.note(field, n)
}

// source repairs a media source in place; its map of unknown fields is copied before a write.
func (f *textRepair) source(s *transcript.MediaSource) {
	f.str("source.media_type", &s.MediaType)
	f.str("source.data", &s.Data)
	f.str("source.url", &s.URL)
	f.str("source.file_id", &s.FileID)
	copied := false
	for k, v := range s.Extra {
		fixed, n := wire.ValidJSONText(v)
		if n == 0 {
			continue
		}
		if !copied {
			s.Extra, copied = maps.Clone(s.Extra), true
		}
		s.Extra[k] = fixed
		f.note("source."+k, n)
	}
}

// block repairs the text of a block that the request owns (normalize built it), and returns
// it; a search_result block, which is shared with the transcript, is copied when it changes.
// Thinking and redacted_thinking blocks are returned as they are: they are never rewritten.
func (f *textRepair) block(b transcript.Block) transcript.Block {
	switch b := b.(type) {
	case *transcript.Text:
		f.str("text", &b.Text)
		f.json("citations", &b.Citations)
	case *transcript.Image:
		f.source(&b.Source)
	case *transcript.Document:
		f.source(&b.Source)
		f.str("title", &b.Title)
		f.str("context", &b.Context)
		f.json("citations", &b.Citations)
	case *transcript.ToolUse:
		f.json("input", &b.Input)
	case *transcript.ToolResult:
		for i, c := range b.Content {
			f.item = i + 1
			b.Content[i] = f.block(c)
		}
		f.item = 0
	case *transcript.ServerToolUse:
		f.str("name", &b.Name)
		f.json("input", &b.Input)
	case *transcript.ServerToolResult:
		f.json("content", &b.Content)
	case *transcript.UnknownBlock:
		raw := b.JSON
		before := f.n
		f.json("json", &raw)
		if f.n > before {
			return &transcript.UnknownBlock{Type: b.Type, JSON: raw}
		}
	}
	return b
}

// detail describes the repair for the report.
func (f *textRepair) detail(what string) string {
	return fmt.Sprintf("%d invalid UTF-8 sequences replaced by U+FFFD in %s (%s)", f.n, what, strings.Join(f.fields, ", "))
}

// repairText repairs the text of a block on its way to the request and reports it.
func (n *normalizer) repairText(nb *nblock) {
	var f textRepair
	nb.b = f.block(nb.b)
	if f.n > 0 {
		n.act(ActionRepaired, nb.uuid, toolID(nb.b), f.detail(string(nb.b.Kind())+" block"), 0)
	}
}

// repairSystem repairs the text of the system prompt (the caller's and the base context's).
// t.system is the turn's own slice; the blocks are copied before they change.
func (n *normalizer) repairSystem() {
	for i, s := range n.t.system {
		if s == nil {
			continue
		}
		c := *s
		var f textRepair
		f.block(&c)
		if f.n > 0 {
			n.t.system[i] = &c
			n.act(ActionRepaired, "", "", f.detail(fmt.Sprintf("system[%d]", i)), 0)
		}
	}
}
