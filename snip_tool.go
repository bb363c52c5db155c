package agentctx

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/google/uuid"
)

// SnipToolName is the name of the tool [SnipTool] defines.
const SnipToolName = "Snip"

// snipToolDefinition is the snip tool's definition: its name, what it is for and its input.
const snipToolDefinition = `{"name":"Snip","description":"Remove messages you no longer need from your context, so that room is left for the work ahead. Every user message carries a tag such as [id:1a2b3c4d]; pass the tags of the messages to drop. A tool call and its result always leave together. The messages stay in the session's transcript, but you will not see them again: snip only what you are sure you will not need, such as finished explorations, long outputs you have already acted on, or attempts that were superseded. The user's latest message and messages the runtime pinned cannot be snipped.","input_schema":{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string"},"minItems":1,"description":"The tags of the messages to remove, as the conversation shows them, e.g. \"[id:1a2b3c4d]\"."},"reason":{"type":"string","description":"In a few words, why these messages are no longer needed."}},"required":["ids","reason"]}}`

// SnipTool returns the snip tool's definition, for [Input.Tools]: the model names the
// [id:…] tags of the messages it no longer needs, with a reason, and the runtime passes each
// call to [Pipeline.HandleSnip] (or [github.com/agentctx/agentctx/session.Session.Snip]).
// With the tool in Input.Tools, Prepare tags user messages as [SnipConfig.TagMessages] does
// and reminds the model to snip as the view grows (see [SnipConfig.ReminderTokens]). Each
// call returns a new Tool, whose Definition the caller may keep.
func SnipTool() provider.Tool {
	return provider.Tool{Name: SnipToolName, Definition: json.RawMessage(snipToolDefinition)}
}

// SnipInput is the snip tool's input.
type SnipInput struct {
	// IDs are the tags (or record uuids) of the messages to remove.
	IDs []string `json:"ids"`
	// Reason says why they are no longer needed; it is kept in the snip record.
	Reason string `json:"reason"`
}

// SnipRefusal is an id of a snip tool call that was not snipped.
type SnipRefusal struct {
	// ID is the id as the model wrote it.
	ID string
	// Why says why it was not snipped, in words for the model.
	Why string
}

// SnipOutcome is what [Pipeline.HandleSnip] made of one snip tool call.
type SnipOutcome struct {
	// Record is the snip record to append to the transcript before the tool result; nil when
	// nothing was snipped.
	Record *transcript.Record
	// Snipped are the ids snipped, as the model wrote them, in its order.
	Snipped []string
	// Removed are the uuids of every record that leaves the view, in view order: the ones
	// named and the ones tied to them by tool calls.
	Removed []string
	// Tokens is what the removed records count.
	Tokens int
	// Refused are the ids not snipped, each with why.
	Refused []SnipRefusal
	// Text is the tool result's text for the model: what was removed, and what was not and
	// why.
	Text string
	// IsError is true when nothing was snipped.
	IsError bool
}

// Result returns the tool_result block answering the snip call toolUseID with o.Text.
func (o SnipOutcome) Result(toolUseID string) *transcript.ToolResult {
	if o.IsError {
		return transcript.ErrorResult(toolUseID, o.Text)
	}
	return transcript.TextResult(toolUseID, o.Text)
}

// HandleSnip carries out a call of the snip tool ([SnipTool]) whose input is input, on the
// transcript records as they stand when the model made the call (its response appended).
// Each id is resolved with [transcript.ResolveTag] (a record uuid is taken too) and checked
// against the conversation the model sees: an id that names no message of it, a message
// snipped already, a pinned message ([Pipeline.Pin]), the user's latest prompt or a later
// input, a message carrying a tool_reference, or one tied by a tool call to a message that
// cannot go (see [SnipConfig]) is refused, with a reason naming the id. The rest go into one
// snip record ([NewSnip]), with the tokens they free; the caller appends
// SnipOutcome.Record, when there is one, and then answers the call with
// SnipOutcome.Result. A malformed input is an outcome with IsError, never a Go error: the
// model reads what was wrong. HandleSnip does not modify records and is safe for concurrent
// use.
func (p *Pipeline) HandleSnip(records []transcript.Record, input json.RawMessage, now time.Time) SnipOutcome {
	var in SnipInput
	if err := json.Unmarshal(input, &in); err != nil {
		return snipFailed(fmt.Sprintf(`Nothing was snipped: the input is not {"ids": ["[id:…]", …], "reason": "…"} (%v).`, err))
	}
	if len(in.IDs) == 0 {
		return snipFailed(`Nothing was snipped: "ids" is empty. Pass the [id:…] tags of the messages to remove.`)
	}
	chain, err := transcript.BuildChain(records, transcript.ChainOptions{})
	if err != nil {
		return snipFailed("Nothing was snipped: the conversation could not be read (" + err.Error() + ").")
	}
	msgs := chain.Messages()
	units := snipUnits(records, msgs)
	index := make(map[string]int, len(units))
	for i, u := range units {
		index[u.uuid] = i
	}
	earlier := snipRequests(records, nil)
	gone := planSnip(units, earlier).removed
	pinned, _ := transcript.Pinned(records)
	prompt, tail := latestInput(msgs)
	exact := recordsByUUID(records)

	var out SnipOutcome
	var ok []string              // uuids that pass, in the model's order
	named := map[string]string{} // uuid → the id that named it first
	for _, id := range in.IDs {
		u, why := resolveSnipID(records, exact, id)
		if why == "" {
			i, found := index[u]
			switch {
			case !found:
				why = "the message is no longer in your context (compacted, snipped, or on another branch)"
			case named[u] != "":
				why = "names the same message as " + named[u]
			case gone[i].by != "":
				why = "the message was snipped already"
			case slices.Contains(pinned, u):
				why = "the message is pinned by the runtime: it must stay"
			case i == prompt:
				why = "the message is the user's latest prompt, which you are answering"
			case i >= tail:
				why = "the message is the latest input, not answered yet"
			case hasToolReference(units[i].orig):
				why = "the message carries a tool_reference: the tools it loaded would vanish"
			}
		}
		if why == "" {
			// The message alone, with what tool calls tie to it.
			plan := planSnip(units, withRequest(earlier, u, len(records)))
			if d := skippedDetail(plan, u); d != "" {
				why = d
			} else if j := pinnedIn(plan, units, pinned, snipCandidate); j != "" {
				why = "the message is tied by a tool call to a pinned message, " + j
			}
		}
		if why != "" {
			out.Refused = append(out.Refused, SnipRefusal{ID: id, Why: why})
			continue
		}
		named[u] = id
		ok = append(ok, u)
		out.Snipped = append(out.Snipped, id)
	}
	if len(ok) == 0 {
		out.IsError, out.Text = true, "Nothing was snipped."+refusalText(out.Refused)
		return out
	}
	rec, err := NewSnip(records, ok, in.Reason, now)
	if err != nil {
		return snipFailed("Nothing was snipped: " + strings.TrimPrefix(err.Error(), "agentctx: ") + ".")
	}
	req := snipRequests(append(records[:len(records):len(records)], rec), nil)
	for i, why := range planSnip(units, req).removed {
		if why.by == rec.UUID {
			out.Removed = append(out.Removed, units[i].uuid)
			out.Tokens += p.counter.Blocks(units[i].blocks)
		}
	}
	slices.SortFunc(out.Removed, func(a, b string) int { return index[a] - index[b] })
	rec.Snip.TokensFreed = out.Tokens
	out.Record = &rec
	var b strings.Builder
	fmt.Fprintf(&b, "Snipped %s (%s)", plural(len(ok), "message"), strings.Join(out.Snipped, ", "))
	if more := len(out.Removed) - len(ok); more > 0 {
		them := "them"
		if len(ok) == 1 {
			them = "it"
		}
		fmt.Fprintf(&b, " and %s tied to %s by tool calls", plural(more, "more message"), them)
	}
	them := "They stay in the session's transcript, but you will not see them again."
	if len(out.Removed) == 1 {
		them = "It stays in the session's transcript, but you will not see it again."
	}
	fmt.Fprintf(&b, ": about %d tokens left your context. %s", out.Tokens, them)
	b.WriteString(refusalText(out.Refused))
	out.Text = b.String()
	return out
}

// snipFailed is the outcome of a call that snipped nothing for the reason text gives.
func snipFailed(text string) SnipOutcome { return SnipOutcome{Text: text, IsError: true} }

// refusalText lists refused ids for the model, one a line; "" when there are none.
func refusalText(refused []SnipRefusal) string {
	var b strings.Builder
	if len(refused) > 0 {
		b.WriteString("\nNot snipped:")
	}
	for _, r := range refused {
		fmt.Fprintf(&b, "\n- %s: %s", r.ID, r.Why)
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// resolveSnipID resolves one id of a snip to a user or assistant record's uuid: a record
// uuid, or a tag ([transcript.ResolveTag]). It returns why not when it cannot. exact indexes
// records by uuid.
func resolveSnipID(records []transcript.Record, exact map[string]*transcript.Record, id string) (string, string) {
	if r, ok := exact[id]; ok {
		if !r.IsConversation() {
			return "", "not a user or assistant record"
		}
		return id, ""
	}
	if _, err := uuid.Parse(id); err == nil && strings.Count(id, "-") == 4 {
		return "", "no such record"
	}
	u, err := transcript.ResolveTag(records, id)
	if err != nil {
		return "", strings.TrimPrefix(err.Error(), "agentctx: ")
	}
	return u, ""
}

// latestInput returns the indexes in msgs of the user's latest prompt (user text a person
// wrote; -1: none) and of the first message after the last assistant message (the input
// not answered yet).
func latestInput(msgs []*transcript.Record) (prompt, tail int) {
	prompt = -1
	for i := len(msgs) - 1; i >= 0 && prompt < 0; i-- {
		r := msgs[i]
		it := item{rec: r, role: r.Message.Role, meta: r.IsMeta, blocks: r.Message.Content}
		if r.Type == transcript.TypeUser && typedPrompt(&it) {
			prompt = i
		}
	}
	tail = len(msgs)
	for tail > 0 && msgs[tail-1].Type != transcript.TypeAssistant {
		tail--
	}
	return prompt, tail
}

// snipCandidate stands for the uuid of the snip record a call would write while its ids are
// checked one by one.
const snipCandidate = "snip-candidate"

// withRequest returns a copy of req with u requested by the candidate snip record, at
// position pos of the transcript.
func withRequest(req map[string]snipRequest, u string, pos int) map[string]snipRequest {
	out := make(map[string]snipRequest, len(req)+1)
	maps.Copy(out, req)
	if _, ok := out[u]; !ok {
		out[u] = snipRequest{by: snipCandidate, pos: pos}
	}
	return out
}

// skippedDetail returns why plan refused the snip of u, in words for the model; "" when it
// did not.
func skippedDetail(plan snipPlan, u string) string {
	for _, s := range plan.skipped {
		if s.uuid != u {
			continue
		}
		_, d, _ := strings.Cut(s.detail, " refused: ")
		d = strings.Replace(d, "the record is tool-paired with", "the message is tied by a tool call to", 1)
		return strings.Replace(d, "the record ", "the message ", 1)
	}
	return ""
}

// pinnedIn returns the uuid of a pinned record plan removes by the snip record by; "" when
// there is none.
func pinnedIn(plan snipPlan, units []snipUnit, pinned []string, by string) string {
	for i, why := range plan.removed {
		if why.by == by && slices.Contains(pinned, units[i].uuid) {
			return units[i].uuid
		}
	}
	return ""
}
