package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"
)

// Violation is one way a request breaks the provider contract: the rule it breaks, by its id
// in docs/contract.md (e.g. "2.1"), where in the request body (e.g. "messages[3].content[0]";
// "" for the request as a whole) and what is wrong.
type Violation struct {
	// Rule is the id of the rule in docs/contract.md, e.g. "2.1" (tool_use needs a
	// tool_result next).
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
	// [github.com/agentctx/agentctx.Report.InputTokens]). Zero skips the window check.
	InputTokens int
	// MaxImageBytes caps one base64 image's data, in bytes of base64 text. Zero: 5 MiB.
	MaxImageBytes int
	// MaxImages caps the number of images in the request. Zero: 100.
	MaxImages int
	// MaxBodyBytes caps the encoded request body, in bytes. Zero: 32 MB (32,000,000).
	MaxBodyBytes int
	// ReasoningItems accepts the OpenAI reasoning items a request for the Responses API
	// carries (thinking blocks with encrypted content and no signature; see
	// [github.com/agentctx/agentctx.NormalizeConfig.KeepReasoningItems]).
	ReasoningItems bool
}

// Image pixel limits (contract 5.2): per image, and when the request holds more than
// manyImages images.
const (
	maxImagePixels     = 8000
	maxManyImagePixels = 2000
	manyImages         = 20
)

// Validate checks r against the provider contract, the rules listed in docs/contract.md, and
// returns every violation found, joined with [errors.Join]; each is a [*Violation]. It returns
// nil for a valid request. It does not modify r. Validate is safe for concurrent use.
func Validate(r Request, opts ValidateOptions) error {
	return joinViolations(validate(&r, opts))
}

// joinViolations returns the violations joined with [errors.Join], or nil for none.
func joinViolations(vs []*Violation) error {
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
	// point is the provider compaction the first message opens with, or nil (1.6).
	point transcript.Block
}

type marker struct {
	path string
	cc   *transcript.CacheControl
}

type imageAt struct {
	path string
	w, h int
}

func (c *checker) add(rule, path, format string, args ...any) {
	c.vs = append(c.vs, &Violation{Rule: rule, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) mark(path string, cc *transcript.CacheControl) {
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
		if wire.IsBlank(t.Text) {
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
	case !wire.ValidToolName(t.Name):
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
	// A client tool (no "type", or "custom") needs an object input_schema; server tools
	// ("web_search_20250305", …) are typed and have none.
	var typ string
	_ = json.Unmarshal(def["type"], &typ)
	if typ == "" || typ == "custom" {
		var schema map[string]json.RawMessage
		var schemaType string
		switch err := json.Unmarshal(def["input_schema"], &schema); {
		case err != nil || schema == nil:
			c.add("2.9", path, "client tool %q has no input_schema object", t.Name)
		case json.Unmarshal(schema["type"], &schemaType) != nil || schemaType != "object":
			c.add("2.9", path, "client tool %q input_schema does not have \"type\": \"object\"", t.Name)
		}
	}
	cc := t.CacheControl
	if raw, ok := def["cache_control"]; ok && cc == nil {
		cc = &transcript.CacheControl{}
		if err := json.Unmarshal(raw, cc); err != nil {
			c.add("3.1", path, "tool cache_control is not a cache marker")
		}
	}
	c.mark(path, cc)
}

// isNil reports (once) a nil block, typed or not.
func (c *checker) isNil(path string, b transcript.Block) bool {
	if !transcript.IsNilBlock(b) {
		return false
	}
	c.add("1.1", path, "nil block")
	c.broken = true
	return true
}

func (c *checker) toolID(path, id string) {
	if !wire.ValidToolID(id) {
		c.add("2.10", path, "tool id %q does not match ^[a-zA-Z0-9_-]+$", id)
	}
}

// cacheMarkers checks the number, shape and TTL order of the cache_control markers.
func (c *checker) cacheMarkers() {
	if limit := wire.MaxCacheMarkers; len(c.markers) > limit {
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
	if limit := or(c.opts.MaxBodyBytes, wire.MaxBodyBytes); len(body) > limit {
		c.add("6.1", "", "request body is %d bytes, over %d", len(body), limit)
	}
	if !validText(body) {
		c.encoding(r)
	}
}

// validText reports whether JSON text is valid UTF-8 without unpaired surrogate escapes.
func validText(b []byte) bool { return utf8.Valid(b) && !wire.HasLoneSurrogate(b) }

// encoding locates the parts of a body that is not valid text (6.7): each tool, system block
// and message block (tool_result content block by block) whose encoding is not.
func (c *checker) encoding(r *Request) {
	found := false
	check := func(path string, enc []byte, err error) {
		switch {
		case err != nil || validText(enc):
		case !utf8.Valid(enc):
			c.add("6.7", path, "encodes to invalid UTF-8")
			found = true
		default:
			c.add("6.7", path, "holds a \\u escape of an unpaired surrogate")
			found = true
		}
	}
	for i, t := range r.Tools {
		enc, err := t.marshal()
		check(fmt.Sprintf("tools[%d]", i), enc, err)
	}
	for i, t := range r.System {
		enc, err := transcript.MarshalBlock(t)
		check(fmt.Sprintf("system[%d]", i), enc, err)
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			path := fmt.Sprintf("messages[%d].content[%d]", i, j)
			if tr, ok := b.(*transcript.ToolResult); ok && !tr.StringContent {
				for k, cb := range tr.Content {
					enc, err := transcript.MarshalBlock(cb)
					check(fmt.Sprintf("%s.content[%d]", path, k), enc, err)
				}
				continue
			}
			enc, err := marshalRequestBlock(b)
			check(path, enc, err)
		}
	}
	if !found {
		c.add("6.7", "", "request body is not valid UTF-8 or holds a lone surrogate escape")
	}
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
