package agentctx

import (
	"bytes"
	"encoding/json"
	"io"
)

// Format is the format of a transcript file, as [DetectFormat] tells it from the content.
type Format string

// The transcript formats [ReadTranscript] reads.
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
// file; 64 KiB is plenty). The first line that is a JSON object with a string "type" decides:
// a Codex rollout line has a "payload" and one of Codex's item types (session_meta,
// response_item, event_msg, turn_context, compacted); anything else is
// [FormatClaudeCode]. Lines that are not JSON objects are passed over (at most eight lines
// are looked at), a line cut short by the end of head counts with the keys it shows, and
// empty input is FormatClaudeCode. The file name plays no part.
func DetectFormat(head []byte) Format {
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
		typ, payload, ok := topLevelType(line)
		if !ok {
			continue
		}
		if payload && codexLineTypes[typ] {
			return FormatCodex
		}
		return FormatClaudeCode
	}
	return FormatClaudeCode
}

// codexLineTypes are the top-level types of a Codex rollout line (RolloutItem in Codex's
// protocol).
var codexLineTypes = map[string]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

// topLevelType reads the top-level keys of the JSON object in line (which may be cut short)
// and returns its string "type" and whether it has a "payload" key; ok is false when line
// is not an object or shows no string type before it ends. Values are skipped token by
// token, so a long line costs no buffer of its own.
func topLevelType(line []byte) (typ string, payload, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := k.(string)
		switch key {
		case "type":
			v, err := dec.Token()
			if err != nil {
				return typ, payload, typ != ""
			}
			if s, isStr := v.(string); isStr {
				typ = s
				continue
			}
			if d, isDelim := v.(json.Delim); isDelim && skipValue(dec, d) != nil {
				return typ, payload, typ != ""
			}
			continue
		case "payload":
			payload = true
			if typ != "" {
				return typ, payload, true
			}
		}
		if skipValue(dec, 0) != nil {
			break
		}
	}
	return typ, payload, typ != ""
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

// sniff reads the head of r for [DetectFormat] and returns its format and a reader that
// yields all of r from its start, including a read error met while sniffing.
func sniff(r io.Reader) (Format, io.Reader) {
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(r, head)
	head = head[:n]
	rest := r
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		rest = errorReader{err}
	}
	return DetectFormat(head), io.MultiReader(bytes.NewReader(head), rest)
}

// errorReader returns err from every Read.
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }
