package transcript

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The record types of an OpenAI Codex rollout that hold no message: the library keeps them in
// the transcript, with the line's payload in [Record.Data], and never sends them. A rollout
// line of any other type that is no message is kept the same way under its own type, and
// reported in [Transcript.Unmapped].
const (
	// TypeCodexSessionMeta is the session's metadata: its id, working directory, the Codex
	// version and the base instructions (which [Transcript.System] holds).
	TypeCodexSessionMeta RecordType = "session_meta"
	// TypeCodexTurnContext is a turn's settings: model, working directory, sandbox and
	// approval policy.
	TypeCodexTurnContext RecordType = "turn_context"
	// TypeCodexEvent is an event for Codex's user interface; the Subtype is the event's type
	// (token_count, user_message, exec_command_end, …). Its token_count events give the
	// responses their usage (see docs/codex.md).
	TypeCodexEvent RecordType = "event_msg"
	// TypeCodexResponseItem is a response item with no part in the model's view, such as a
	// ghost_snapshot (the Subtype); response items that are messages, reasoning or tool calls
	// are user and assistant records.
	TypeCodexResponseItem RecordType = "response_item"
	// TypeCodexState is a session state line of a rollout from before the wrapper
	// ([CodexLegacy]): {"record_type": "state", …}, a snapshot Codex kept for resuming, which
	// the model never saw. It is reported in [Transcript.Unmapped].
	TypeCodexState RecordType = "state"
)

// ErrCodexAppend is matched (with [errors.Is]) by the error of [OpenAppender] and
// [AppendFile] for a file that holds an OpenAI Codex rollout. The library reads rollouts but
// never writes to them: Codex owns the file and may be appending to it, and its format has no
// place for the library's decision and compaction records; a record in the library's format
// would make the file unreadable to Codex. Keep such records elsewhere, e.g. in a transcript
// of their own, or in memory as a simulation does.
var ErrCodexAppend = errors.New("agentctx: the library does not append to a Codex rollout")

// codexBoundaryText is the display text of the compact boundary a Codex compacted item maps
// to (the transcript shows it, the model never does).
const codexBoundaryText = `"Codex compacted the conversation"`

// codexReader maps the lines of a Codex rollout to records (see docs/codex.md). It shares the
// line-level rules of the [Decoder]: torn, invalid and over-long lines are skipped and
// reported, or errors in strict mode.
type codexReader struct {
	d *Decoder
	t *File

	legacy    bool   // the rollout predates the wrapper: see CodexLegacy
	ts        string // legacy: the latest timestamp, for the lines that have none
	session   string // the session id, from the first session_meta
	metaSeen  bool
	model     string   // from the latest turn_context
	cwd       string   // from session_meta and turn_context
	last      string   // uuid of the last record on the chain
	userSince bool     // a user message item came after the last assistant record
	userTexts []string // the texts of the user message items since, not yet matched by an event
	resp      string   // message id of the response in progress, "" between responses
	respLast  int      // index in t.Records of the latest response's last assistant record; -1: none
	respUsed  bool     // the latest response has its usage
	total     string   // total_token_usage of the last token_count, to pass over repeats
	context   int      // context tokens of the last usage, for a boundary's pre-compaction size

	start  int          // index in t.Records of the current line's first record
	idx    int          // records made of the current line so far
	fields []*LineError // fields of the current line that could not be read
}

// readCodex reads a Codex rollout into a transcript of records in the library's terms; see
// [Read] and docs/codex.md.
func readCodex(r io.Reader, name string, opts ReadOptions, variant string) (*File, error) {
	c := &codexReader{d: NewDecoder(r, name, opts), t: &File{Name: name, Format: FormatCodex, Variant: variant}, respLast: -1}
	c.legacy = variant == CodexLegacy
	for {
		line, err := c.d.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(line, &top); err != nil || top == nil {
			if err == nil {
				err = errors.New("not a JSON object")
			}
			if err := c.d.bad(line, err); err != nil {
				return nil, err
			}
			continue
		}
		c.start, c.idx, c.fields = len(c.t.Records), 0, nil
		if c.legacy {
			c.mapLegacy(top, slices.Clone(line)) // the decoder reuses line's bytes
		} else {
			c.mapLine(top)
		}
		first := &c.t.Records[c.start]
		if len(c.fields) > 0 {
			first.Damage = &Damage{Fields: c.fields}
		}
		if err := c.d.record(first); err != nil {
			return nil, err
		}
		for i := c.start; i < len(c.t.Records); i++ {
			c.t.Records[i].Line = c.d.line
			c.t.Lines = append(c.t.Lines, c.d.line)
		}
	}
	finish(c.t, c.d)
	return c.t, nil
}

// mapLine maps one rollout line, {"timestamp", "type", "payload"}, to at least one record.
func (c *codexReader) mapLine(top map[string]json.RawMessage) {
	ts, _ := c.str(top, "timestamp", "timestamp")
	typ, ok := c.str(top, "type", "type")
	if !ok && c.fieldErr("type") == nil {
		c.fail("type", errors.New("missing"))
	}
	payload := top["payload"]
	var extra map[string]json.RawMessage
	for k, v := range top {
		if k != "timestamp" && k != "type" && k != "payload" {
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[k] = v
		}
	}
	before := len(c.t.Records)
	switch typ {
	case "session_meta":
		c.sessionMeta(ts, payload, "payload")
	case "turn_context":
		c.turnContext(ts, payload)
	case "event_msg":
		c.event(ts, payload)
	case "compacted":
		c.compacted(ts, payload)
	case "response_item":
		if p, ok := c.object(payload, "payload"); ok {
			c.item(ts, p, payload, "payload")
		} else {
			c.keep(RecordType(typ), "", ts, payload)
		}
	default:
		c.keep(RecordType(typ), "", ts, payload)
		if typ != "" {
			c.note("type", "rollout item type %q is unknown: kept in the transcript, never sent", typ)
		}
	}
	if len(c.t.Records) == before { // every line is at least one record
		c.keep(RecordType(typ), "", ts, payload)
	}
	if extra != nil {
		c.t.Records[before].Extra = extra
	}
}

// sessionMeta keeps the session's metadata; the first one names the session and gives the
// system prompt. pre is the JSON path of the metadata object: "payload", or "" for the line
// itself (CodexLegacy).
func (c *codexReader) sessionMeta(ts string, payload json.RawMessage, pre string) {
	p, _ := c.object(payload, cmp.Or(pre, "line"))
	r := c.keep(TypeCodexSessionMeta, "", ts, payload)
	if c.metaSeen || p == nil {
		return
	}
	c.metaSeen = true
	c.session, _ = c.str(p, "id", at(pre, "id"))
	r.SessionID = c.session
	if cwd, ok := c.str(p, "cwd", at(pre, "cwd")); ok {
		c.cwd = cwd
	}
	var text string
	if raw, ok := p["base_instructions"]; ok && !isNull(raw) {
		var obj struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(raw, &text); err != nil {
			if err := json.Unmarshal(raw, &obj); err != nil || obj.Text == nil {
				c.fail(at(pre, "base_instructions"), errors.New("neither a string nor an object with a string text"))
			} else {
				text = *obj.Text
			}
		}
	} else {
		text, _ = c.str(p, "instructions", at(pre, "instructions"))
	}
	if strings.TrimSpace(text) != "" {
		c.t.System = []*Text{{Text: text}}
	}
}

// mapLegacy maps one line of a rollout from before the wrapper (CodexLegacy) to at least one
// record: the session metadata line, a bare response item, or a line tagged with a
// record_type (state, session_meta, prev_session_meta, response, event). A line without a
// timestamp of its own, as bare items are, takes the latest one before it: the metadata's.
func (c *codexReader) mapLegacy(top map[string]json.RawMessage, raw json.RawMessage) {
	if ts, ok := c.str(top, "timestamp", "timestamp"); ok {
		c.ts = ts
	}
	ts := c.ts
	before := len(c.t.Records)
	rt, tagged := c.str(top, "record_type", "record_type")
	_, typed := top["type"]
	switch {
	case tagged:
		switch rt {
		case "state":
			c.keep(TypeCodexState, "", ts, raw)
			c.note("record_type", "a session state line holds nothing the model saw: kept in the transcript, never sent")
		case "session_meta", "prev_session_meta":
			c.sessionMeta(ts, raw, "")
		case "response":
			c.item(ts, without(top, "record_type", "timestamp"), raw, "")
		case "event":
			msg, _ := c.object(top["msg"], "msg")
			sub, _ := c.str(msg, "type", "msg.type")
			c.keep(TypeCodexEvent, Subtype(sub), ts, raw)
		default:
			c.keep(RecordType(rt), "", ts, raw)
			c.note("record_type", "rollout record type %q is unknown: kept in the transcript, never sent", rt)
		}
	case !typed && top["id"] != nil:
		c.sessionMeta(ts, raw, "")
	default:
		c.item(ts, top, raw, "")
	}
	if len(c.t.Records) == before { // every line is at least one record
		c.keep(RecordType(rt), "", ts, raw)
	}
}

// turnContext keeps a turn's settings and takes its model and working directory.
func (c *codexReader) turnContext(ts string, payload json.RawMessage) {
	c.keep(TypeCodexTurnContext, "", ts, payload)
	p, _ := c.object(payload, "payload")
	if m, ok := c.str(p, "model", "payload.model"); ok {
		c.model = m
	}
	if cwd, ok := c.str(p, "cwd", "payload.cwd"); ok {
		c.cwd = cwd
	}
}

// event keeps an event; a token_count gives the latest response its usage.
func (c *codexReader) event(ts string, payload json.RawMessage) {
	p, _ := c.object(payload, "payload")
	sub, _ := c.str(p, "type", "payload.type")
	c.keep(TypeCodexEvent, Subtype(sub), ts, payload)
	if w, ok := c.window(p, "payload"); ok {
		c.t.ContextWindow = w
	}
	if sub == "user_message" {
		c.userEvent(ts, p)
		return
	}
	if sub != "token_count" {
		return
	}
	info, _ := c.object(p["info"], "payload.info")
	if info == nil {
		return // rate limits only
	}
	if w, ok := c.window(info, "payload.info"); ok {
		c.t.ContextWindow = w
	}
	total := string(info["total_token_usage"])
	repeat := total != "" && total == c.total
	c.total = total
	last, _ := c.object(info["last_token_usage"], "payload.info.last_token_usage")
	if last == nil || repeat || c.respLast < 0 || c.respUsed {
		return
	}
	var u Usage
	input := c.count(last, "input_tokens", "payload.info.last_token_usage")
	cached := c.count(last, "cached_input_tokens", "payload.info.last_token_usage")
	u.CacheReadInputTokens = min(cached, input)
	u.InputTokens = input - u.CacheReadInputTokens
	u.OutputTokens = c.count(last, "output_tokens", "payload.info.last_token_usage")
	if raw, ok := last["reasoning_output_tokens"]; ok {
		u.Extra = map[string]json.RawMessage{"reasoning_output_tokens": raw}
	}
	if u.Total() == 0 {
		return
	}
	c.t.Records[c.respLast].Message.Usage = &u
	c.respUsed, c.resp = true, ""
	c.context = u.ContextTokens()
}

// userEvent maps a user_message event to a user message when no user message item of the
// turn said it: Codex writes the item first and the event after it, but some clients (Codex
// Desktop) write only the event, and the model saw the message all the same.
func (c *codexReader) userEvent(ts string, p map[string]json.RawMessage) {
	msg, _ := c.str(p, "message", "payload.message")
	if c.userSince {
		// The event repeats a user item of the turn: each item stands for one event.
		want := strings.TrimSpace(msg)
		for i, text := range c.userTexts {
			if strings.Contains(text, want) {
				c.userTexts = slices.Delete(c.userTexts, i, i+1)
				return
			}
		}
	}
	var blocks []Block
	if strings.TrimSpace(msg) != "" {
		blocks = append(blocks, &Text{Text: msg})
	}
	if raw, ok := p["images"]; ok && !isNull(raw) {
		var urls []json.RawMessage
		if err := json.Unmarshal(raw, &urls); err != nil {
			c.fail("payload.images", errors.New("not an array"))
		}
		for i, u := range urls {
			path := fmt.Sprintf("payload.images[%d]", i)
			item, _ := json.Marshal(map[string]json.RawMessage{"type": json.RawMessage(`"input_image"`), "image_url": u})
			blocks = append(blocks, c.contentItem(item, path))
		}
	}
	if raw, ok := p["local_images"]; ok && string(raw) != "[]" && !isNull(raw) {
		c.note("payload.local_images", "images the user attached from disk are named by path only: not in the view")
	}
	if len(blocks) == 0 {
		return
	}
	c.user(ts, &Message{Role: RoleUser, Content: blocks}, false)
}

// window reads a model_context_window of p; ok is false without one.
func (c *codexReader) window(p map[string]json.RawMessage, path string) (int, bool) {
	if raw, ok := p["model_context_window"]; !ok || isNull(raw) {
		return 0, false
	}
	n := c.count(p, "model_context_window", path)
	return n, n > 0
}

// compacted maps a compaction: a compact boundary, then what Codex puts in the model's view
// after it: the replacement history when the item has one, else its summary message.
func (c *codexReader) compacted(ts string, payload json.RawMessage) {
	p, _ := c.object(payload, "payload")
	msg, _ := c.str(p, "message", "payload.message")
	// A token_count after the compaction is the summarizer's call, not a response in the
	// view: no record of the view takes it.
	defer func() { c.resp, c.respLast, c.respUsed = "", -1, false }()
	b := c.base(TypeSystem, ts)
	b.Subtype, b.Level, b.Content = SubtypeCompactBoundary, "info", json.RawMessage(codexBoundaryText)
	b.LogicalParentUUID = c.last
	b.CompactMetadata = &CompactMetadata{PreTokens: c.context, Summarizer: "codex", Extra: map[string]json.RawMessage{"codex": payload}}
	if trig, ok := c.str(p, "trigger", "payload.trigger"); ok {
		b.CompactMetadata.Trigger = trig
	}
	c.last = ""
	c.onChain(&b)
	c.add(b)

	first := len(c.t.Records)
	if raw, ok := p["replacement_history"]; ok && !isNull(raw) {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			c.fail("payload.replacement_history", errors.New("not an array"))
		}
		for i, it := range items {
			path := fmt.Sprintf("payload.replacement_history[%d]", i)
			if obj, ok := c.object(it, path); ok {
				c.item(ts, obj, it, path)
			}
		}
	}
	if msg == "" {
		if len(c.t.Records) == first {
			c.note("payload.message", "compaction without a summary or a replacement history: the view after it starts empty")
		}
		return
	}
	for i := len(c.t.Records) - 1; i >= first; i-- {
		r := &c.t.Records[i]
		if r.Type == TypeUser && !r.IsMeta && r.Message != nil && strings.Contains(TextOf(r.Message.Content), msg) {
			r.IsCompactSummary = true
			return
		}
	}
	s := c.base(TypeUser, ts)
	s.IsCompactSummary = true
	s.Message = &Message{Role: RoleUser, Content: []Block{&Text{Text: msg}}}
	c.onChain(&s)
	c.add(s)
}

// item maps one response item (raw is its JSON, p its fields) to a record.
func (c *codexReader) item(ts string, p map[string]json.RawMessage, raw json.RawMessage, path string) {
	typ, _ := c.str(p, "type", at(path, "type"))
	switch typ {
	case "message":
		c.message(ts, p, path)
	case "reasoning":
		th := &Thinking{Extra: without(p, "type")}
		th.Thinking = c.texts(p["summary"], at(path, "summary"))
		if th.Thinking == "" {
			th.Thinking = c.texts(p["content"], at(path, "content"))
		}
		c.assistant(ts, th)
	case "function_call", "custom_tool_call", "local_shell_call":
		c.assistant(ts, c.toolUse(typ, p, path))
	case "function_call_output", "custom_tool_call_output":
		id, _ := c.str(p, "call_id", at(path, "call_id"))
		res := &ToolResult{ToolUseID: id, Extra: without(p, "type", "call_id", "output")}
		res.Content, res.StringContent, res.IsError = c.output(p["output"], at(path, "output"))
		c.user(ts, &Message{Role: RoleUser, Content: []Block{res}}, false)
	case "ghost_snapshot":
		c.keep(TypeCodexResponseItem, Subtype(typ), ts, raw)
	default:
		if typ == "" {
			c.keep(TypeCodexResponseItem, "", ts, raw)
			c.note(cmp.Or(path, "type"), "response item without a type: kept in the transcript, never sent")
			return
		}
		// What the model saw but a Messages request cannot hold (web_search_call, an encrypted
		// compaction, item types newer than this reader): kept as an unknown block, which the
		// request builder drops and reports. Inputs are named *_output in the Responses API.
		b := &UnknownBlock{Type: BlockKind(typ), JSON: raw}
		switch {
		case typ == "compaction" || typ == "compaction_summary":
			// OpenAI's compaction: the summary the model reads after a compaction,
			// encrypted; Codex sends it back as input. Outside a compacted line the view
			// starts at it (see CompactionOf); no other model can read it.
			c.user(ts, &Message{Role: RoleUser, Content: []Block{b}}, false)
			c.note(cmp.Or(path, "type"), "%s is a summary encrypted by OpenAI's compaction, unreadable to any other model: kept as an unknown block", typ)
			return
		case strings.HasSuffix(typ, "_output"):
			c.user(ts, &Message{Role: RoleUser, Content: []Block{b}}, false)
		default:
			c.assistant(ts, b)
		}
		c.note(cmp.Or(path, "type"), "%s has no counterpart in a Messages request: kept as an unknown block, which requests drop", typ)
	}
}

// message maps a message item: user text and images, assistant text, developer and system
// instructions (a meta user message, as Claude Code writes injected context).
func (c *codexReader) message(ts string, p map[string]json.RawMessage, path string) {
	role, _ := c.str(p, "role", at(path, "role"))
	blocks := c.content(p["content"], at(path, "content"))
	m := &Message{Role: RoleUser, Content: blocks, Extra: messageExtra(without(p, "type", "role", "content"))}
	switch role {
	case "assistant":
		m.Role = RoleAssistant
		c.assistantMessage(ts, m)
	case "user":
		c.user(ts, m, false)
		c.userSince, c.userTexts = true, append(c.userTexts, TextOf(blocks))
	case "developer", "system":
		c.user(ts, m, true)
	default:
		c.user(ts, m, true)
		c.note(at(path, "role"), "message role %q is unknown: sent as context in a user message", role)
	}
}

// messageFields are the keys a [Message] encodes itself.
var messageFields = []string{"id", "model", "stop_reason", "stop_sequence", "usage"}

// messageExtra keeps the fields of a Codex message item that the view does not use; one that
// a Message encodes itself (an item's own "id", say) is kept under a "codex_" prefix, so the
// records written back as a Claude Code transcript read as the same messages.
func messageExtra(extra map[string]json.RawMessage) map[string]json.RawMessage {
	return prefixed(extra, messageFields...)
}

// toolUseFields are the keys a [ToolUse] encodes itself.
var toolUseFields = []string{"id", "name", "input", "cache_control"}

// prefixed moves the keys of extra that a block or message encodes itself under a "codex_"
// prefix: written as a Claude Code transcript, a Responses item's own "id" would otherwise
// sit beside the block's, and the last one read would win.
func prefixed(extra map[string]json.RawMessage, keys ...string) map[string]json.RawMessage {
	for _, k := range keys {
		if v, ok := extra[k]; ok {
			delete(extra, k)
			extra["codex_"+k] = v
		}
	}
	return extra
}

// toolUse maps a function, custom or local shell call to a tool_use block with the call id.
// A function call's arguments are its input; a custom tool's free-form input is sent as
// {"input": …}, since a tool_use input is an object.
func (c *codexReader) toolUse(typ string, p map[string]json.RawMessage, path string) *ToolUse {
	id, _ := c.str(p, "call_id", at(path, "call_id"))
	name, _ := c.str(p, "name", at(path, "name"))
	tu := &ToolUse{ID: id, Name: name}
	switch typ {
	case "function_call":
		tu.Extra = without(p, "type", "call_id", "name", "arguments")
		raw := p["arguments"]
		var args string
		if err := json.Unmarshal(raw, &args); err == nil {
			if json.Valid([]byte(args)) {
				tu.Input = json.RawMessage(args)
			} else {
				tu.Input = raw // not JSON: the request builder repairs it and says so
			}
		} else if len(raw) > 0 && raw[0] == '{' {
			tu.Input = raw
		} else if len(raw) > 0 {
			c.fail(at(path, "arguments"), errors.New("neither a string nor an object"))
		}
	case "custom_tool_call":
		tu.Extra = without(p, "type", "call_id", "name", "input")
		in, _ := c.str(p, "input", at(path, "input"))
		tu.Input, _ = json.Marshal(map[string]string{"input": in})
	case "local_shell_call":
		tu.Extra = without(p, "type", "call_id", "action")
		if id == "" {
			tu.ID, _ = c.str(p, "id", at(path, "id"))
		}
		tu.Name = "local_shell"
		tu.Input = p["action"]
	}
	tu.Extra = prefixed(tu.Extra, toolUseFields...)
	return tu
}

// content maps a message's content items.
func (c *codexReader) content(raw json.RawMessage, path string) []Block {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{&Text{Text: s}}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		c.fail(path, errors.New("neither a string nor an array"))
		return nil
	}
	out := make([]Block, 0, len(items))
	for i, it := range items {
		out = append(out, c.contentItem(it, fmt.Sprintf("%s[%d]", path, i)))
	}
	return out
}

// contentItem maps one content item: input_text, output_text and refusal are text,
// input_image an image; anything else is kept as an unknown block.
func (c *codexReader) contentItem(raw json.RawMessage, path string) Block {
	p, ok := c.object(raw, path)
	if !ok {
		return &UnknownBlock{JSON: raw}
	}
	typ, _ := c.str(p, "type", at(path, "type"))
	switch typ {
	case "input_text", "output_text", "text":
		if text, ok := c.str(p, "text", at(path, "text")); ok {
			return &Text{Text: text, Extra: without(p, "type", "text")}
		}
	case "refusal":
		if text, ok := c.str(p, "refusal", at(path, "refusal")); ok {
			return &Text{Text: text, Extra: without(p, "type", "refusal")}
		}
	case "input_image":
		url, _ := c.str(p, "image_url", at(path, "image_url"))
		img := &Image{Extra: without(p, "type", "image_url")}
		if mt, data, ok := dataURL(url); ok {
			img.Source = MediaSource{Type: "base64", MediaType: mt, Data: data}
			return img
		}
		if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
			img.Source = MediaSource{Type: "url", URL: url}
			return img
		}
		c.note(path, "input_image without a base64 data URL or an http(s) URL: kept as an unknown block")
		return &UnknownBlock{Type: BlockKind(typ), JSON: raw}
	default:
		c.note(path, "content item type %q is unknown: kept as an unknown block, which requests drop", typ)
	}
	return &UnknownBlock{Type: BlockKind(typ), JSON: raw}
}

// output maps a tool call's output: a string, content items, or (older Codex versions) an
// object with "content" and "success".
func (c *codexReader) output(raw json.RawMessage, path string) (content []Block, str, isErr bool) {
	if len(raw) == 0 || isNull(raw) {
		return []Block{&Text{}}, true, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{&Text{Text: s}}, true, false
	}
	if raw[0] == '[' {
		return c.content(raw, path), false, false
	}
	p, ok := c.object(raw, path)
	if !ok {
		return nil, false, false
	}
	if raw, ok := p["success"]; ok {
		var success bool
		if json.Unmarshal(raw, &success) != nil {
			c.fail(at(path, "success"), errors.New("not a boolean"))
		}
		isErr = !success && string(raw) == "false"
	}
	inner := p["content"]
	if items, ok := p["content_items"]; ok && !isNull(items) {
		inner = items
	}
	content, str, _ = c.output(inner, at(path, "content"))
	return content, str, isErr
}

// texts joins the text of reasoning summary or content parts with blank lines.
func (c *codexReader) texts(raw json.RawMessage, path string) string {
	if len(raw) == 0 || isNull(raw) {
		return ""
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		c.fail(path, errors.New("not an array"))
		return ""
	}
	var out []string
	for i, part := range parts {
		p, ok := c.object(part, fmt.Sprintf("%s[%d]", path, i))
		if !ok {
			continue
		}
		if t, ok := c.str(p, "text", fmt.Sprintf("%s[%d].text", path, i)); ok && t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n\n")
}

// assistant adds an assistant record holding one block of the response in progress.
func (c *codexReader) assistant(ts string, b Block) {
	c.assistantMessage(ts, &Message{Role: RoleAssistant, Content: []Block{b}})
}

// assistantMessage adds m as an assistant record of the response in progress, starting a
// response when none is: the items of one response share a message id, as the records of
// one Claude Code response do, and its last record takes the response's usage.
func (c *codexReader) assistantMessage(ts string, m *Message) {
	if c.resp == "" {
		c.resp = "codex_" + ContentUUID("codex-response", c.session+"\x00"+strconv.Itoa(c.d.line)+"\x00"+strconv.Itoa(c.idx))
		c.respUsed = false
	}
	m.ID, m.Type, m.Model = c.resp, "message", c.model
	r := c.base(TypeAssistant, ts)
	r.Message = m
	c.onChain(&r)
	c.respLast = c.add(r)
	c.userSince, c.userTexts = false, c.userTexts[:0]
}

// user adds a user record; a user record ends the response in progress.
func (c *codexReader) user(ts string, m *Message, meta bool) {
	r := c.base(TypeUser, ts)
	r.Message, r.IsMeta = m, meta
	c.onChain(&r)
	c.add(r)
	c.resp = ""
}

// keep adds a record that holds no message: raw is the line's payload.
func (c *codexReader) keep(typ RecordType, sub Subtype, ts string, raw json.RawMessage) *Record {
	r := c.base(typ, ts)
	r.Subtype, r.Data = sub, raw
	return &c.t.Records[c.add(r)]
}

// base returns a record of type typ with the line's timestamp and the session's id.
func (c *codexReader) base(typ RecordType, ts string) Record {
	return Record{Type: typ, Timestamp: ts, SessionID: c.session}
}

// onChain gives r a uuid derived from the session and its place in the file, and links it to
// the chain's last record.
func (c *codexReader) onChain(r *Record) {
	r.UUID = ContentUUID("codex", c.session+"\x00"+strconv.Itoa(c.d.line)+"\x00"+strconv.Itoa(c.idx))
	r.ParentUUID, c.last = c.last, r.UUID
	r.Cwd = c.cwd
}

// add appends r and returns its index.
func (c *codexReader) add(r Record) int {
	c.t.Records = append(c.t.Records, r)
	c.idx++
	return len(c.t.Records) - 1
}

// object decodes raw as a JSON object; a value that is not one is a field error at path
// (missing and null are not, and give ok false).
func (c *codexReader) object(raw json.RawMessage, path string) (map[string]json.RawMessage, bool) {
	if len(raw) == 0 || isNull(raw) {
		return nil, false
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil {
		c.fail(path, errors.New("not a JSON object"))
		return nil, false
	}
	return p, true
}

// str reads the string p[key]; a value of another type is a field error at path. ok is
// false when the field is missing, null or not a string.
func (c *codexReader) str(p map[string]json.RawMessage, key, path string) (string, bool) {
	raw, ok := p[key]
	if !ok || isNull(raw) {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		c.fail(path, errors.New("not a string"))
		return "", false
	}
	return s, true
}

// count reads the token count p[key] (0 when missing); a value that is not a non-negative
// integer is a field error.
func (c *codexReader) count(p map[string]json.RawMessage, key, path string) int {
	raw, ok := p[key]
	if !ok || isNull(raw) {
		return 0
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 {
		c.fail(at(path, key), errors.New("not a non-negative integer"))
		return 0
	}
	return n
}

// fail records that the field at path could not be read.
func (c *codexReader) fail(path string, err error) {
	if c.fieldErr(path) == nil {
		c.fields = append(c.fields, &LineError{Field: path, Err: err})
	}
}

// fieldErr returns the current line's error for path, or nil.
func (c *codexReader) fieldErr(path string) *LineError {
	for _, e := range c.fields {
		if e.Field == path {
			return e
		}
	}
	return nil
}

// note reports an item the mapping keeps without a counterpart in the model's view.
func (c *codexReader) note(path, format string, args ...any) {
	c.t.Unmapped = append(c.t.Unmapped, &LineError{File: c.d.name, Line: c.d.line, Field: path, Err: fmt.Errorf(format, args...)})
}

// without returns p without the keys, or nil when nothing is left.
func without(p map[string]json.RawMessage, keys ...string) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for k, v := range p {
		if !slices.Contains(keys, k) {
			if out == nil {
				out = map[string]json.RawMessage{}
			}
			out[k] = v
		}
	}
	return out
}

// at returns the JSON path of key in the object at path ("" for the line itself).
func at(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// dataURL splits a base64 data URL ("data:image/png;base64,…") into media type and data.
func dataURL(url string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return "", "", false
	}
	head, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mediaType, ok = strings.CutSuffix(head, ";base64")
	return mediaType, data, ok && mediaType != ""
}
