package agentctx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

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
	v, n := validUTF8(*s)
	*s = v
	f.note(field, n)
}

// json repairs raw JSON text in place.
func (f *textRepair) json(field string, raw *json.RawMessage) {
	v, n := validJSONText(*raw)
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
		fixed, n := validJSONText(v)
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

// validUTF8 returns s with each byte that does not begin a valid UTF-8 sequence replaced by
// U+FFFD (as encoding/json does when it decodes a string, so a block built in Go and the same
// block read from a transcript give the same text), and the number of bytes replaced.
func validUTF8(s string) (string, int) {
	if utf8.ValidString(s) {
		return s, 0
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
			n++
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), n
}

// validJSONText returns raw with each byte that does not begin a valid UTF-8 sequence
// replaced by U+FFFD and each \u escape of an unpaired surrogate replaced by \ufffd, and the
// number of replacements. Neither touches the structure: invalid bytes and escapes can only
// stand inside strings (outside them JSON is ASCII without backslashes), so valid JSON stays
// valid JSON with its key order and spacing; raw is returned as it is when nothing needs
// repair.
func validJSONText(raw json.RawMessage) (json.RawMessage, int) {
	if utf8.Valid(raw) && !hasLoneSurrogate(raw) {
		return raw, 0
	}
	out := make(json.RawMessage, 0, len(raw)+8)
	n := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			size := escapeLen(raw[i:])
			if size < 0 {
				out = append(out, `\ufffd`...)
				n++
				i += 6
				continue
			}
			out = append(out, raw[i:i+size]...)
			i += size
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
				n++
			} else {
				out = append(out, raw[i:i+size]...)
			}
			i += size
		}
	}
	return out, n
}

// hasLoneSurrogate reports whether raw holds a \u escape of an unpaired surrogate.
func hasLoneSurrogate(raw []byte) bool {
	for i := bytes.IndexByte(raw, '\\'); i >= 0; {
		size := escapeLen(raw[i:])
		if size < 0 {
			return true
		}
		j := bytes.IndexByte(raw[i+size:], '\\')
		if j < 0 {
			return false
		}
		i += size + j
	}
	return false
}

// escapeLen returns the length of the escape that s starts with (s[0] is a backslash): 12 for
// an escaped surrogate pair, 6 for any other \u escape, 2 for the others (and for a truncated
// one, 1); or -1 when it is a \u escape of an unpaired surrogate, which is 6 bytes long.
func escapeLen(s []byte) int {
	if len(s) < 2 {
		return len(s)
	}
	if s[1] != 'u' {
		return 2
	}
	r, ok := hex4(s[2:])
	switch {
	case !ok:
		return 2
	case !utf16.IsSurrogate(r):
		return 6
	case r < 0xdc00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u':
		if r2, ok := hex4(s[8:]); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
			return 12
		}
	}
	return -1
}

// hex4 decodes the four hex digits s starts with.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
