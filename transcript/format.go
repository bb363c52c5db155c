package transcript

import (
	"bytes"
	"encoding/json"
	"io"
)

// Format is the format of a transcript file, as [DetectFormat] tells it from the content.
type Format string

// The transcript formats [Read] reads.
const (
	// FormatClaudeCode is Claude Code's session format, which is also the library's own: one
	// record per line, written back as read. It is the default for content that is not
	// recognisably another format.
	FormatClaudeCode Format = "claude-code"
	// FormatCodex is an OpenAI Codex CLI rollout (rollout-*.jsonl): one {"timestamp", "type",
	// "payload"} object per line. It is read-only: see docs/codex.md and [ErrCodexAppend].
	FormatCodex Format = "codex"
)

// sniffLines is how many non-blank lines DetectFormat looks at before it settles on the
// default: a damaged first line does not decide the format of the file.
const sniffLines = 8

// sniffBytes is how much of a file DetectFormat needs: a Codex line names its type within its
// first hundred bytes, and the cap keeps the look at the head cheap.
const sniffBytes = 64 << 10

// DetectFormat returns the format of a transcript from its first bytes (any prefix of the
// file; 64 KiB is plenty). The first line that is a JSON object with a string "type", or that
// is a line of an older Codex rollout, decides: a Codex rollout line has a "payload" and one
// of Codex's item types (session_meta, response_item, event_msg, turn_context, compacted);
// a rollout from before that wrapper (see [CodexLegacy]) starts with a session metadata line
// (a string "id" and "timestamp", no "type") and holds bare response items (message,
// function_call, function_call_output, reasoning, local_shell_call, each with the key its
// type requires) and {"record_type": …} lines; both are [FormatCodex]. Anything else is
// [FormatClaudeCode]. Lines that are not JSON objects are passed over (at most eight lines
// are looked at), a line cut short by the end of head counts with the keys it shows, and
// empty input is FormatClaudeCode. The file name plays no part.
func DetectFormat(head []byte) Format {
	f, _ := detect(head)
	return f
}

// detect is [DetectFormat] with the variant of the format: "" or [CodexLegacy].
func detect(head []byte) (Format, string) {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	seen := 0
	for len(head) > 0 && seen < sniffLines {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		line = trimJSONSpace(line)
		if len(line) == 0 {
			continue
		}
		seen++
		k, ok := topLevelKeys(line)
		if !ok {
			continue
		}
		if k.typ != "" && k.payload && codexLineTypes[k.typ] {
			return FormatCodex, ""
		}
		if k.legacyCodex() {
			return FormatCodex, CodexLegacy
		}
		if k.typ != "" {
			return FormatClaudeCode, ""
		}
	}
	return FormatClaudeCode, ""
}

// CodexLegacy is the [Transcript.Variant] of an OpenAI Codex rollout written before the
// {"timestamp", "type", "payload"} wrapper (Codex CLI of spring and summer 2025): a first line
// of session metadata ({"id", "timestamp", "instructions", "git", …}, no "type"), then one bare
// response item per line, and {"record_type": "state"} lines; some versions tag each line with
// a "record_type" and a "timestamp" instead. See docs/codex.md.
const CodexLegacy = "codex-legacy"

// legacyItemKeys names, for each response item type a pre-wrapper rollout holds bare, the key
// such an item always has: with it, a line of that type is taken for a Codex item.
var legacyItemKeys = map[string]string{
	"message": "role", "function_call": "call_id", "function_call_output": "call_id",
	"reasoning": "summary", "local_shell_call": "action",
}

// legacyRecordTypes are the record_type values of a pre-wrapper rollout's lines.
var legacyRecordTypes = map[string]bool{
	"state": true, "response": true, "event": true, "session_meta": true, "prev_session_meta": true,
}

// legacyCodex reports whether the keys are those of a line of a pre-wrapper Codex rollout: the
// session metadata line, a bare response item, or a line tagged with a record_type.
func (k lineKeys) legacyCodex() bool {
	if k.payload {
		return false
	}
	if !k.hasType {
		// A line cut short may have its type still to come.
		return k.complete && ((k.id && k.timestamp) || legacyRecordTypes[k.recordType])
	}
	key, ok := legacyItemKeys[k.typ]
	return ok && k.keys[key]
}

// codexLineTypes are the top-level types of a Codex rollout line (RolloutItem in Codex's
// protocol).
var codexLineTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

// lineKeys is what [topLevelKeys] tells of a line's top-level keys.
type lineKeys struct {
	typ        string // the string "type", "" when none
	hasType    bool   // a "type" key of any value
	recordType string // the string "record_type"
	payload    bool   // a "payload" key
	id         bool   // a string "id"
	timestamp  bool   // a string "timestamp"
	complete   bool   // the object ends within the line: no key is still to come
	keys       map[string]bool
}

// topLevelKeys reads the top-level keys of the JSON object in line (which may be cut short);
// ok is false when line is not an object. Values are skipped token by token, so a long line
// costs no buffer of its own.
func topLevelKeys(line []byte) (k lineKeys, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return k, false
	}
	k.keys = map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		k.keys[key] = true
		v, err := dec.Token()
		if err != nil {
			break
		}
		s, isStr := v.(string)
		switch key {
		case "type":
			k.hasType = true
			if isStr {
				k.typ = s
			}
		case "record_type":
			k.recordType = s
		case "payload":
			k.payload = true
		case "id":
			k.id = isStr
		case "timestamp":
			k.timestamp = isStr
		}
		if d, isDelim := v.(json.Delim); isDelim && skipValue(dec, d) != nil {
			return k, true
		}
	}
	t, err := dec.Token()
	k.complete = err == nil && t == json.Delim('}')
	return k, true
}

// skipValue skips one JSON value of dec; open is the delimiter already read of it, or 0.
func skipValue(dec *json.Decoder, open json.Delim) error {
	depth := 0
	if open == '{' || open == '[' {
		depth = 1
	} else {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok && (d == '{' || d == '[') {
			depth = 1
		}
	}
	for depth > 0 {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// sniff reads the head of r for [DetectFormat] and returns its format, its variant and a reader that
// yields all of r from its start, including a read error met while sniffing.
func sniff(r io.Reader) (Format, string, io.Reader) {
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	rest := r
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		rest = errorReader{err}
	}
	f, variant := detect(head)
	return f, variant, io.MultiReader(bytes.NewReader(head), rest)
}

// errorReader returns err from every Read.
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }
