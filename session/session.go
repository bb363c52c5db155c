package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/memory"
	"github.com/agentctx/agentctx/transcript"

	"github.com/google/uuid"
)

// RecordWriter persists transcript records in order; [transcript.Appender] is one.
type RecordWriter interface {
	Append(records ...transcript.Record) error
}

// RecordWriterFunc adapts a function to [RecordWriter].
type RecordWriterFunc func(records ...transcript.Record) error

// Append calls f.
func (f RecordWriterFunc) Append(records ...transcript.Record) error { return f(records...) }

// Options configures a [Session]. The zero value is a new session kept in memory.
type Options struct {
	// ID is the session id every record carries. Empty: a new uuid for [New]; the
	// transcript's session id for [Resume].
	ID string
	// Cwd, when set, is written on every record as the session's working directory (it is
	// where compaction re-reads files from). Empty on resume: the transcript's last cwd.
	Cwd string
	// Writer persists each record before the session counts it (an [transcript.Appender] on the
	// session file). Nil: records are kept in memory only.
	Writer RecordWriter
	// Now is the clock for record timestamps. Nil: time.Now.
	Now func() time.Time
	// NewUUID returns a fresh record uuid. Nil: a random (version 4) uuid.
	NewUUID func() string
	// Chain selects, on resume, the leaf the session continues from; the default is the
	// transcript's last message.
	Chain transcript.ChainOptions
	// Memory, when set, keeps the session's memory: after each Prepare whose gate says so
	// ([memory.Extractor.Due]) an extraction runs in the background, and its record is
	// appended at the start of the next Prepare that finds it finished (or by
	// [Session.WaitExtraction]). Set the same Extractor as the Pipeline's
	// [agentctx.CompactConfig.Memory] so that compactions use the extractions.
	Memory *memory.Extractor
}

// Session writes the records of one conversation, turn after turn: it knows the session id,
// the uuid the next record names as its parent, the clock and the records so far, so that a
// runtime's loop is
//
//	s.User(prompt)
//	res, err := s.Prepare(ctx, p, agentctx.Input{System: system, Tools: tools})
//	// send res.Request, then:
//	s.Response(body)                       // the provider's JSON answer
//	s.ToolResults(transcript.TextResult(id, output))
//
// With [agentctx.SnipTool] in the Input's tools, a call of it goes to [Session.Snip], whose
// outcome's Result joins the other tool results.
//
// Each method persists through [Options.Writer] first and returns its error; a record
// the writer refused is not counted. A Session is not safe for concurrent use: one per
// conversation, like the transcript it writes.
type Session struct {
	id, cwd   string
	sidechain bool
	agentID   string
	w         RecordWriter
	now       func() time.Time
	newUUID   func() string
	records   []transcript.Record
	byUUID    map[string]int // uuid → index in records
	leaf      string
	mem       extractions
}

// New starts a conversation with no records.
func New(opts Options) *Session {
	s := newSession(opts)
	if s.id == "" {
		s.id = s.newUUID()
	}
	return s
}

// Resume continues the conversation in records (a transcript in file order, as
// [transcript.ReadFile] returns it) from its leaf. The session keeps its own copy of the slice.
func Resume(records []transcript.Record, opts Options) (*Session, error) {
	s := newSession(opts)
	s.records = slices.Clone(records)
	for i := range s.records {
		if u := s.records[i].UUID; u != "" {
			s.byUUID[u] = i
		}
	}
	chain, err := transcript.BuildChain(s.records, opts.Chain)
	if err != nil {
		return nil, err
	}
	if l := chain.Leaf; l != nil {
		s.leaf, s.sidechain, s.agentID = l.UUID, l.IsSidechain, l.AgentID
		if s.id == "" {
			s.id = l.SessionID
		}
	}
	if s.id == "" {
		s.id = transcript.LastSessionID(s.records)
	}
	if s.id == "" {
		s.id = s.newUUID()
	}
	if s.cwd == "" {
		s.cwd = transcript.LastCwd(s.records)
	}
	return s, nil
}

// ResumeFile reads the session file at path and resumes its conversation ([Resume]). A file of
// [transcript.DefaultTailMinBytes] or more is read from its active tail
// ([transcript.ReadOptions.TailMinBytes]): the session then holds the records from the latest
// compaction's kept tail on, with the few earlier ones the pipeline reads, and its turns
// build the requests a whole read gives, at the cost of the latest stretch rather than of
// the whole file. A leaf chosen in opts.Chain is looked for in the whole file.
func ResumeFile(path string, opts Options) (*Session, *transcript.File, error) {
	ro := transcript.ReadOptions{TailMinBytes: transcript.DefaultTailMinBytes}
	if opts.Chain != (transcript.ChainOptions{}) {
		ro.TailMinBytes = 0
	}
	tr, err := transcript.ReadFile(path, ro)
	if err != nil {
		return nil, nil, err
	}
	s, err := Resume(tr.Records, opts)
	if err != nil {
		return nil, nil, err
	}
	return s, tr, nil
}

func newSession(opts Options) *Session {
	s := &Session{id: opts.ID, cwd: opts.Cwd, w: opts.Writer, now: opts.Now, newUUID: opts.NewUUID, byUUID: map[string]int{},
		mem: extractions{ex: opts.Memory}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newUUID == nil {
		s.newUUID = uuid.NewString
	}
	return s
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Leaf returns the uuid the next record names as its parentUuid ("" before the first).
func (s *Session) Leaf() string { return s.leaf }

// Records returns the transcript so far, in file order. The caller must not modify it.
func (s *Session) Records() []transcript.Record { return s.records[:len(s.records):len(s.records)] }

// Record returns a new record of type typ carrying m, parented on the leaf, with the session's
// id, working directory, a fresh uuid and the current time. It is not written: set any other
// field and pass it to [Session.Append].
func (s *Session) Record(typ transcript.RecordType, m *transcript.Message) transcript.Record {
	return transcript.Record{
		Type: typ, UUID: s.newUUID(), ParentUUID: s.leaf, IsSidechain: s.sidechain, AgentID: s.agentID,
		SessionID: s.id, Timestamp: transcript.Timestamp(s.now()), Cwd: s.cwd, Message: m,
	}
}

// Append writes records through the Writer, then adds them to the session. A user or
// assistant record with a uuid becomes the leaf; other records (the library's decisions, a
// runtime's own system records) do not move it. A record whose uuid the session already holds
// is refused, and so is a record naming a parent the session does not hold: either would
// break the chain the next request is built from.
func (s *Session) Append(records ...transcript.Record) error {
	seen := map[string]bool{}
	for i := range records {
		r := &records[i]
		if r.UUID == "" {
			continue
		}
		if _, dup := s.byUUID[r.UUID]; dup || seen[r.UUID] {
			return fmt.Errorf("agentctx: session append: record %d: uuid %s is already in the transcript", i, r.UUID)
		}
		seen[r.UUID] = true
		if p := r.ParentUUID; p != "" && !seen[p] {
			if _, ok := s.byUUID[p]; !ok {
				return fmt.Errorf("agentctx: session append: record %d: parentUuid %s is not in the transcript", i, p)
			}
		}
	}
	if s.w != nil && len(records) > 0 {
		if err := s.w.Append(records...); err != nil {
			return err
		}
	}
	for _, r := range records {
		s.records = append(s.records, r)
		if r.UUID == "" {
			continue
		}
		s.byUUID[r.UUID] = len(s.records) - 1
		if r.Type == transcript.TypeUser || r.Type == transcript.TypeAssistant {
			s.leaf = r.UUID
		}
	}
	return nil
}

// User appends the user's prompt as a user record and returns it.
func (s *Session) User(text string) (transcript.Record, error) {
	if text == "" {
		return transcript.Record{}, errors.New("agentctx: session user: empty prompt")
	}
	return s.add(s.Record(transcript.TypeUser, &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: text}}}))
}

// UserBlocks appends a user message of the given content blocks (text, images, documents).
// Tool results go through [Session.ToolResults].
func (s *Session) UserBlocks(blocks ...transcript.Block) (transcript.Record, error) {
	if len(blocks) == 0 {
		return transcript.Record{}, errors.New("agentctx: session user: no content blocks")
	}
	for i, b := range blocks {
		if b == nil {
			return transcript.Record{}, fmt.Errorf("agentctx: session user: block %d is nil", i)
		}
		if b.Kind() == transcript.KindToolResult {
			return transcript.Record{}, fmt.Errorf("agentctx: session user: block %d is a tool_result; use ToolResults", i)
		}
	}
	return s.add(s.Record(transcript.TypeUser, &transcript.Message{Role: transcript.RoleUser, Content: slices.Clone(blocks)}))
}

// Assistant appends m, a response message (see [transcript.DecodeResponse]), as an assistant record.
func (s *Session) Assistant(m *transcript.Message) (transcript.Record, error) {
	if m == nil || m.Role != transcript.RoleAssistant {
		return transcript.Record{}, errors.New("agentctx: session assistant: the message's role is not assistant")
	}
	return s.add(s.Record(transcript.TypeAssistant, m))
}

// Usage attaches u, the provider's usage for the response recorded as uuid without one (a
// step hook that writes the answer before the step's usage arrives), as a record of its own
// ([agentctx.NewUsage]); the next Prepare anchors its pressure figure on it.
func (s *Session) Usage(uuid string, u transcript.Usage) (transcript.Record, error) {
	r, err := agentctx.NewUsage(s.records, uuid, u, s.now())
	if err != nil {
		return transcript.Record{}, err
	}
	if err := s.Append(r); err != nil {
		return transcript.Record{}, err
	}
	return r, nil
}

// Response decodes body, the provider's JSON answer, with [transcript.DecodeResponse] and appends it as
// an assistant record.
func (s *Session) Response(body []byte) (transcript.Record, error) {
	m, err := transcript.DecodeResponse(body)
	if err != nil {
		return transcript.Record{}, err
	}
	return s.Assistant(m)
}

// ToolResults appends one user record answering tool calls of the latest assistant turn. Each
// result must name a tool_use id of that turn that has no result yet; a result for an unknown
// or already answered call is refused, since the provider rejects such a request.
func (s *Session) ToolResults(results ...*transcript.ToolResult) (transcript.Record, error) {
	if len(results) == 0 {
		return transcript.Record{}, errors.New("agentctx: session tool results: no results")
	}
	uses, source := s.openToolUses()
	open := make(map[string]bool, len(uses))
	for _, tu := range uses {
		open[tu.ID] = true
	}
	blocks := make([]transcript.Block, len(results))
	for i, r := range results {
		switch {
		case r == nil:
			return transcript.Record{}, fmt.Errorf("agentctx: session tool results: result %d is nil", i)
		case !open[r.ToolUseID]:
			return transcript.Record{}, fmt.Errorf("agentctx: session tool results: result %d: tool_use_id %q answers no open tool call of the latest assistant turn", i, r.ToolUseID)
		}
		open[r.ToolUseID] = false
		blocks[i] = r
	}
	rec := s.Record(transcript.TypeUser, &transcript.Message{Role: transcript.RoleUser, Content: blocks})
	rec.SourceToolAssistantUUID = source
	return s.add(rec)
}

// Prepare runs p.Prepare on the session's records from its leaf (in.Records and in.Leaf are
// set by the session), appends the records the turn made — also when Prepare fails with
// records to append, such as a failed compaction the circuit breaker counts — and moves the
// leaf to [agentctx.Result.Leaf], so that the next record follows a compaction's summary.
//
// With [Options.Memory] it first appends a finished extraction's record, and afterwards
// starts the next extraction when it is due.
func (s *Session) Prepare(ctx context.Context, p *agentctx.Pipeline, in agentctx.Input) (agentctx.Result, error) {
	if err := s.takeExtraction(false); err != nil {
		return agentctx.Result{}, err
	}
	res, err := s.turn(in, func(in agentctx.Input) (agentctx.Result, error) { return p.Prepare(ctx, in) })
	if err == nil {
		s.startExtraction(ctx, p, in, res.Report.InputTokens)
	}
	return res, err
}

// turn runs one of the agentctx.Pipeline's calls on the session's records from its leaf, appends the
// records it made (also with an error) and moves the leaf to [agentctx.Result.Leaf].
func (s *Session) turn(in agentctx.Input, call func(agentctx.Input) (agentctx.Result, error)) (agentctx.Result, error) {
	in.Records, in.Leaf = s.Records(), s.leaf
	res, err := call(in)
	if aerr := s.Append(res.Append...); aerr != nil {
		return res, errors.Join(err, aerr)
	}
	if res.Leaf != "" {
		s.leaf = res.Leaf
	}
	return res, err
}

// Recover runs p.Recover on the session's records from its leaf with err, the provider's
// error for the request of the last Prepare (or Recover), appends the records the rung made —
// also with a terminal error — and moves the leaf to [agentctx.Result.Leaf], as Prepare does. Send
// agentctx.Result.Request when the error is nil.
func (s *Session) Recover(ctx context.Context, p *agentctx.Pipeline, in agentctx.Input, err error) (agentctx.Result, error) {
	return s.turn(in, func(in agentctx.Input) (agentctx.Result, error) { return p.Recover(ctx, in, err) })
}

// Compact runs p.Compact on the session's records from its leaf — a manual compaction, as
// "/compact" asks for, with optional instructions — appends the records it made (also with an
// error: a failed attempt is a record) and moves the leaf to [agentctx.Result.Leaf], as Prepare does.
// Send agentctx.Result.Request next, or keep it for the next Prepare: the next record follows the
// compaction's summary either way.
func (s *Session) Compact(ctx context.Context, p *agentctx.Pipeline, in agentctx.Input, opts agentctx.CompactOptions) (agentctx.Result, error) {
	return s.turn(in, func(in agentctx.Input) (agentctx.Result, error) { return p.Compact(ctx, in, opts) })
}

// Snip carries out tu, a call of the snip tool ([agentctx.SnipTool]) in the latest response,
// with [agentctx.Pipeline.HandleSnip] on the session's records: it appends the snip record,
// when the call snips anything, and returns the outcome, whose [agentctx.SnipOutcome.Result]
// the runtime passes to [Session.ToolResults] with the turn's other results. The error is the
// Writer's, or a tu that is no open call of the latest response; a call the handler refuses
// is no error, its result tells the model why.
func (s *Session) Snip(p *agentctx.Pipeline, tu *transcript.ToolUse) (agentctx.SnipOutcome, error) {
	uses, _ := s.openToolUses()
	if tu == nil || !slices.ContainsFunc(uses, func(u *transcript.ToolUse) bool { return u.ID == tu.ID }) {
		return agentctx.SnipOutcome{}, errors.New("agentctx: session snip: the tool_use is no open call of the latest assistant turn")
	}
	out := p.HandleSnip(s.Records(), tu.Input, s.now())
	if out.Record != nil {
		if err := s.Append(*out.Record); err != nil {
			return agentctx.SnipOutcome{}, err
		}
	}
	return out, nil
}

// Waiting names what a conversation waits for (see [Session.Pending]).
type Waiting string

// The values of [Pending.Waiting].
const (
	// WaitingUser: the model's turn is over; a person's prompt comes next.
	WaitingUser Waiting = "user"
	// WaitingModel: the conversation ends with input the model has not answered (a prompt,
	// tool results, a compaction's summary, a continuation): prepare and send a request.
	WaitingModel Waiting = "model"
	// WaitingTools: the model called tools that have no result yet; run them and append
	// their results with [Session.ToolResults].
	WaitingTools Waiting = "tools"
)

// Pending is what a conversation waits for, as [Session.Pending] reads it from the records.
type Pending struct {
	Waiting Waiting
	// ToolUses are the calls of the latest assistant turn without a result (WaitingTools), in
	// the order the model made them.
	ToolUses []*transcript.ToolUse
	// Truncated is true when the latest response stopped at max_tokens: pass
	// [provider.ErrOutputTruncated] to [Session.Recover] rather than wait for the user.
	Truncated bool
}

// Pending reads what the conversation waits for from its leaf: after a resume, whether the
// runtime asks the user, sends a request, or runs tools first.
func (s *Session) Pending() Pending {
	i, ok := s.byUUID[s.leaf]
	if !ok || s.records[i].Message == nil {
		return Pending{Waiting: WaitingUser}
	}
	r := &s.records[i]
	if uses, _ := s.openToolUses(); len(uses) > 0 {
		return Pending{Waiting: WaitingTools, ToolUses: uses}
	}
	if r.Type == transcript.TypeAssistant && r.Message.Model != transcript.SyntheticModel && !r.IsAPIErrorMessage {
		return Pending{Waiting: WaitingUser, Truncated: r.Message.Truncated()}
	}
	return Pending{Waiting: WaitingModel}
}

func (s *Session) add(r transcript.Record) (transcript.Record, error) {
	if err := s.Append(r); err != nil {
		return transcript.Record{}, err
	}
	return r, nil
}

// openToolUses returns the tool_use blocks of the latest assistant turn that no result
// answers yet, in the order the model made them, and the uuid of the turn's last assistant
// record. It walks up from the leaf over the results already given, then over the turn's
// assistant records (one per content block when split), and stops at the first other record.
func (s *Session) openToolUses() ([]*transcript.ToolUse, string) {
	var open []*transcript.ToolUse
	answered, source := map[string]bool{}, ""
	for u := s.leaf; u != ""; {
		i, ok := s.byUUID[u]
		if !ok || s.records[i].Message == nil {
			break
		}
		r := &s.records[i]
		switch {
		case r.Type == transcript.TypeAssistant:
			if source == "" {
				source = r.UUID
			}
			var these []*transcript.ToolUse
			for _, b := range r.Message.Content {
				if tu, ok := b.(*transcript.ToolUse); ok && !answered[tu.ID] {
					these = append(these, tu)
				}
			}
			open = append(these, open...) // the walk goes up: earlier records first
		case r.Type == transcript.TypeUser && source == "" && hasToolResult(r.Message):
			for _, b := range r.Message.Content {
				if tr, ok := b.(*transcript.ToolResult); ok {
					answered[tr.ToolUseID] = true
				}
			}
		default:
			return open, source
		}
		u = r.ParentUUID
	}
	return open, source
}

func hasToolResult(m *transcript.Message) bool {
	for _, b := range m.Content {
		if b.Kind() == transcript.KindToolResult {
			return true
		}
	}
	return false
}
