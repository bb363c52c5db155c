package transcript

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/agentctx/agentctx/internal/jsonobj"
	"github.com/google/uuid"
)

// RecordType is the top-level "type" of a transcript record.
type RecordType string

// The record types of a Claude Code session file. Any other type is kept and round-trips
// unchanged; the chain builder indexes it if it has a uuid.
const (
	TypeUser                RecordType = "user"
	TypeAssistant           RecordType = "assistant"
	TypeSystem              RecordType = "system"
	TypeSummary             RecordType = "summary"
	TypeProgress            RecordType = "progress"
	TypeAttachment          RecordType = "attachment"
	TypeFileHistorySnapshot RecordType = "file-history-snapshot"
	TypeQueueOperation      RecordType = "queue-operation"
	TypePermissionMode      RecordType = "permission-mode"
	TypeLastPrompt          RecordType = "last-prompt"
	TypeCustomTitle         RecordType = "custom-title"
	TypeAgentSetting        RecordType = "agent-setting"
	TypePRLink              RecordType = "pr-link"
	TypeAITitle             RecordType = "ai-title"
	// TypeContentReplacement records what Claude Code showed the model instead of a tool
	// result: see [Record.ContentReplacements].
	TypeContentReplacement RecordType = "content-replacement"
)

// Subtype is the "subtype" of a system record.
type Subtype string

// System record subtypes written by Claude Code.
const (
	SubtypeCompactBoundary      Subtype = "compact_boundary"
	SubtypeMicrocompactBoundary Subtype = "microcompact_boundary"
	SubtypeStopHookSummary      Subtype = "stop_hook_summary"
	SubtypeTurnDuration         Subtype = "turn_duration"
	SubtypeLocalCommand         Subtype = "local_command"
	SubtypeAwaySummary          Subtype = "away_summary"
	SubtypeAPIError             Subtype = "api_error"
	SubtypeInformational        Subtype = "informational"
	SubtypeBridgeStatus         Subtype = "bridge_status"
)

// Subtypes of the system records the library writes for its own decisions. Each carries its
// metadata in its own field (see [Record]) and has no parentUuid: decision records sit beside
// the conversation chain, never on it, and apply to whatever branch names the ids they name.
const (
	// SubtypeToolResultBudget freezes tool-result budget decisions: [Record.Budget].
	SubtypeToolResultBudget Subtype = "agentctx_tool_result_budget"
	// SubtypeSnip removes records from the model's view: [Record.Snip].
	SubtypeSnip Subtype = "agentctx_snip"
	// SubtypeMicrocompact clears old tool results: [Record.Microcompact].
	SubtypeMicrocompact Subtype = "agentctx_microcompact"
	// SubtypeCollapseCommit replaces a span by its summary: [Record.Collapse].
	SubtypeCollapseCommit Subtype = "agentctx_collapse_commit"
	// SubtypeCompactFailure records a failed compaction attempt: [Record.CompactFailure].
	// The circuit breaker counts them.
	SubtypeCompactFailure Subtype = "agentctx_compact_failure"
	// SubtypePin pins records so that their content survives every compaction verbatim:
	// [Record.Pin].
	SubtypePin Subtype = "agentctx_pin"
	// SubtypeRecovery records a rung of the recovery ladder run after a provider error:
	// [Record.Recovery] (see [github.com/agentctx/agentctx.Pipeline.Recover]).
	SubtypeRecovery Subtype = "agentctx_recovery"
	// SubtypeReminder puts a reminder in the model's view after a record: [Record.Reminder].
	SubtypeReminder Subtype = "agentctx_reminder"
	// SubtypeSessionMemory keeps a session-memory extraction: [Record.SessionMemory]. It
	// changes nothing in the view; a compaction may use it as its summary.
	SubtypeSessionMemory Subtype = "agentctx_session_memory"
	// SubtypeCacheTTL sets the time to live of the request's cache markers from that record
	// on: [Record.CacheTTL] (see [github.com/agentctx/agentctx.CacheConfig]'s TTL "auto").
	SubtypeCacheTTL Subtype = "agentctx_cache_ttl"
	// SubtypeUsage attaches the provider's usage to a response recorded before it was known:
	// [Record.LateUsage]. It changes nothing in the view; the pressure figure reads it.
	SubtypeUsage Subtype = "agentctx_usage"
)

// Record is one line of a durable transcript. The fields are those of Claude Code's session
// format; fields the library does not know are kept in Extra and written back unchanged, and a
// known field that was present (even as false, "" or null) is written back as it was.
//
// Records are values of an append-only log: the library never modifies a record it read.
type Record struct {
	Type                      RecordType
	Subtype                   Subtype
	UUID                      string
	ParentUUID                string // "" for a root (null in the file)
	LogicalParentUUID         string // compact boundaries: the record before the boundary
	IsSidechain               bool
	IsMeta                    bool
	IsCompactSummary          bool
	IsVisibleInTranscriptOnly bool
	IsAPIErrorMessage         bool
	IsVirtual                 bool
	AgentID                   string
	SessionID                 string
	Timestamp                 string // ISO-8601 as written; see [Record.Time]
	RequestID                 string
	Message                   *Message        // user and assistant records
	Content                   json.RawMessage // system records: display text
	Level                     string
	CompactMetadata           *CompactMetadata
	ToolUseResult             json.RawMessage // transcript-only structured tool result
	SourceToolAssistantUUID   string
	ToolUseID                 string // progress and system records: "toolUseID"
	ParentToolUseID           string
	Data                      json.RawMessage // progress records; a Codex rollout line's payload (see [TypeCodexEvent])
	Attachment                json.RawMessage // attachment records
	Summary                   string          // summary records: the title
	LeafUUID                  string          // summary records
	Cwd                       string          // the session's working directory
	SourceToolUseID           string          // meta records a tool call produced (skill content)

	Budget         *BudgetDecision       // SubtypeToolResultBudget
	Snip           *SnipDecision         // SubtypeSnip
	Microcompact   *MicrocompactDecision // SubtypeMicrocompact
	Collapse       *CollapseCommit       // SubtypeCollapseCommit
	CompactFailure *CompactFailure       // SubtypeCompactFailure
	Pin            *PinDecision          // SubtypePin
	Reminder       *ReminderDecision     // SubtypeReminder
	CacheTTL       *CacheTTLDecision     // SubtypeCacheTTL
	// Recovery is a rung of the recovery ladder: on a SubtypeRecovery decision record, or
	// on the user record of a "continue where you stopped" turn (see [github.com/agentctx/agentctx.Pipeline.Recover]).
	Recovery *RecoveryDecision
	// Rehydration marks a user record a compaction wrote to re-inject working material (a
	// file, a skill, the todo list) after its summary.
	Rehydration *Rehydration
	// SessionMemory is a session-memory extraction, on a SubtypeSessionMemory record.
	SessionMemory *SessionMemoryExtraction
	// Announcement marks a meta user record in which the runtime told the model of a change
	// to its tools, MCP servers or agents, or of a background task's state; a compaction
	// re-injects the latest one of each kind and name after its summary.
	Announcement *Announcement
	// LateUsage is the usage of a response recorded before it was known, on a SubtypeUsage
	// record.
	LateUsage *LateUsage
	// History is what a compact boundary the library wrote says of the transcript before its
	// cut (see [History]).
	History *History

	Extra map[string]json.RawMessage // unknown fields, written back unchanged

	// Line is the 1-based line the record was read from, set by the [Decoder]; 0 for records
	// built in code. It is not written.
	Line int
	// Damage is what reading the record could not take as written: fields that could not be
	// read, and lines before it that were no record at all. Nil for a clean record. It is not
	// written: the record writes back as it was read.
	Damage *Damage
	// Cut is true on the compact boundary at whose cut a read stopped, reading its History
	// instead of the records before the cut (see [ReadOptions.TailMinBytes]): those records
	// are not in the read, and [Record.CutHistory] stands for them. It is not written.
	Cut bool

	presence jsonobj.Presence
	// scanned is set on the compact boundary of a tail read that scanned the lines before
	// its cut: the cache TTL's weighing of them.
	scanned *scannedCut
}

func (r *Record) fields() []jsonobj.Field { return r.appendFields(nil) }

// appendFields appends the record's fields to dst: a decoder reuses one slice for every line.
func (r *Record) appendFields(dst []jsonobj.Field) []jsonobj.Field {
	return append(dst,
		jsonobj.Field{Key: "type", Ptr: &r.Type},
		jsonobj.Field{Key: "subtype", Ptr: &r.Subtype},
		jsonobj.Field{Key: "uuid", Ptr: &r.UUID},
		jsonobj.Field{Key: "parentUuid", Ptr: &r.ParentUUID},
		jsonobj.Field{Key: "logicalParentUuid", Ptr: &r.LogicalParentUUID},
		jsonobj.Field{Key: "isSidechain", Ptr: &r.IsSidechain},
		jsonobj.Field{Key: "isMeta", Ptr: &r.IsMeta},
		jsonobj.Field{Key: "isCompactSummary", Ptr: &r.IsCompactSummary},
		jsonobj.Field{Key: "isVisibleInTranscriptOnly", Ptr: &r.IsVisibleInTranscriptOnly},
		jsonobj.Field{Key: "isApiErrorMessage", Ptr: &r.IsAPIErrorMessage},
		jsonobj.Field{Key: "isVirtual", Ptr: &r.IsVirtual},
		jsonobj.Field{Key: "agentId", Ptr: &r.AgentID},
		jsonobj.Field{Key: "sessionId", Ptr: &r.SessionID},
		jsonobj.Field{Key: "timestamp", Ptr: &r.Timestamp},
		jsonobj.Field{Key: "requestId", Ptr: &r.RequestID},
		jsonobj.Field{Key: "message", Ptr: &r.Message},
		jsonobj.Field{Key: "content", Ptr: &r.Content},
		jsonobj.Field{Key: "level", Ptr: &r.Level},
		jsonobj.Field{Key: "compactMetadata", Ptr: &r.CompactMetadata},
		jsonobj.Field{Key: "toolUseResult", Ptr: &r.ToolUseResult},
		jsonobj.Field{Key: "sourceToolAssistantUUID", Ptr: &r.SourceToolAssistantUUID},
		jsonobj.Field{Key: "toolUseID", Ptr: &r.ToolUseID},
		jsonobj.Field{Key: "parentToolUseID", Ptr: &r.ParentToolUseID},
		jsonobj.Field{Key: "data", Ptr: &r.Data},
		jsonobj.Field{Key: "attachment", Ptr: &r.Attachment},
		jsonobj.Field{Key: "summary", Ptr: &r.Summary},
		jsonobj.Field{Key: "leafUuid", Ptr: &r.LeafUUID},
		jsonobj.Field{Key: "budgetDecision", Ptr: &r.Budget},
		jsonobj.Field{Key: "snipMetadata", Ptr: &r.Snip},
		jsonobj.Field{Key: "microcompactDecision", Ptr: &r.Microcompact},
		jsonobj.Field{Key: "collapseCommit", Ptr: &r.Collapse},
		jsonobj.Field{Key: "cwd", Ptr: &r.Cwd},
		jsonobj.Field{Key: "sourceToolUseID", Ptr: &r.SourceToolUseID},
		jsonobj.Field{Key: "compactFailure", Ptr: &r.CompactFailure},
		jsonobj.Field{Key: "pinDecision", Ptr: &r.Pin},
		jsonobj.Field{Key: "agentctxRehydration", Ptr: &r.Rehydration},
		jsonobj.Field{Key: "recoveryDecision", Ptr: &r.Recovery},
		jsonobj.Field{Key: "reminderDecision", Ptr: &r.Reminder},
		jsonobj.Field{Key: "cacheTTLDecision", Ptr: &r.CacheTTL},
		jsonobj.Field{Key: "sessionMemory", Ptr: &r.SessionMemory},
		jsonobj.Field{Key: "agentctxAnnouncement", Ptr: &r.Announcement},
		jsonobj.Field{Key: "lateUsage", Ptr: &r.LateUsage},
		jsonobj.Field{Key: "agentctxHistory", Ptr: &r.History},
	)
}

// MarshalJSON encodes the record as one transcript line (without the newline).
func (r Record) MarshalJSON() ([]byte, error) {
	return jsonobj.Encode(r.fields(), r.presence, r.Extra)
}

// UnmarshalJSON decodes a transcript line. Data that is not a JSON object is an error. A field
// that cannot be read (a usage figure like 1e400, a numeric timestamp, a block without a type)
// is not: the record is kept with that field absent, its raw value kept with the unknown
// fields of the object holding it (a block that cannot be read at all becomes an
// [*UnknownBlock]), so the record writes back as it was read; [Record.Damage] lists each such
// field by its JSON path, e.g. "message.usage.input_tokens".
func (r *Record) UnmarshalJSON(data []byte) error {
	if reflect.ValueOf(r).Elem().IsZero() {
		var d lineDecoder
		return r.decode(&d, data)
	}
	// Decoding into a record that holds values already keeps those of the fields the line
	// does not have, as encoding/json does: the single pass assumes a zero record.
	return r.decodeRef(data)
}

// decode decodes the line data into *r, which must be zero: in one pass with d, or when the
// line is not one that pass takes whole, with the reference decoder (see record_decode.go).
func (r *Record) decode(d *lineDecoder, data []byte) error {
	if d.decodeRecordFast(data, r) {
		return nil
	}
	*r = Record{}
	return r.decodeRef(data)
}

// decodeRef is the reference decoder of a transcript line: jsonobj.Decode over each object,
// nesting level by nesting level, naming every field it cannot read.
func (r *Record) decodeRef(data []byte) error {
	extra, err := jsonobj.Decode(data, r.fields(), &r.presence)
	part, ok := jsonobj.AsPartial(err)
	if err != nil && !ok {
		return err
	}
	r.Extra = extra
	if ok {
		d := &Damage{}
		for _, e := range part.Fields {
			d.Fields = append(d.Fields, &LineError{Field: e.Path, Err: e.Err})
		}
		r.Damage = d
	}
	return nil
}

// Time parses Timestamp; it returns the zero time when the record has none or it is malformed.
// Timestamps are metadata: file order and the parentUuid graph decide order.
func (r *Record) Time() time.Time {
	t, err := time.Parse(time.RFC3339Nano, r.Timestamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

// IsChainRecord reports whether the record can sit on the parentUuid chain (it has a uuid).
func (r *Record) IsChainRecord() bool { return r.UUID != "" }

// IsConversation reports whether the record is a user or assistant message record.
func (r *Record) IsConversation() bool {
	return (r.Type == TypeUser || r.Type == TypeAssistant) && r.Message != nil
}

// IsCompactBoundary reports whether the record is a compact boundary (a hard chain root).
func (r *Record) IsCompactBoundary() bool {
	return r.Type == TypeSystem && r.Subtype == SubtypeCompactBoundary
}

// IsDecision reports whether the record is one of the library's own decision records.
func (r *Record) IsDecision() bool {
	switch r.Subtype {
	case SubtypeToolResultBudget, SubtypeSnip, SubtypeMicrocompact, SubtypeCollapseCommit,
		SubtypeCompactFailure, SubtypePin, SubtypeRecovery, SubtypeReminder, SubtypeCacheTTL:
		return r.Type == TypeSystem
	}
	return false
}

// CompactMetadata describes a compaction on its boundary record, in Claude Code's shape.
type CompactMetadata struct {
	Trigger    string // "auto" or "manual"
	PreTokens  int    // the pressure figure that led to the compaction
	PostTokens int    // the pressure figure of the first request after it
	// PreservedSegment names the records kept verbatim after the summary, when the compaction
	// kept a tail; [BuildChain] relinks them (see [PreservedSegment]).
	PreservedSegment *PreservedSegment
	// Summarizer names what wrote the summary ("extractive", "session_memory", or the
	// Summarizer's name); written by this library only.
	Summarizer string
	// Fallback is true when the fallback summarizer wrote the summary because the primary one
	// failed or its circuit breaker was open.
	Fallback bool
	// MessagesSummarized is the number of view messages the summary covers.
	MessagesSummarized int
	// Rung names how far down its ladder the compaction went ([github.com/agentctx/agentctx.CompactRung]); Aggressive is
	// true when thrash made it start lower and aim at half its usual target; FallbackReason says
	// why the fallback summarizer wrote the summary. Written by this library only.
	Rung           string
	Aggressive     bool
	FallbackReason string
	Extra          map[string]json.RawMessage // durationMs, preCompactDiscoveredTools, …
	presence       jsonobj.Presence
}

func (c *CompactMetadata) fields() []jsonobj.Field {
	return []jsonobj.Field{
		{Key: "trigger", Ptr: &c.Trigger},
		{Key: "preTokens", Ptr: &c.PreTokens},
		{Key: "postTokens", Ptr: &c.PostTokens},
		{Key: "preservedSegment", Ptr: &c.PreservedSegment},
		{Key: "summarizer", Ptr: &c.Summarizer},
		{Key: "fallback", Ptr: &c.Fallback},
		{Key: "messagesSummarized", Ptr: &c.MessagesSummarized},
		{Key: "rung", Ptr: &c.Rung},
		{Key: "aggressive", Ptr: &c.Aggressive},
		{Key: "fallbackReason", Ptr: &c.FallbackReason},
	}
}

// PreservedSegment names the verbatim tail a compaction kept, as Claude Code writes it: the
// records from HeadUUID to TailUUID along parentUuid were written before the boundary, and on
// reading the head is relinked to AnchorUUID (the summary message, or the boundary itself),
// while the anchor's other children are relinked to the tail, so the chain reads boundary →
// summary → head … tail → what came after.
type PreservedSegment struct {
	HeadUUID   string
	AnchorUUID string
	TailUUID   string
	Extra      map[string]json.RawMessage // anchorKind, anchorIndex, …
	presence   jsonobj.Presence
}

func (s *PreservedSegment) fields() []jsonobj.Field {
	return []jsonobj.Field{{Key: "headUuid", Ptr: &s.HeadUUID}, {Key: "anchorUuid", Ptr: &s.AnchorUUID}, {Key: "tailUuid", Ptr: &s.TailUUID}}
}

// MarshalJSON encodes the segment with its unknown fields.
func (s PreservedSegment) MarshalJSON() ([]byte, error) {
	return jsonobj.Encode(s.fields(), s.presence, s.Extra)
}

// UnmarshalJSON decodes the segment, keeping unknown fields in Extra.
func (s *PreservedSegment) UnmarshalJSON(data []byte) (err error) {
	s.Extra, err = jsonobj.Decode(data, s.fields(), &s.presence)
	return err
}

// MarshalJSON encodes the metadata with its unknown fields.
func (c CompactMetadata) MarshalJSON() ([]byte, error) {
	return jsonobj.Encode(c.fields(), c.presence, c.Extra)
}

// UnmarshalJSON decodes the metadata, keeping unknown fields in Extra.
func (c *CompactMetadata) UnmarshalJSON(data []byte) (err error) {
	c.Extra, err = jsonobj.Decode(data, c.fields(), &c.presence)
	return err
}

// SyntheticModel is the model name Claude Code writes on assistant records it synthesizes
// itself, such as API error notices. Such records never reached the provider.
const SyntheticModel = "<synthetic>"

// decisionNamespace derives the uuids of decision records from their content, so that the
// same decision made twice has the same uuid.
var decisionNamespace = uuid.MustParse("6f1d2c0e-8a4b-4f5e-9c3d-2b7a1e0f9d84")

// ContentUUID derives a stable uuid from a kind ("agentctx_snip", "collapse", "codex", …) and
// a key that identifies the thing within its kind: the same content always gets the same uuid.
// The library's decision records and the records it converts from other formats take their
// uuids from it, so that the same decision made twice, or the same file read twice, gives the
// same records.
func ContentUUID(kind, key string) string {
	return uuid.NewSHA1(decisionNamespace, []byte(kind+"\x00"+key)).String()
}

// LastCwd returns the working directory of the last record that names one.
func LastCwd(records []Record) string {
	for i := len(records) - 1; i >= 0; i-- {
		if c := records[i].Cwd; c != "" {
			return c
		}
	}
	return ""
}

// LastSessionID returns the session id of the last record that has one.
func LastSessionID(records []Record) string {
	for i := len(records) - 1; i >= 0; i-- {
		if s := records[i].SessionID; s != "" {
			return s
		}
	}
	return ""
}

// Timestamp formats t as a record's timestamp: UTC, milliseconds, as Claude Code writes.
func Timestamp(now time.Time) string {
	return now.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}
