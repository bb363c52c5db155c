package agentctx

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// Violation is one way a request breaks the provider contract: the rule of
// shared/research/anthropic-messages-contract.md it breaks (e.g. "2.1"), where in the request
// body (e.g. "messages[3].content[0]"; "" for the request as a whole) and what is wrong.
type Violation struct {
	// Rule is the contract rule number, e.g. "2.1" (tool_use needs a tool_result next).
	Rule string
	// Path locates the offending part in the request body's JSON, e.g.
	// "messages[3].content[0]", "system[1]", "tools[2]", "max_tokens"; "" for the whole
	// request.
	Path string
	// Msg says what is wrong, lower-case, without the rule or path.
	Msg string
}

// Error formats the violation as "agentctx: PATH: MSG (rule RULE)".
func (v *Violation) Error() string {
	var b strings.Builder
	b.WriteString("agentctx: ")
	if v.Path != "" {
		b.WriteString(v.Path + ": ")
	}
	b.WriteString(v.Msg + " (rule " + v.Rule + ")")
	return b.String()
}

// ValidateOptions configures [Validate]. The zero value checks the Anthropic Messages API
// contract with its published limits and no token-window check. Whether thinking is enabled
// is read from the request itself ([Request.Thinking]).
type ValidateOptions struct {
	// AllowPrefill accepts a request that ends with an assistant message (a prefill), for
	// models that accept one.
	AllowPrefill bool
	// InterleavedThinking lifts the rule budget_tokens < max_tokens (the interleaved thinking
	// beta bounds the budget by the context window instead).
	InterleavedThinking bool
	// ContextWindow is the model's context window in tokens. With InputTokens, when both
	// are positive, Validate checks InputTokens + max_tokens ≤ ContextWindow (6.3). Zero
	// skips the check.
	ContextWindow int
	// InputTokens is the request's input size in tokens (counted or estimated, e.g.
	// [Report.InputTokens]). Zero skips the window check.
	InputTokens int
	// MaxCacheMarkers is the number of cache_control markers allowed in the request
	// (system, tools and messages together). Zero: [MaxCacheMarkers] (4).
	MaxCacheMarkers int
	// MaxImageBytes caps one base64 image's data, in bytes of base64 text. Zero: 5 MiB.
	MaxImageBytes int
	// MaxImages caps the number of images in the request. Zero: 100.
	MaxImages int
	// MaxBodyBytes caps the encoded request body, in bytes. Zero: 32 MB (32,000,000).
	MaxBodyBytes int
}

// Image pixel limits (contract 5.2): per image, and when the request holds more than
// manyImages images.
const (
	maxImagePixels     = 8000
	maxManyImagePixels = 2000
	manyImages         = 20
)

// Validate checks r against the provider contract (the checklist of contract §9) and returns
// every violation found, joined with [errors.Join]; each is a [*Violation]. It returns nil
// for a valid request. It does not modify r. Validate is safe for concurrent use.
func Validate(r Request, opts ValidateOptions) error {
	vs := validate(&r, opts)
	if len(vs) == 0 {
		return nil
	}
	errs := make([]error, len(vs))
	for i, v := range vs {
		errs[i] = v
	}
	return errors.Join(errs...)
}

// checker collects violations while walking a request.
type checker struct {
	opts     ValidateOptions
	vs       []*Violation
	declared map[string]bool // tool names
	useIDs   map[string]bool // client tool_use ids seen so far
	srvIDs   map[string]bool // server_tool_use ids seen so far
	markers  []marker
	images   []imageAt
	hasTools bool // a tool_use or tool_result block exists
	broken   bool // a nil block was found: the request cannot be encoded
}

type marker struct {
	path string
	cc   *CacheControl
}

type imageAt struct {
	path string
	w, h int
}

func (c *checker) add(rule, path, format string, args ...any) {
	c.vs = append(c.vs, &Violation{Rule: rule, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) mark(path string, cc *CacheControl) {
	if cc != nil {
		c.markers = append(c.markers, marker{path, cc})
	}
}

func validate(r *Request, opts ValidateOptions) []*Violation {
	c := &checker{opts: opts, declared: map[string]bool{}, useIDs: map[string]bool{}, srvIDs: map[string]bool{}}
	// Prefix order: tools, system, messages (cache TTL order follows it).
	for i, t := range r.Tools {
		c.tool(fmt.Sprintf("tools[%d]", i), t)
	}
	for i, t := range r.System {
		path := fmt.Sprintf("system[%d]", i)
		if t == nil {
			c.add("1.1", path, "nil system block")
			c.broken = true
			continue
		}
		if isBlank(t.Text) {
			c.add("1.5", path, "system text block is empty or whitespace-only")
		}
		c.mark(path, t.CacheControl)
	}
	c.messages(r)
	c.cacheMarkers()
	c.imageLimits()
	c.settings(r)
	return c.vs
}

func (c *checker) tool(path string, t Tool) {
	switch {
	case t.Name == "":
		c.add("2.9", path, "tool has no name")
	case !validToolName(t.Name):
		c.add("2.9", path, "tool name %q does not match ^[a-zA-Z0-9_-]{1,128}$", t.Name)
	case c.declared[t.Name]:
		c.add("2.9", path, "tool name %q is declared twice", t.Name)
	}
	c.declared[t.Name] = true
	var def map[string]json.RawMessage
	if err := json.Unmarshal(t.Definition, &def); err != nil || def == nil {
		c.add("2.9", path, "tool definition is not a JSON object")
		return
	}
	var name string
	if err := json.Unmarshal(def["name"], &name); err != nil || name != t.Name {
		c.add("2.9", path, "tool definition name %s differs from Tool.Name %q", def["name"], t.Name)
	}
	cc := t.CacheControl
	if raw, ok := def["cache_control"]; ok && cc == nil {
		cc = &CacheControl{}
		if err := json.Unmarshal(raw, cc); err != nil {
			c.add("3.1", path, "tool cache_control is not a cache marker")
		}
	}
	c.mark(path, cc)
}

func (c *checker) messages(r *Request) {
	msgs := r.Messages
	if len(msgs) == 0 {
		c.add("1.3", "messages", "request has no messages")
		return
	}
	final := finalTurnStart(len(msgs), func(i int) (Role, []Block) { return msgs[i].Role, msgs[i].Content })
	thinking := r.Thinking.Enabled()
	for i, m := range msgs {
		path := fmt.Sprintf("messages[%d]", i)
		switch {
		case m.Role != RoleUser && m.Role != RoleAssistant:
			c.add("1.1", path, "role %q is not user or assistant", m.Role)
		case i == 0 && m.Role != RoleUser:
			c.add("1.3", path, "first message is not a user message")
		case i > 0 && m.Role == msgs[i-1].Role:
			c.add("1.2", path, "two consecutive %s messages: merge them", m.Role)
		}
		if !hasSubstance(m.Content) {
			c.add("1.5", path, "message has empty content")
		}
		switch m.Role {
		case RoleUser:
			var prev []Block
			if i > 0 && msgs[i-1].Role == RoleAssistant {
				prev = msgs[i-1].Content
			}
			c.user(path, m.Content, prev)
		case RoleAssistant:
			var next []Block
			hasNext := i+1 < len(msgs) && msgs[i+1].Role == RoleUser
			if hasNext {
				next = msgs[i+1].Content
			}
			c.assistant(path, m.Content, next, hasNext)
			if i >= final {
				switch {
				case thinking && i == final && (len(m.Content) == 0 || !isThinking(m.Content[0])):
					c.add("4.2", path+".content[0]", "thinking is enabled but the final assistant turn does not start with a thinking block")
				case !thinking && containsThinking(m.Content):
					c.add("4.5", path, "thinking is disabled but an assistant message of the final turn contains thinking")
				}
			}
		}
	}
	if last := msgs[len(msgs)-1]; last.Role == RoleAssistant {
		path := fmt.Sprintf("messages[%d]", len(msgs)-1)
		if !c.opts.AllowPrefill {
			c.add("1.4", path, "request ends with an assistant message (a prefill)")
		} else if n := len(last.Content); n > 0 {
			if t, ok := last.Content[n-1].(*Text); ok && strings.TrimRightFunc(t.Text, isSpaceRune) != t.Text {
				c.add("1.4", fmt.Sprintf("%s.content[%d]", path, n-1), "final assistant content ends with whitespace")
			}
		}
	}
	if c.hasTools && len(r.Tools) == 0 {
		c.add("2.9", "tools", "messages hold tool_use or tool_result blocks but the request defines no tools")
	}
}

// user checks a user message; prev is the content of the preceding assistant message.
func (c *checker) user(path string, content, prev []Block) {
	uses := map[string]bool{}
	for _, b := range prev {
		if tu, ok := b.(*ToolUse); ok {
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
		case *ToolResult:
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
		case *CacheEdits:
		default:
			other = true
			c.content(bp, b, RoleUser)
		}
	}
}

// result checks a tool_result's content (2.6).
func (c *checker) result(path string, r *ToolResult) {
	c.mark(path, r.CacheControl)
	if r.IsError && !hasSubstance(r.Content) {
		c.add("2.6", path, "tool_result content cannot be empty when is_error is true")
	}
	for k, b := range r.Content {
		bp := fmt.Sprintf("%s.content[%d]", path, k)
		if c.isNil(bp, b) {
			continue
		}
		switch b := b.(type) {
		case *Text, *Image, *Document:
			c.content(bp, b, RoleUser)
		case *ToolReference:
			if !c.declared[b.ToolName] {
				c.add("2.9", bp, "tool_reference names %q, which tools does not declare", b.ToolName)
			}
		case *UnknownBlock:
			if b.Type != KindSearchResult {
				c.add("2.6", bp, "%s block is not accepted in tool_result content", b.Type)
			}
		default:
			c.add("2.6", bp, "%s block is not accepted in tool_result content", b.Kind())
		}
	}
}

// content checks a text, image, document or search_result block of a user message (or of
// tool_result content), and reports any other kind as misplaced.
func (c *checker) content(path string, b Block, role Role) {
	switch b := b.(type) {
	case *Text:
		if isBlank(b.Text) {
			c.add("1.5", path, "text block is empty or whitespace-only")
		}
		c.mark(path, b.CacheControl)
	case *Image:
		c.mark(path, b.CacheControl)
		if role != RoleUser {
			c.add("2.11", path, "image block in an assistant message")
		}
		c.image(path, b)
	case *Document:
		c.mark(path, b.CacheControl)
		if role != RoleUser {
			c.add("2.11", path, "document block in an assistant message")
		}
	case *UnknownBlock:
		if b.Type != KindSearchResult || role != RoleUser {
			c.add("2.11", path, "unknown block type %q", b.Type)
		}
	case *ToolReference:
		c.add("2.11", path, "tool_reference block outside tool_result content")
	default:
		c.add("2.11", path, "%s block is not accepted in a %s message", b.Kind(), role)
	}
}

func (c *checker) image(path string, b *Image) {
	s := b.Source
	switch s.Type {
	case "base64":
		switch s.MediaType {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			c.add("5.1", path, "image media type %q is not image/jpeg, image/png, image/gif or image/webp", s.MediaType)
		}
		if limit := or(c.opts.MaxImageBytes, 5<<20); len(s.Data) > limit {
			c.add("5.2", path, "image is %d bytes of base64, over the %d-byte limit", len(s.Data), limit)
		}
		w, h, _ := imageSize(s.Data)
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
func (c *checker) assistant(path string, content, next []Block, hasNext bool) {
	var uses []string
	srvUses := map[string]bool{}
	srvDone := map[string]bool{}
	for j, b := range content {
		bp := fmt.Sprintf("%s.content[%d]", path, j)
		if c.isNil(bp, b) {
			continue
		}
		switch b := b.(type) {
		case *ToolUse:
			c.hasTools = true
			c.toolID(bp, b.ID)
			if c.useIDs[b.ID] {
				c.add("2.5", bp, "tool_use id %s is not unique", b.ID)
			}
			c.useIDs[b.ID] = true
			uses = append(uses, b.ID)
			if !isJSONObject(b.Input) {
				c.add("2.11", bp, "tool_use input is not a JSON object")
			}
			if !c.declared[b.Name] {
				c.add("2.9", bp, "tool %q is not declared in tools", b.Name)
			}
			c.mark(bp, b.CacheControl)
		case *ServerToolUse:
			c.toolID(bp, b.ID)
			if c.srvIDs[b.ID] {
				c.add("2.5", bp, "server_tool_use id %s is not unique", b.ID)
			}
			c.srvIDs[b.ID] = true
			srvUses[b.ID] = true
			if !isJSONObject(b.Input) {
				c.add("2.11", bp, "server_tool_use input is not a JSON object")
			}
			c.mark(bp, b.CacheControl)
		case *ServerToolResult:
			c.toolID(bp, b.ToolUseID)
			switch {
			case !srvUses[b.ToolUseID]:
				c.add("2.7", bp, "%s %s has no server_tool_use before it in the same message", b.Type, b.ToolUseID)
			case srvDone[b.ToolUseID]:
				c.add("2.7", bp, "duplicate %s for %s", b.Type, b.ToolUseID)
			}
			srvDone[b.ToolUseID] = true
			c.mark(bp, b.CacheControl)
		case *Thinking:
			if !replayableSignature(b.Signature) {
				c.add("4.7", bp, "thinking block without a replayable signature")
			}
			if _, ok := b.Extra["cache_control"]; ok {
				c.add("3.4", bp, "cache_control on a thinking block")
			}
		case *RedactedThinking:
			if b.Data == "" {
				c.add("4.7", bp, "redacted_thinking block without data")
			}
			if _, ok := b.Extra["cache_control"]; ok {
				c.add("3.4", bp, "cache_control on a redacted_thinking block")
			}
		case *Text:
			c.content(bp, b, RoleAssistant)
		default:
			c.content(bp, b, RoleAssistant)
		}
	}
	for id := range srvUses {
		if !srvDone[id] {
			c.add("2.7", path, "server_tool_use %s has no result in the same message", id)
		}
	}
	if containsThinking(content) {
		if !isThinking(content[0]) {
			c.add("4.3", path+".content[0]", "assistant message holds thinking but does not start with it")
		}
		if n := len(content); isThinking(content[n-1]) {
			c.add("4.4", fmt.Sprintf("%s.content[%d]", path, n-1), "assistant message ends with a thinking block")
		}
	}
	if len(uses) == 0 {
		return
	}
	answered := map[string]bool{}
	if hasNext {
		for _, b := range next {
			if tr, ok := b.(*ToolResult); ok {
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

// isNil reports (once) a nil block, typed or not.
func (c *checker) isNil(path string, b Block) bool {
	if !isNilBlock(b) {
		return false
	}
	c.add("1.1", path, "nil block")
	c.broken = true
	return true
}

func (c *checker) toolID(path, id string) {
	if !validToolID(id) {
		c.add("2.10", path, "tool id %q does not match ^[a-zA-Z0-9_-]+$", id)
	}
}

// cacheMarkers checks the number, shape and TTL order of the cache_control markers.
func (c *checker) cacheMarkers() {
	if limit := or(c.opts.MaxCacheMarkers, MaxCacheMarkers); len(c.markers) > limit {
		c.add("3.2", "", "%d blocks with cache_control, at most %d allowed", len(c.markers), limit)
	}
	short := ""
	for _, m := range c.markers {
		if m.cc.Type != "ephemeral" {
			c.add("3.1", m.path, "cache_control type %q is not ephemeral", m.cc.Type)
		}
		switch m.cc.TTL {
		case "", "5m":
			if short == "" {
				short = m.path
			}
		case "1h":
			if short != "" {
				c.add("3.7", m.path, "1h cache_control after a 5m one (%s)", short)
			}
		default:
			c.add("3.1", m.path, "cache_control ttl %q is not 5m or 1h", m.cc.TTL)
		}
	}
}

func (c *checker) imageLimits() {
	if limit := or(c.opts.MaxImages, 100); len(c.images) > limit {
		c.add("5.2", "", "%d images, at most %d allowed", len(c.images), limit)
	}
	limit := maxImagePixels
	if len(c.images) > manyImages {
		limit = maxManyImagePixels
	}
	for _, im := range c.images {
		if im.w > limit || im.h > limit {
			c.add("5.2", im.path, "image is %dx%d pixels, over %dx%d", im.w, im.h, limit, limit)
		}
	}
}

// settings checks max_tokens, thinking, the window and the body size.
func (c *checker) settings(r *Request) {
	if r.MaxTokens < 1 {
		c.add("6.6", "max_tokens", "max_tokens %d is not positive", r.MaxTokens)
	}
	if o := c.opts; o.ContextWindow > 0 && o.InputTokens > 0 && o.InputTokens+r.MaxTokens > o.ContextWindow {
		c.add("6.3", "max_tokens", "input %d + max_tokens %d exceeds the context window %d", o.InputTokens, r.MaxTokens, o.ContextWindow)
	}
	if th := r.Thinking; th != nil {
		switch th.Type {
		case "enabled":
			if th.BudgetTokens < 1024 {
				c.add("4.8", "thinking", "budget_tokens %d is below 1024", th.BudgetTokens)
			}
			if !c.opts.InterleavedThinking && th.BudgetTokens >= r.MaxTokens {
				c.add("4.8", "thinking", "budget_tokens %d is not below max_tokens %d", th.BudgetTokens, r.MaxTokens)
			}
		case "disabled", "adaptive":
		default:
			c.add("4.8", "thinking", "thinking type %q is not enabled, disabled or adaptive", th.Type)
		}
	}
	if c.broken {
		return
	}
	body, err := r.MarshalJSON()
	if err != nil {
		c.add("6.1", "", "request does not encode: %v", err)
		return
	}
	if limit := or(c.opts.MaxBodyBytes, 32_000_000); len(body) > limit {
		c.add("6.1", "", "request body is %d bytes, over %d", len(body), limit)
	}
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// finalTurnStart returns the index of the first message of the final assistant turn: the
// message after the last user message without tool results. It returns n when the request
// ends with such a user message (the final turn has not started).
func finalTurnStart(n int, msg func(int) (Role, []Block)) int {
	for i := n - 1; i >= 0; i-- {
		role, content := msg(i)
		if role == RoleUser && !containsKind(content, KindToolResult) {
			return i + 1
		}
	}
	return 0
}

func containsKind(bs []Block, k BlockKind) bool {
	for _, b := range bs {
		if kindOf(b) == k {
			return true
		}
	}
	return false
}

// kindOf returns b's kind, or "" for a nil block (typed or not).
func kindOf(b Block) BlockKind {
	if isNilBlock(b) {
		return ""
	}
	return b.Kind()
}

func isNilBlock(b Block) bool {
	if b == nil {
		return true
	}
	v := reflect.ValueOf(b)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func isThinking(b Block) bool {
	switch b.(type) {
	case *Thinking, *RedactedThinking:
		return true
	}
	return false
}

func containsThinking(bs []Block) bool { return slices.ContainsFunc(bs, isThinking) }

// hasSubstance reports whether bs holds a block other than cache_edits.
func hasSubstance(bs []Block) bool {
	for _, b := range bs {
		if kindOf(b) != KindCacheEdits {
			return true
		}
	}
	return false
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// isBlank reports whether s is empty or only whitespace: the provider rejects such text.
func isBlank(s string) bool { return strings.TrimFunc(s, isSpaceRune) == "" }

func isSpaceRune(r rune) bool { return unicode.IsSpace(r) }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validToolID reports whether id matches ^[a-zA-Z0-9_-]+$ (contract 2.10).
func validToolID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// validToolName reports whether name matches ^[a-zA-Z0-9_-]{1,128}$.
func validToolName(name string) bool { return len(name) <= 128 && validToolID(name) }

// replayableSignature reports whether a thinking signature can be what the provider issued:
// non-empty base64 of a plausible length. Sanitised placeholders such as
// "[REDACTED_SIGNATURE]" cannot be replayed.
func replayableSignature(sig string) bool {
	if len(sig) < 32 {
		return false
	}
	for i := 0; i < len(sig); i++ {
		if c := sig[i]; !isAlnum(c) && c != '+' && c != '/' && c != '=' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
