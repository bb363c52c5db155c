package transcript

import "encoding/json"

// Claude Code writes two records of its own context decisions that a session resumed from its
// file must reproduce: which tool results it showed the model a replacement for, and which it
// cleared. The library reads them beside its own decision records; their fields stay in
// [Record.Extra], so the records write back byte for byte.

// ContentReplacement is one entry of a Claude Code content-replacement record: the text the
// model was shown instead of a tool result (a persisted-output preview).
type ContentReplacement struct {
	// Kind is what was replaced: "tool-result" (the only kind the library applies).
	Kind string `json:"kind"`
	// ToolUseID names the tool call whose result was replaced.
	ToolUseID string `json:"toolUseId"`
	// Replacement is the text shown instead.
	Replacement string `json:"replacement"`
}

// ContentReplacements returns the entries of a content-replacement record
// ({"type":"content-replacement","replacements":[{"kind","toolUseId","replacement"}]}), or
// nil for another record. Entries that cannot be read (another shape, a blank tool_use id or
// replacement, a kind other than "tool-result") are left out.
func (r *Record) ContentReplacements() []ContentReplacement {
	raw, ok := r.Extra["replacements"]
	if r.Type != TypeContentReplacement || !ok {
		return nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return nil
	}
	var out []ContentReplacement
	for _, e := range entries {
		var c ContentReplacement
		if json.Unmarshal(e, &c) != nil || c.ToolUseID == "" || c.Replacement == "" || c.Kind != "" && c.Kind != "tool-result" {
			continue
		}
		out = append(out, c)
	}
	return out
}

// MicrocompactBoundary is the metadata of a Claude Code microcompact_boundary record: the tool
// results it cleared from the model's view.
type MicrocompactBoundary struct {
	Trigger          string   `json:"trigger"`
	PreTokens        int      `json:"preTokens"`
	TokensSaved      int      `json:"tokensSaved"`
	CompactedToolIDs []string `json:"compactedToolIds"`
}

// MicrocompactBoundary returns the metadata of a system record of subtype
// microcompact_boundary ("microcompactMetadata"), or nil for another record or metadata that
// cannot be read.
func (r *Record) MicrocompactBoundary() *MicrocompactBoundary {
	raw, ok := r.Extra["microcompactMetadata"]
	if r.Type != TypeSystem || r.Subtype != SubtypeMicrocompactBoundary || !ok {
		return nil
	}
	var m MicrocompactBoundary
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return &m
}
