package provider

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
)

func (c *checker) messages(r *Request) {
	msgs := r.Messages
	if len(msgs) == 0 {
		c.add("1.3", "messages", "request has no messages")
		return
	}
	final := wire.FinalTurnStart(len(msgs), func(i int) (transcript.Role, []transcript.Block) { return msgs[i].Role, msgs[i].Content })
	if first := msgs[0].Content; len(first) > 0 && transcript.CompactionOf(first[0]) == transcript.CompactionPoint {
		c.point = first[0]
	}
	thinking := r.Thinking.Enabled()
	for i, m := range msgs {
		path := fmt.Sprintf("messages[%d]", i)
		switch {
		case m.Role != transcript.RoleUser && m.Role != transcript.RoleAssistant:
			c.add("1.1", path, "role %q is not user or assistant", m.Role)
		case i == 0 && m.Role != transcript.RoleUser && (c.point == nil || m.Role != transcript.RoleAssistant):
			c.add("1.3", path, "first message is not a user message")
		case i > 0 && m.Role == msgs[i-1].Role:
			c.add("1.2", path, "two consecutive %s messages: merge them", m.Role)
		}
		if !wire.HasSubstance(m.Content) {
			c.add("1.5", path, "message has empty content")
		}
		switch m.Role {
		case transcript.RoleUser:
			var prev []transcript.Block
			if i > 0 && msgs[i-1].Role == transcript.RoleAssistant {
				prev = msgs[i-1].Content
			}
			c.user(path, m.Content, prev)
		case transcript.RoleAssistant:
			var next []transcript.Block
			hasNext := i+1 < len(msgs) && msgs[i+1].Role == transcript.RoleUser
			if hasNext {
				next = msgs[i+1].Content
			}
			c.assistant(path, m.Content, next, hasNext)
			if i >= final {
				switch {
				case thinking && i == final && !opensWithThinking(m.Content, c.point):
					c.add("4.2", path+".content[0]", "thinking is enabled but the final assistant turn does not start with a thinking block")
				case !thinking && wire.ContainsThinking(m.Content):
					c.add("4.5", path, "thinking is disabled but an assistant message of the final turn contains thinking")
				}
			}
		}
	}
	if last := msgs[len(msgs)-1]; last.Role == transcript.RoleAssistant {
		path := fmt.Sprintf("messages[%d]", len(msgs)-1)
		if !c.opts.AllowPrefill {
			c.add("1.4", path, "request ends with an assistant message (a prefill)")
		} else if n := len(last.Content); n > 0 {
			if t, ok := last.Content[n-1].(*transcript.Text); ok && strings.TrimRightFunc(t.Text, wire.IsSpaceRune) != t.Text {
				c.add("1.4", fmt.Sprintf("%s.content[%d]", path, n-1), "final assistant content ends with whitespace")
			}
		}
	}
	if c.hasTools && len(r.Tools) == 0 {
		c.add("2.9", "tools", "messages hold tool_use or tool_result blocks but the request defines no tools")
	}
}

// user checks a user message; prev is the content of the preceding assistant message.
func (c *checker) user(path string, content, prev []transcript.Block) {
	uses := map[string]bool{}
	for _, b := range prev {
		if tu, ok := b.(*transcript.ToolUse); ok {
			uses[tu.ID] = true
		}
	}
	seen := map[string]bool{}
	other := false
	for j, b := range content {
		bp := fmt.Sprintf("%s.content[%d]", path, j)
		if c.isNil(bp, b) {
			continue
		}
		switch b := b.(type) {
		case *transcript.ToolResult:
			c.hasTools = true
			if other {
				c.add("2.3", bp, "tool_result after other content: tool_result blocks come first")
			}
			c.toolID(bp, b.ToolUseID)
			switch {
			case seen[b.ToolUseID]:
				c.add("2.2", bp, "duplicate tool_result for %s", b.ToolUseID)
			case !uses[b.ToolUseID]:
				c.add("2.2", bp, "tool_result %s has no tool_use in the previous message", b.ToolUseID)
			}
			seen[b.ToolUseID] = true
			c.result(bp, b)
		case *transcript.CacheEdits:
		default:
			other = true
			c.content(bp, b, transcript.RoleUser)
		}
	}
}

// result checks a tool_result's content (2.6).
func (c *checker) result(path string, r *transcript.ToolResult) {
	c.mark(path, r.CacheControl)
	if r.IsError && !wire.HasSubstance(r.Content) {
		c.add("2.6", path, "tool_result content cannot be empty when is_error is true")
	}
	for k, b := range r.Content {
		bp := fmt.Sprintf("%s.content[%d]", path, k)
		if c.isNil(bp, b) {
			continue
		}
		switch b := b.(type) {
		case *transcript.Text, *transcript.Image, *transcript.Document:
			c.content(bp, b, transcript.RoleUser)
		case *transcript.ToolReference:
			if !c.declared[b.ToolName] {
				c.add("2.9", bp, "tool_reference names %q, which tools does not declare", b.ToolName)
			}
		case *transcript.UnknownBlock:
			if b.Type != transcript.KindSearchResult {
				c.add("2.6", bp, "%s block is not accepted in tool_result content", b.Type)
			}
		default:
			c.add("2.6", bp, "%s block is not accepted in tool_result content", b.Kind())
		}
	}
}

// content checks a text, image, document or search_result block of a user message (or of
// tool_result content), and reports any other kind as misplaced.
func (c *checker) content(path string, b transcript.Block, role transcript.Role) {
	switch b := b.(type) {
	case *transcript.Text:
		if wire.IsBlank(b.Text) {
			c.add("1.5", path, "text block is empty or whitespace-only")
		}
		c.mark(path, b.CacheControl)
	case *transcript.Image:
		c.mark(path, b.CacheControl)
		if role != transcript.RoleUser {
			c.add("2.11", path, "image block in an assistant message")
		}
		c.image(path, b)
	case *transcript.Document:
		c.mark(path, b.CacheControl)
		if role != transcript.RoleUser {
			c.add("2.11", path, "document block in an assistant message")
		}
		if b.Source.Type == "base64" {
			if _, ok := wire.Base64Head(b.Source.Data); !ok {
				c.add("5.1", path, "document data is not valid base64")
			}
		}
	case *transcript.UnknownBlock:
		switch {
		case b == c.point:
		case transcript.CompactionOf(b) != transcript.NotCompaction:
			c.add("1.6", path, "a provider compaction is sent only as the first block of the request, and only one that holds a summary")
		case b.Type != transcript.KindSearchResult || role != transcript.RoleUser:
			c.add("2.11", path, "unknown block type %q", b.Type)
		}
	case *transcript.ToolReference:
		c.add("2.11", path, "tool_reference block outside tool_result content")
	default:
		c.add("2.11", path, "%s block is not accepted in a %s message", b.Kind(), role)
	}
}

func (c *checker) image(path string, b *transcript.Image) {
	s := b.Source
	switch s.Type {
	case "base64":
		known := true
		switch s.MediaType {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			known = false
			c.add("5.1", path, "image media type %q is not image/jpeg, image/png, image/gif or image/webp", s.MediaType)
		}
		if limit := or(c.opts.MaxImageBytes, 5<<20); len(s.Data) > limit {
			c.add("5.2", path, "image is %d bytes of base64, over the %d-byte limit", len(s.Data), limit)
		}
		head, ok := wire.Base64Head(s.Data)
		switch got := wire.ImageType(head); {
		case !ok:
			c.add("5.1", path, "image data is not valid base64")
		case got == "":
			c.add("5.1", path, "image data is not a PNG, JPEG, GIF or WebP image")
		case got != s.MediaType && known:
			c.add("5.1", path, "image data is %s but media_type is %q", got, s.MediaType)
		}
		w, h, _ := wire.ImageSize(s.Data)
		c.images = append(c.images, imageAt{path, w, h})
	case "url":
		if s.URL == "" {
			c.add("5.1", path, "image url source without url")
		}
		c.images = append(c.images, imageAt{path: path})
	case "file":
		if s.FileID == "" {
			c.add("5.1", path, "image file source without file_id")
		}
		c.images = append(c.images, imageAt{path: path})
	default:
		c.add("5.1", path, "image source type %q is not base64, url or file", s.Type)
	}
}

// assistant checks an assistant message; next is the content of the following user message
// (hasNext false when there is none).
func (c *checker) assistant(path string, content, next []transcript.Block, hasNext bool) {
	var uses, srvOrder []string // client and server tool_use ids, in content order
	srvUses := map[string]bool{}
	srvDone := map[string]bool{}
	for j, b := range content {
		bp := fmt.Sprintf("%s.content[%d]", path, j)
		if c.isNil(bp, b) {
			continue
		}
		switch b := b.(type) {
		case *transcript.ToolUse:
			c.hasTools = true
			c.toolID(bp, b.ID)
			if c.useIDs[b.ID] {
				c.add("2.5", bp, "tool_use id %s is not unique", b.ID)
			}
			c.useIDs[b.ID] = true
			uses = append(uses, b.ID)
			if !wire.IsJSONObject(b.Input) {
				c.add("2.11", bp, "tool_use input is not a JSON object")
			}
			if !c.declared[b.Name] {
				c.add("2.9", bp, "tool %q is not declared in tools", b.Name)
			}
			c.mark(bp, b.CacheControl)
		case *transcript.ServerToolUse:
			c.toolID(bp, b.ID)
			if c.srvIDs[b.ID] {
				c.add("2.5", bp, "server_tool_use id %s is not unique", b.ID)
			}
			c.srvIDs[b.ID] = true
			if !srvUses[b.ID] {
				srvOrder = append(srvOrder, b.ID)
			}
			srvUses[b.ID] = true
			if !wire.IsJSONObject(b.Input) {
				c.add("2.11", bp, "server_tool_use input is not a JSON object")
			}
			c.mark(bp, b.CacheControl)
		case *transcript.ServerToolResult:
			c.toolID(bp, b.ToolUseID)
			switch {
			case !srvUses[b.ToolUseID]:
				c.add("2.7", bp, "%s %s has no server_tool_use before it in the same message", b.Type, b.ToolUseID)
			case srvDone[b.ToolUseID]:
				c.add("2.7", bp, "duplicate %s for %s", b.Type, b.ToolUseID)
			}
			srvDone[b.ToolUseID] = true
			c.mark(bp, b.CacheControl)
		case *transcript.Thinking:
			if c.opts.ReasoningItems && wire.IsReasoningItem(b) {
				break
			}
			if !wire.ReplayableSignature(b.Signature) {
				c.add("4.7", bp, "thinking block without a replayable signature")
			}
			if !utf8.ValidString(b.Thinking) {
				c.add("4.7", bp, "thinking text is not valid UTF-8: it is not what the provider signed")
			}
			if _, ok := b.Extra["cache_control"]; ok {
				c.add("3.4", bp, "cache_control on a thinking block")
			}
		case *transcript.RedactedThinking:
			if b.Data == "" {
				c.add("4.7", bp, "redacted_thinking block without data")
			}
			if !utf8.ValidString(b.Data) {
				c.add("4.7", bp, "redacted_thinking data is not valid UTF-8: it is not what the provider sent")
			}
			if _, ok := b.Extra["cache_control"]; ok {
				c.add("3.4", bp, "cache_control on a redacted_thinking block")
			}
		default:
			c.content(bp, b, transcript.RoleAssistant)
		}
	}
	for _, id := range srvOrder {
		if !srvDone[id] {
			c.add("2.7", path, "server_tool_use %s has no result in the same message", id)
		}
	}
	if wire.ContainsThinking(content) {
		if !opensWithThinking(content, c.point) {
			c.add("4.3", path+".content[0]", "assistant message holds thinking but does not start with it")
		}
		if n := len(content); wire.IsThinking(content[n-1]) {
			c.add("4.4", fmt.Sprintf("%s.content[%d]", path, n-1), "assistant message ends with a thinking block")
		}
	}
	if len(uses) == 0 {
		return
	}
	answered := map[string]bool{}
	if hasNext {
		for _, b := range next {
			if tr, ok := b.(*transcript.ToolResult); ok {
				answered[tr.ToolUseID] = true
			}
		}
	}
	var missing []string
	for _, id := range uses {
		if !answered[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		c.add("2.1", path, "tool_use ids without tool_result blocks in the next message: %s", strings.Join(missing, ", "))
	}
}

// opensWithThinking reports whether an assistant message's content opens with thinking,
// after the provider compaction point when the message opens with it (4.2, 4.3).
func opensWithThinking(content []transcript.Block, point transcript.Block) bool {
	if len(content) > 1 && point != nil && content[0] == point {
		content = content[1:]
	}
	return len(content) > 0 && wire.IsThinking(content[0])
}
