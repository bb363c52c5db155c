package agentctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// CacheConfig configures the cache breakpoint stage (Claude Code's addCacheBreakpoints). The
// zero value is the default: one 5-minute marker on the last message, one on the system
// prompt when the tool definitions and the system prompt reach the model's minimum cacheable
// prefix ([Model.MinCacheTokens]), none on the tools.
//
// The stage owns every cache_control marker of the request. It first removes the markers
// already present — on message blocks (a transcript may carry them), on the caller's system
// blocks and on tool definitions — then places its own: exactly one message-level marker, on
// the last block of the last message that can carry one (not thinking, redacted_thinking,
// empty text or cache_edits), or of the penultimate message when [Input.SkipCacheWrite] is
// set, plus the optional system and tools markers. The user continuation normalize appends
// after a trailing assistant message (see [NormalizeConfig]) never carries the marker: the
// next request sends the user's own message in its place, so the marker goes before it. A request never carries more than
// 4 markers, and since all markers share one TTL, the provider's rule that
// 1h markers precede 5m ones holds.
//
// It also keeps cached microcompact valid: a tool_result may carry a cache_reference only
// strictly before the message holding the message-level marker, and a cache_edits deletion
// is sent only for a reference present there; anything else is removed and reported.
type CacheConfig struct {
	// Disable places no marker. The request then carries no cache_control at all (existing
	// markers are still removed), and no cache_reference or cache_edits, which need a cached
	// prefix.
	Disable bool
	// TTL is the markers' time to live: "" (the provider's default, 5 minutes; no "ttl"
	// field is sent), "5m" or "1h". The 1h TTL costs twice the base input price to write.
	// The TTL in effect also says when the cached prefix is cold (idle past it since the last
	// response), which the policy's decisions weigh: see ReadPrice.
	//
	// "auto" chooses between the two from the session's idle gaps: 1h when the gaps of 5 to
	// 60 minutes between consecutive responses would cost more in 5-minute rewrites of the
	// prefix than the 1-hour write premium costs on every token written, else 5m (sent as
	// the default, with no "ttl" field). The choice changes the markers' bytes, so it is a
	// decision: a [transcript.SubtypeCacheTTL] record in [Result.Append] when it changes,
	// read back on every later turn (a fork keeps the one in effect).
	TTL string
	// ReadPrice and WritePrice are a cache read's and a cache write's prices as multiples of
	// the base input price, which the policy weighs its decisions with. Zero: Anthropic's, a
	// read 0.1 and a write 1.25 with the 5-minute TTL, 2 with the 1-hour one. For OpenAI's
	// automatic caching, ReadPrice is the model's cached-input discount (0.5, 0.25 or 0.1 of
	// the input price) and WritePrice 1: no write premium.
	//
	// When the prefix is cold (caching off, or idle past the TTL since the last response) the
	// request rewrites it whatever the policy decides: time-based microcompact clears (its
	// default Gap is the TTL), and from the warning level on a compaction — or a collapse
	// fold, with a producer — is made at once rather than at the threshold. When it is warm,
	// an advisory decision that would make the provider write the prefix again (a fold under
	// the threshold, a time-based clearing with a Gap under the TTL) is made only when it
	// frees at least MinGain tokens per token it rewrites; the Report's CacheCosts give each
	// such decision's reckoning ([CacheCost]).
	ReadPrice, WritePrice float64
	// MinGain is that floor: the tokens a warm advisory decision must free per token of the
	// cached prefix it rewrites. Zero: (WritePrice − ReadPrice) ÷ (ReadPrice × turns ahead),
	// where the rewrite's extra cost equals what the freed tokens save in reads over the
	// requests until the next compaction (see [CacheCost.TurnsAhead]): 1.15 at 10 turns ahead
	// with the 5-minute TTL. Negative: no floor. Mandatory decisions (the threshold, the
	// blocking limit) are never deferred.
	MinGain float64
	// SystemMarker marks the last non-empty system block whatever the size of the prefix it
	// ends. By default it is marked when the tool definitions and the system prompt reach the
	// model's minimum cacheable prefix, the size from which a marker there caches them on
	// their own: a request whose messages changed (a compaction, a clearing, more new blocks
	// than the provider's 20-block lookback, a new session's first request) then reads them
	// instead of writing them again, and a marker adds no token to what is written. Claude
	// Code marks its system prompt too.
	SystemMarker bool
	// NoSystemMarker leaves the system prompt unmarked whatever its size (the one marker on
	// the last message). Setting it with SystemMarker is an error.
	NoSystemMarker bool
	// ToolsMarker also marks the last tool definition, caching all tool definitions.
	ToolsMarker bool
}

// maxMarkers is the most markers a request can carry under c.
func (c CacheConfig) maxMarkers() int {
	n := 1
	if !c.NoSystemMarker {
		n++
	}
	if c.ToolsMarker {
		n++
	}
	return n
}

func (c CacheConfig) validate() error {
	var errs []error
	switch c.TTL {
	case "", "5m", "1h", ttlAuto:
	default:
		errs = append(errs, fmt.Errorf("agentctx: Cache.TTL %q is not \"\", \"5m\", \"1h\" or \"auto\"", c.TTL))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"ReadPrice", c.ReadPrice}, {"WritePrice", c.WritePrice}, {"MinGain", c.MinGain}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 && f.name != "MinGain" {
			errs = append(errs, fmt.Errorf("agentctx: Cache.%s %v is not a finite, non-negative number", f.name, f.v))
		}
	}
	if c.SystemMarker && c.NoSystemMarker {
		errs = append(errs, errors.New("agentctx: Cache.SystemMarker and Cache.NoSystemMarker are both set"))
	}
	if n := c.maxMarkers(); n > wire.MaxCacheMarkers {
		errs = append(errs, fmt.Errorf("agentctx: Cache config places up to %d markers, more than the provider's %d", n, wire.MaxCacheMarkers))
	}
	return errors.Join(errs...)
}

func (c CacheConfig) marker() *transcript.CacheControl {
	return &transcript.CacheControl{Type: "ephemeral", TTL: c.TTL}
}

func (c CacheConfig) ttlName() string {
	if c.TTL == "" {
		return "5m"
	}
	return c.TTL
}

// canCarryCacheControl reports whether a message-level block may hold a cache_control marker.
func canCarryCacheControl(b transcript.Block) bool {
	switch b := b.(type) {
	case *transcript.Text:
		return strings.TrimSpace(b.Text) != ""
	case *transcript.Image, *transcript.Document, *transcript.ToolUse, *transcript.ToolResult, *transcript.ServerToolUse, *transcript.ServerToolResult:
		return true
	}
	return false
}

// stripCacheControl returns b without markers, also inside a tool_result's content, and the
// number removed.
func stripCacheControl(b transcript.Block) (transcript.Block, int) {
	n := 0
	if transcript.CacheControlOf(b) != nil {
		b = transcript.WithCacheControl(b, nil)
		n++
	}
	if tr, ok := b.(*transcript.ToolResult); ok {
		var content []transcript.Block
		for k, cb := range tr.Content {
			if transcript.CacheControlOf(cb) == nil {
				continue
			}
			if content == nil {
				content = slices.Clone(tr.Content)
			}
			content[k] = transcript.WithCacheControl(cb, nil)
			n++
		}
		if content != nil {
			c := *tr
			c.Content = content
			b = &c
		}
	}
	return b, n
}

// cacheStage is the cache-breakpoint stage (see [CacheConfig]).
type cacheStage struct {
	cfg     CacheConfig
	counter *Counter
	// minCache is the model's minimum cacheable prefix: the default system marker is placed
	// from there on (see [CacheConfig.SystemMarker]).
	minCache int
}

// marksSystem reports whether the request's system prompt gets a marker: always with
// SystemMarker, never with NoSystemMarker, else when the tool definitions and the system
// prompt reach the model's minimum cacheable prefix.
func (st *cacheStage) marksSystem(tools []provider.Tool, system []*transcript.Text) bool {
	switch c := &st.cfg; {
	case c.Disable || c.NoSystemMarker:
		return false
	case c.SystemMarker:
		return true
	}
	n := 0
	for _, t := range system {
		n += st.counter.Text(t.Text)
	}
	for _, t := range tools {
		if n >= st.minCache {
			break
		}
		n += st.counter.textBytes(t.Definition)
	}
	return n >= st.minCache
}

func (*cacheStage) name() string { return "cache" }

// run removes stale markers and places the request's markers (see [CacheConfig]).
func (st *cacheStage) run(t *turn) error {
	c := st.cfg
	if c.TTL == ttlAuto {
		c.TTL = decideTTL(t, c)
	}
	rep := t.report.stage("cache")
	msgs := t.req.Messages
	ed := &msgEditor{msgs: msgs, owned: make([]bool, len(msgs))}
	set := ed.set

	// Remove every marker already present.
	for i := range msgs {
		for j, b := range msgs[i].Content {
			if nb, n := stripCacheControl(b); n > 0 {
				set(i, j, nb)
				rep.add(Action{Kind: ActionRepaired, Detail: fmt.Sprintf("removed %d stale cache_control from messages[%d].content[%d]", n, i, j)})
			}
		}
	}
	for i, s := range t.system {
		if s.CacheControl != nil {
			t.system[i] = transcript.WithCacheControl(s, nil).(*transcript.Text)
			rep.add(Action{Kind: ActionRepaired, Detail: fmt.Sprintf("removed cache_control from system[%d]", i)})
		}
	}
	tools, err := st.stripToolMarkers(t, rep)
	if err != nil {
		return err
	}

	// The message-level marker.
	markerMsg := -1
	if !c.Disable {
		start := len(msgs) - 1
		if t.continued {
			// The continuation normalize appended is this request's alone: the next turn
			// sends the user's own message in its place. A marker on it would cache a
			// prefix no later request sends.
			start--
		}
		if t.in.SkipCacheWrite {
			start--
		}
	place:
		for i := start; i >= 0; i-- {
			for j := len(msgs[i].Content) - 1; j >= 0; j-- {
				b := msgs[i].Content[j]
				if !canCarryCacheControl(b) {
					continue
				}
				set(i, j, transcript.WithCacheControl(b, c.marker()))
				markerMsg = i
				rep.add(Action{Kind: ActionMarker, Detail: fmt.Sprintf("messages[%d].content[%d] (%s, %s message), ttl %s", i, j, b.Kind(), msgs[i].Role, c.ttlName())})
				break place
			}
		}
	}
	checkCacheEdits(ed, markerMsg, rep)

	if st.marksSystem(tools, t.system) {
		for i := len(t.system) - 1; i >= 0; i-- {
			if strings.TrimSpace(t.system[i].Text) != "" {
				t.system[i] = transcript.WithCacheControl(t.system[i], c.marker()).(*transcript.Text)
				rep.add(Action{Kind: ActionMarker, Detail: fmt.Sprintf("system[%d], ttl %s", i, c.ttlName())})
				break
			}
		}
	}
	if !c.Disable && c.ToolsMarker && len(tools) > 0 {
		i := len(tools) - 1
		tools[i].CacheControl = c.marker()
		rep.add(Action{Kind: ActionMarker, Detail: fmt.Sprintf("tools[%d] (%s), ttl %s", i, tools[i].Name, c.ttlName())})
	}
	t.req.Tools = tools
	if n := countMarkers(&t.req, t.system); n > wire.MaxCacheMarkers {
		return fmt.Errorf("request carries %d cache_control markers, more than %d", n, wire.MaxCacheMarkers)
	}
	return nil
}

// msgEditor edits request messages copy-on-write: a message's content slice may be shared
// with the view, so it is copied before its first change.
type msgEditor struct {
	msgs  []provider.Message
	owned []bool
}

func (e *msgEditor) own(i int) {
	if !e.owned[i] {
		e.msgs[i].Content = slices.Clone(e.msgs[i].Content)
		e.owned[i] = true
	}
}

func (e *msgEditor) set(i, j int, b transcript.Block) {
	e.own(i)
	e.msgs[i].Content[j] = b
}

// stripToolMarkers returns a copy of the request's tools without markers (on the Tool or in
// its definition), or the tools themselves when none carries one.
func (st *cacheStage) stripToolMarkers(t *turn, rep *StageReport) ([]provider.Tool, error) {
	tools := t.req.Tools
	copied := false
	for i, tool := range tools {
		def := tool.Definition
		var m map[string]json.RawMessage
		if bytes.Contains(def, []byte(`"cache_control"`)) {
			if err := json.Unmarshal(def, &m); err != nil {
				return nil, fmt.Errorf("tools[%d] (%s): %w", i, tool.Name, err)
			}
		}
		_, inDef := m["cache_control"]
		if tool.CacheControl == nil && !inDef && !st.cfg.ToolsMarker {
			continue
		}
		if !copied {
			tools, copied = slices.Clone(tools), true
		}
		if tool.CacheControl != nil || inDef {
			rep.add(Action{Kind: ActionRepaired, Detail: fmt.Sprintf("removed cache_control from tools[%d] (%s)", i, tool.Name)})
		}
		tools[i].CacheControl = nil
		if inDef {
			delete(m, "cache_control")
			b, err := jsonobj.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("tools[%d] (%s): %w", i, tool.Name, err)
			}
			tools[i].Definition = b
		}
	}
	return tools, nil
}

// checkCacheEdits keeps cache editing valid: cache_reference only on tool_results strictly
// before the marker message (markerMsg; -1: none, so no reference at all), and cache_edits
// deletions only for those references, each once.
func checkCacheEdits(ed *msgEditor, markerMsg int, rep *StageReport) {
	msgs, set := ed.msgs, ed.set
	valid := map[string]bool{}
	for i := range msgs {
		for j, b := range msgs[i].Content {
			tr, ok := b.(*transcript.ToolResult)
			if !ok || tr.CacheReference == "" {
				continue
			}
			if i < markerMsg {
				valid[tr.CacheReference] = true
				continue
			}
			set(i, j, tr.WithoutCacheReference())
			rep.add(Action{Kind: ActionRepaired, ToolUseID: tr.ToolUseID,
				Detail: fmt.Sprintf("removed cache_reference from messages[%d].content[%d]: not before the cache marker", i, j)})
		}
	}
	sent := map[string]bool{}
	for i := range msgs {
		for j := 0; j < len(msgs[i].Content); j++ {
			ce, ok := msgs[i].Content[j].(*transcript.CacheEdits)
			if !ok {
				continue
			}
			var keep []transcript.CacheEdit
			for _, e := range ce.Edits {
				if valid[e.CacheReference] && !sent[e.CacheReference] {
					sent[e.CacheReference] = true
					keep = append(keep, e)
				}
			}
			if len(keep) == len(ce.Edits) {
				continue
			}
			rep.add(Action{Kind: ActionDropped, Detail: fmt.Sprintf("messages[%d].content[%d]: %d cache_edits deletions without a cached reference", i, j, len(ce.Edits)-len(keep))})
			if len(keep) > 0 {
				set(i, j, &transcript.CacheEdits{Edits: keep})
				continue
			}
			ed.own(i)
			msgs[i].Content = slices.Delete(msgs[i].Content, j, j+1)
			j--
		}
	}
}

// countMarkers counts the cache_control markers of a request whose system prompt is system.
func countMarkers(r *provider.Request, system []*transcript.Text) int {
	n := 0
	for _, s := range system {
		if s.CacheControl != nil {
			n++
		}
	}
	for _, tool := range r.Tools {
		if tool.CacheControl != nil {
			n++
		}
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if transcript.CacheControlOf(b) != nil {
				n++
			}
			if tr, ok := b.(*transcript.ToolResult); ok {
				for _, cb := range tr.Content {
					if transcript.CacheControlOf(cb) != nil {
						n++
					}
				}
			}
		}
	}
	return n
}
