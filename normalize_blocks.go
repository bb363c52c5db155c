package agentctx

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
)

// clean returns the request form of a top-level block of a role's message; ok is false when
// the block is dropped (and reported).
func (n *normalizer) clean(b transcript.Block, role transcript.Role, uuid string) (nblock, bool) {
	nb := nblock{b: b, uuid: uuid}
	bad := nblock{b: b, uuid: uuid, bad: true}
	user, asst := role == transcript.RoleUser, role == transcript.RoleAssistant
	if transcript.IsNilBlock(b) {
		n.act(ActionDropped, uuid, "", "nil block", 0)
		return nb, false
	}
	switch b := b.(type) {
	case *transcript.Text:
		if wire.IsBlank(b.Text) {
			n.drop(nb, "empty or whitespace-only text block")
			return nb, false
		}
		nb.b = &transcript.Text{Text: b.Text, Citations: nonNull(b.Citations)}
	case *transcript.Image:
		if !user {
			return bad, true
		}
		nb.b = n.cleanImage(&transcript.Image{Source: b.Source}, uuid, "")
	case *transcript.Document:
		if !user {
			return bad, true
		}
		nb.b = n.cleanDocument(&transcript.Document{Source: b.Source, Title: b.Title, Context: b.Context, Citations: nonNull(b.Citations)}, uuid, "")
	case *transcript.ToolUse:
		if !asst {
			return bad, true
		}
		nb.b = &transcript.ToolUse{ID: n.fixID(b.ID, uuid), Name: n.fixName(b.Name, uuid), Input: n.objectInput(b.Input, b.ID, uuid)}
	case *transcript.ToolResult:
		if !user {
			return bad, true
		}
		nb.b = n.cleanResult(b, uuid)
	case *transcript.Thinking:
		if !asst {
			return bad, true
		}
		if wire.IsReasoningItem(b) {
			if n.s.cfg.KeepReasoningItems {
				return nb, true // an OpenAI reasoning item, sent back as it came
			}
			n.drop(nb, "reasoning from a Codex rollout: its content is encrypted for OpenAI, so it cannot be replayed as thinking")
			return nb, false
		}
		if !wire.ReplayableSignature(b.Signature) {
			n.drop(nb, "thinking block without a replayable signature")
			return nb, false
		}
		if !utf8.ValidString(b.Thinking) {
			n.drop(nb, "thinking text is not valid UTF-8, so it is not what the provider signed")
			return nb, false
		}
		if !n.s.thinking.Enabled() {
			n.drop(nb, thinkingOff)
			return nb, false
		}
		nb.b = cleanThinking(b)
	case *transcript.RedactedThinking:
		if !asst {
			return bad, true
		}
		if b.Data == "" {
			n.drop(nb, "redacted_thinking block without data")
			return nb, false
		}
		if !utf8.ValidString(b.Data) {
			n.drop(nb, "redacted_thinking data is not valid UTF-8, so it is not what the provider sent")
			return nb, false
		}
		if !n.s.thinking.Enabled() {
			n.drop(nb, thinkingOff)
			return nb, false
		}
		if len(b.Extra) > 0 {
			nb.b = &transcript.RedactedThinking{Data: b.Data}
		}
	case *transcript.ServerToolUse:
		if !asst {
			return bad, true
		}
		nb.b = &transcript.ServerToolUse{ID: n.fixID(b.ID, uuid), Name: b.Name, Input: n.objectInput(b.Input, b.ID, uuid)}
	case *transcript.ServerToolResult:
		if !asst {
			return bad, true
		}
		nb.b = &transcript.ServerToolResult{Type: b.Type, ToolUseID: n.fixID(b.ToolUseID, uuid), Content: b.Content}
	case *transcript.CacheEdits:
		if !user {
			n.drop(nb, "cache_edits block outside a user message")
			return nb, false
		}
	case *transcript.UnknownBlock:
		if n.t.isPoint(b) {
			return nb, true // the provider's compaction, sent as it came (1.6)
		}
		if transcript.CompactionOf(b) == transcript.CompactionFailed {
			n.drop(nb, "provider compaction without a summary (it failed): a no-op, not sent")
			return nb, false
		}
		if !user || b.Type != transcript.KindSearchResult {
			return bad, true
		}
	default:
		return bad, true // tool_reference outside a tool_result, and anything else
	}
	n.repairText(&nb)
	return nb, true
}

// cleanResult rebuilds a tool_result with only the content the provider accepts in one.
func (n *normalizer) cleanResult(b *transcript.ToolResult, uuid string) *transcript.ToolResult {
	id := n.fixID(b.ToolUseID, uuid)
	var content []transcript.Block
	var bad []transcript.Block
	for _, cb := range b.Content {
		if transcript.IsNilBlock(cb) {
			n.act(ActionDropped, uuid, id, "nil block in tool_result "+id, 0)
			continue
		}
		switch cb := cb.(type) {
		case *transcript.Text:
			if wire.IsBlank(cb.Text) {
				if len(b.Content) > 1 {
					n.drop(nblock{b: cb, uuid: uuid}, "empty or whitespace-only text in tool_result "+id)
				}
				continue
			}
			content = append(content, &transcript.Text{Text: cb.Text, Citations: nonNull(cb.Citations)})
		case *transcript.Image:
			content = append(content, n.cleanImage(&transcript.Image{Source: cb.Source}, uuid, id))
		case *transcript.Document:
			content = append(content, n.cleanDocument(&transcript.Document{Source: cb.Source, Title: cb.Title, Context: cb.Context, Citations: nonNull(cb.Citations)}, uuid, id))
		case *transcript.ToolReference:
			if n.declared[cb.ToolName] {
				content = append(content, &transcript.ToolReference{ToolName: cb.ToolName})
				continue
			}
			n.act(ActionRepaired, uuid, id, fmt.Sprintf("tool_reference to %q, which Input.Tools does not declare, sent as text", cb.ToolName), 0)
			content = append(content, &transcript.Text{Text: fmt.Sprintf(toolReferenceText, cb.ToolName)})
		case *transcript.UnknownBlock:
			if cb.Type == transcript.KindSearchResult {
				content = append(content, cb)
				continue
			}
			bad = append(bad, cb)
		default:
			bad = append(bad, cb)
		}
	}
	for i, cb := range bad {
		if i == 0 && len(content) == 0 {
			n.act(ActionRepaired, uuid, id, fmt.Sprintf("unsupported %s block in tool_result replaced by a text placeholder", cb.Kind()), 0)
			content = append(content, &transcript.Text{Text: fmt.Sprintf(unsupportedBlockText, cb.Kind())})
			continue
		}
		n.act(ActionDropped, uuid, id, fmt.Sprintf("unsupported %s block in tool_result", cb.Kind()), -n.s.counter.Block(cb))
	}
	if len(content) == 0 {
		n.act(ActionRepaired, uuid, id, "empty tool_result content replaced by "+emptyResultText, 0)
		content = []transcript.Block{&transcript.Text{Text: emptyResultText}}
	}
	str := b.StringContent && len(content) == 1 && content[0].Kind() == transcript.KindText
	return &transcript.ToolResult{ToolUseID: id, Content: content, StringContent: str, IsError: b.IsError, CacheReference: b.CacheReference}
}

// objectInput returns a tool call's input as a JSON object: {} for a missing, null or
// non-object input, which the provider requires (reported).
func (n *normalizer) objectInput(in json.RawMessage, id, uuid string) json.RawMessage {
	trimmed := bytes.TrimSpace(in)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		n.act(ActionRepaired, uuid, id, "tool input missing or null: sent as {}", 0)
		return json.RawMessage("{}")
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		n.act(ActionRepaired, uuid, id, "tool input is not a JSON object: sent as {}", 0)
		return json.RawMessage("{}")
	}
	return in
}

// fixID returns id, or its deterministic rewrite when the provider would reject it (2.10).
func (n *normalizer) fixID(id, uuid string) string {
	if wire.ValidToolID(id) {
		return id
	}
	if fixed, ok := n.preIDs[id]; ok {
		return fixed
	}
	if fixed, ok := n.ids[id]; ok {
		return fixed
	}
	sum := sha256.Sum256([]byte(id))
	fixed := "toolu_fix_" + hex.EncodeToString(sum[:12])
	n.ids[id] = fixed
	n.fixes = append(n.fixes, toolFix{from: id, to: fixed, at: n.cur})
	n.act(ActionRepaired, uuid, id, "tool id does not match ^[a-zA-Z0-9_-]+$: rewritten to "+fixed, 0)
	return fixed
}

// fixName returns a tool_use's name, or its deterministic rewrite when it cannot be declared
// as a tool name.
func (n *normalizer) fixName(name, uuid string) string {
	if wire.ValidToolName(name) {
		return name
	}
	if fixed, ok := n.preNames[name]; ok {
		return fixed
	}
	if fixed, ok := n.names[name]; ok {
		return fixed
	}
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 64 {
			break
		}
		if r < 0x80 && (wire.IsAlnum(byte(r)) || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(name))
	fixed := strings.TrimRight(b.String(), "_") + "_" + hex.EncodeToString(sum[:4])
	fixed = strings.TrimLeft(fixed, "_")
	n.names[name] = fixed
	n.fixes = append(n.fixes, toolFix{name: true, from: name, to: fixed, at: n.cur})
	n.act(ActionRepaired, uuid, "", fmt.Sprintf("tool name %q is not a valid tool name: rewritten to %s", name, fixed), 0)
	return fixed
}

// tools returns Input.Tools followed by a stub for each tool name the messages use that
// Input.Tools lacks (2.9), sorted by name: a definition with an empty schema whose
// description says the tool is not available. The messages are those of prefix, the first
// tool_use of each name in a settled prefix, then msgs.
func (n *normalizer) tools(prefix []nameUse, msgs []nmsg, stubs map[string]stub) []provider.Tool {
	tools := slices.Clone(n.t.in.Tools)
	for i := range tools {
		var f textRepair
		f.json("definition", &tools[i].Definition)
		if f.n > 0 {
			n.act(ActionRepaired, "", "", f.detail(fmt.Sprintf("tools[%d]", i)), 0)
		}
	}
	firstUse := map[string]nblock{}
	var missing []string
	for _, u := range prefix {
		if !n.declared[u.name] {
			firstUse[u.name] = u.nb
			missing = append(missing, u.name)
		}
	}
	for _, m := range msgs {
		for _, nb := range m.blocks {
			if tu, ok := nb.b.(*transcript.ToolUse); ok && !n.declared[tu.Name] {
				if _, seen := firstUse[tu.Name]; !seen {
					firstUse[tu.Name] = nb
					missing = append(missing, tu.Name)
				}
			}
		}
	}
	slices.Sort(missing)
	tools = slices.Grow(tools, len(missing))
	for _, name := range missing {
		nb := firstUse[name]
		st, ok := stubs[name]
		if !ok {
			st = stub{provider.StubTool(name), "tool " + name + " is used in the history but not in Input.Tools: declared as unavailable, with an empty schema"}
			if stubs != nil {
				stubs[name] = st
			}
		}
		n.act(ActionRepaired, nb.uuid, toolID(nb.b), st.detail, 0)
		tools = append(tools, st.tool)
	}
	return tools
}

// stub is the stub definition of a tool name and the detail of the action that reports it,
// which a conversation's turns share (see normPrefix).
type stub struct {
	tool   provider.Tool
	detail string
}
