package host

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// Conversation is one conversation of a host that keeps its messages in its own store. Each
// turn the host passes all its messages, each under its own stable id; the conversation
// derives their records (uuids from the ids and the content, so the same messages always give
// the same records), loads the library's decisions from Store, replays them onto the messages
// where they were made, runs the Pipeline and stores the turn's new decisions. The host's
// store stays the only log of its messages, and Store holds only what the library decided.
//
// The same messages and the same stored decisions give the same request bytes, and they are
// the bytes a [github.com/agentctx/agentctx/session.Session] that was handed the same messages
// builds. A Conversation is a value with no state of its own but its optional [Memo]: a
// process that restarts, or another worker, continues with a new one on the same Store.
type Conversation struct {
	// ID is the conversation's id: the session id of its records and the key of its
	// decisions in Store.
	ID string
	// Store keeps the conversation's decisions.
	Store DecisionStore
	// Cwd, when set, is written on every record as the conversation's working directory (it
	// is where a compaction re-reads files from).
	Cwd string
	// Memo, when set, carries the replay from one turn to the next, so that a turn costs
	// what was added since the last one rather than the whole history (see [Memo]). Without
	// one, every turn derives every message's record and replays every decision.
	Memo *Memo
}

// Result is a turn's [agentctx.Result] and what the replay of the stored decisions found.
type Result struct {
	agentctx.Result
	// Dropped lists the stored turns whose records were not applied, because the host no
	// longer has a message they were made on (it deleted or edited it): a replaced tool result
	// comes back whole and is decided again, a compaction is no longer installed and the
	// conversation is built from the host's messages. Nothing is applied to other messages.
	Dropped []Dropped
	// Lost is true when Store holds nothing for a conversation that already has answers: its
	// decisions were lost (or the conversation began without the library). The request is
	// built from the host's messages alone, and the turn's decisions start the store anew.
	Lost bool
}

// Replay is the conversation a turn is built from.
type Replay struct {
	// Records are the host's messages as records, and each stored turn's decisions after the
	// message they followed, in the order a session's transcript would hold them.
	Records []transcript.Record
	// Leaf is the uuid the next record follows.
	Leaf string
	// Dropped and Lost are as in [Result].
	Dropped []Dropped
	Lost    bool
}

// Replay returns the conversation of msgs with the stored decisions replayed onto it, as the
// next turn sees it: for a host's own inspection, or to write it out as a transcript.
func (c Conversation) Replay(ctx context.Context, msgs []Message) (Replay, error) {
	rp, err := c.replay(ctx, msgs)
	if err != nil {
		return Replay{}, err
	}
	defer c.Memo.put(rp)
	return Replay{Records: slices.Clone(rp.records), Leaf: rp.leaf, Dropped: rp.dropped(), Lost: rp.lost(msgs)}, nil
}

// Prepare runs p.Prepare on the conversation of msgs (in.Records and in.Leaf are set here)
// and stores the records the turn made — also when Prepare fails with records to append, such
// as a failed compaction the circuit breaker counts.
func (c Conversation) Prepare(ctx context.Context, p *agentctx.Pipeline, msgs []Message, in agentctx.Input) (Result, error) {
	return c.turn(ctx, msgs, in, func(in agentctx.Input) (agentctx.Result, error) { return p.Prepare(ctx, in) })
}

// Recover runs p.Recover with err, the provider's error for the request of the last Prepare,
// on the conversation of msgs, and stores the records the rung made. Send the Result's
// request when the error is nil.
func (c Conversation) Recover(ctx context.Context, p *agentctx.Pipeline, msgs []Message, in agentctx.Input, err error) (Result, error) {
	return c.turn(ctx, msgs, in, func(in agentctx.Input) (agentctx.Result, error) { return p.Recover(ctx, in, err) })
}

// Compact runs p.Compact, a manual compaction, on the conversation of msgs and stores the
// records it made.
func (c Conversation) Compact(ctx context.Context, p *agentctx.Pipeline, msgs []Message, in agentctx.Input, opts agentctx.CompactOptions) (Result, error) {
	return c.turn(ctx, msgs, in, func(in agentctx.Input) (agentctx.Result, error) { return p.Compact(ctx, in, opts) })
}

// turn replays the conversation, runs call on it and stores what it appended.
func (c Conversation) turn(ctx context.Context, msgs []Message, in agentctx.Input, call func(agentctx.Input) (agentctx.Result, error)) (Result, error) {
	rp, err := c.replay(ctx, msgs)
	if err != nil {
		return Result{}, err
	}
	defer c.Memo.put(rp)
	in.Records, in.Leaf = slices.Clip(rp.records), rp.leaf
	res, err := call(in)
	out := Result{Result: res, Dropped: rp.dropped(), Lost: rp.lost(msgs)}
	if len(res.Append) == 0 && rp.stored > 0 {
		return out, err
	}
	// A store that held nothing gets a turn record even for a turn that decided nothing, so
	// that a store found empty later means a lost one.
	mark, merr := rp.mark(c.ID, res.Append, res.Leaf)
	if merr == nil {
		merr = c.Store.Append(ctx, c.ID, append([]transcript.Record{mark}, res.Append...)...)
	}
	if merr != nil {
		return out, errors.Join(err, fmt.Errorf("host: store the decisions of session %q: %w", c.ID, merr))
	}
	return out, err
}

// replay loads the conversation's decisions and places them among msgs, extending the
// Memo's replay when it can.
func (c Conversation) replay(ctx context.Context, msgs []Message) (*replay, error) {
	if c.ID == "" {
		return nil, errors.New("host: Conversation.ID is empty")
	}
	if c.Store == nil {
		return nil, errors.New("host: Conversation.Store is nil")
	}
	stored, err := c.Store.Load(ctx, c.ID)
	if err != nil {
		return nil, fmt.Errorf("host: load the decisions of session %q: %w", c.ID, err)
	}
	return build(c.ID, c.Cwd, msgs, stored, c.Memo.take())
}

// lost reports whether the store held nothing for a conversation with answers.
func (rp *replay) lost(msgs []Message) bool {
	if rp.stored > 0 {
		return false
	}
	for i := range msgs {
		if msgs[i].Message.Role == transcript.RoleAssistant {
			return true
		}
	}
	return false
}
