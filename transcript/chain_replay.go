package transcript

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Replay is a record that [BuildChain] left out of a chain because it repeats a record the
// chain holds, so that the view carries each content block once. Real Claude Code sessions
// hold both kinds: the same record written twice under one uuid, and the records of one
// response (one message.id) written again after a resume, under new uuids, with the same
// content blocks — and with them the tool results answering it. The first occurrence in file
// order is the one kept; the file is not changed.
type Replay struct {
	// UUID and Line name the record left out; Of and OfLine the record it repeats, which the
	// chain holds. Lines are 0 for records not read by a [Decoder].
	UUID   string
	Line   int
	Of     string
	OfLine int
	// MessageID is the message.id of an assistant record; "" for other records.
	MessageID string
	// Blocks is the number of content blocks the left-out record carries.
	Blocks int
	// SameUUID reports that the record repeats the uuid of the one it repeats; otherwise it has
	// its own uuid and the same content blocks: an assistant record of the same message.id, or
	// a user record with the same tool results.
	SameUUID bool
	// Differs reports a record under a repeated uuid whose content is not the same as the
	// first occurrence's. The first occurrence is kept all the same.
	Differs bool
}

// String describes the replay on one line, e.g. "line 9: record 5c… repeats 1 block(s) of
// response msg_01…, written as 3f… (line 5): left out".
func (r Replay) String() string {
	at := ""
	if r.Line > 0 {
		at = fmt.Sprintf("line %d: ", r.Line)
	}
	of := r.Of
	if r.OfLine > 0 {
		of = fmt.Sprintf("%s (line %d)", r.Of, r.OfLine)
	}
	resp := ""
	if r.MessageID != "" {
		resp = " of response " + r.MessageID
	}
	switch {
	case r.SameUUID && r.Differs:
		return fmt.Sprintf("%srecord %s%s written again under its uuid with other content: the first, line %d, is kept", at, r.UUID, resp, r.OfLine)
	case r.SameUUID:
		return fmt.Sprintf("%srecord %s%s written again under its uuid: left out, the first is line %d", at, r.UUID, resp, r.OfLine)
	case r.MessageID != "":
		return fmt.Sprintf("%srecord %s repeats %d block(s)%s, written as %s: left out", at, r.UUID, r.Blocks, resp, of)
	default:
		return fmt.Sprintf("%srecord %s repeats the tool results written as %s: left out", at, r.UUID, of)
	}
}

// replayAt is a replay found by position: the record left out, the one it repeats.
type replayAt struct {
	left, of int
	sameUUID bool
}

// replayList turns the replays found into [Replay] values, in file order of the records left
// out.
func replayList(records []Record, found []replayAt) []Replay {
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b replayAt) int { return cmp.Compare(a.left, b.left) })
	out := make([]Replay, len(found))
	for k, f := range found {
		r, of := &records[f.left], &records[f.of]
		rp := Replay{UUID: r.UUID, Line: r.Line, Of: of.UUID, OfLine: of.Line, SameUUID: f.sameUUID}
		if r.Message != nil {
			rp.Blocks = len(r.Message.Content)
			if r.Type == TypeAssistant {
				rp.MessageID = r.Message.ID
			}
		}
		if f.sameUUID {
			rp.Differs = !sameRecord(r, of)
		}
		out[k] = rp
	}
	return out
}

// replayKey tells apart the assistant records of a chain cheaply: two records written with the
// same content have the same key. It is the message.id, the kind of the first block and what
// distinguishes blocks of that kind: the start and length of the text, the tool_use id, the
// start of the signature. Equal keys are confirmed by comparing the blocks.
type replayKey struct {
	msgID string
	kind  BlockKind
	disc  string
	size  int
}

// discLen bounds the bytes of a block that a replayKey holds, so that it hashes fast.
const discLen = 32

// keyOf returns r's key.
func keyOf(r *Record) replayKey {
	k := replayKey{msgID: r.Message.ID}
	bs := r.Message.Content
	if len(bs) == 0 || IsNilBlock(bs[0]) {
		return k
	}
	k.kind = bs[0].Kind()
	var disc string
	switch b := bs[0].(type) {
	case *Text:
		disc = b.Text
	case *ToolUse:
		disc = b.ID
	case *Thinking:
		disc = b.Signature
	case *RedactedThinking:
		disc = b.Data
	case *ServerToolUse:
		disc = b.ID
	}
	k.disc, k.size = disc[:min(len(disc), discLen)], len(disc)
	return k
}

// onlyBlank reports whether bs holds nothing but whitespace text (or nothing): such a record
// repeats nothing, since blocks like it occur more than once in one response and the view
// drops them anyway.
func onlyBlank(bs []Block) bool {
	for _, b := range bs {
		if t, ok := b.(*Text); !ok || strings.TrimSpace(t.Text) != "" {
			return false
		}
	}
	return true
}

// sameBlocks reports whether two block lists encode to the same JSON. A cheap look at each
// pair comes first, so that blocks that differ are seldom encoded.
func sameBlocks(a, b []Block) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !maybeSame(a[i], b[i]) {
			return false
		}
	}
	for i := range a {
		ea, err1 := MarshalBlock(a[i])
		eb, err2 := MarshalBlock(b[i])
		if err1 != nil || err2 != nil || !bytes.Equal(ea, eb) {
			return false
		}
	}
	return true
}

// maybeSame is false when two blocks surely differ.
func maybeSame(a, b Block) bool {
	if IsNilBlock(a) || IsNilBlock(b) || a.Kind() != b.Kind() {
		return false
	}
	switch a := a.(type) {
	case *Text:
		b, ok := b.(*Text)
		return ok && a.Text == b.Text
	case *ToolUse:
		b, ok := b.(*ToolUse)
		return ok && a.ID == b.ID
	case *Thinking:
		b, ok := b.(*Thinking)
		return ok && a.Signature == b.Signature && a.Thinking == b.Thinking
	case *RedactedThinking:
		b, ok := b.(*RedactedThinking)
		return ok && a.Data == b.Data
	case *ServerToolUse:
		b, ok := b.(*ServerToolUse)
		return ok && a.ID == b.ID
	}
	return true
}

// sameRecord reports whether two records encode to the same line.
func sameRecord(a, b *Record) bool {
	ea, err1 := a.MarshalJSON()
	eb, err2 := b.MarshalJSON()
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}
