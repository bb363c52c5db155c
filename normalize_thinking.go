package agentctx

import (
	"slices"

	"github.com/agentctx/agentctx/internal/wire"

	"github.com/agentctx/agentctx/transcript"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// cleanThinking returns the thinking block as it must be sent: the same bytes without
// transcript-only fields.
func cleanThinking(b *transcript.Thinking) transcript.Block {
	if len(b.Extra) == 0 && b.Thinking != "" {
		return b
	}
	// Decoding sets the presence of "thinking", which an empty thinking text needs to be
	// encoded at all.
	enc, err := jsonobj.Marshal(struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}{"thinking", b.Thinking, b.Signature})
	if err != nil {
		panic("agentctx: unreachable: " + err.Error())
	}
	out, err := transcript.UnmarshalBlock(enc)
	if err != nil {
		panic("agentctx: unreachable: " + err.Error())
	}
	return out
}

// thinkingOff is why a thinking or redacted_thinking block is not sent when thinking is off.
// The provider refuses thinking in the final assistant turn then (4.5), and the final turn is
// a position: a rule for that turn alone would send a message's thinking once it is no longer
// final, changing a prefix the provider has cached. No thinking is sent, in any message.
const thinkingOff = "thinking is disabled: no thinking block is sent, in any message"

// finalTurnThinking applies the thinking rules of the final assistant turn (4.2): when the turn
// in flight does not start with thinking, the request goes without thinking, and no message
// keeps any. With thinking disabled, clean has dropped every thinking block already (see
// thinkingOff).
func (n *normalizer) finalTurnThinking(msgs []nmsg) []nmsg {
	if !n.s.thinking.Enabled() {
		return msgs
	}
	var buf []transcript.Block
	start := wire.FinalTurnStart(len(msgs), func(i int) (transcript.Role, []transcript.Block) {
		buf = buf[:0]
		for _, nb := range msgs[i].blocks {
			buf = append(buf, nb.b)
		}
		return msgs[i].role, buf
	})
	if start >= len(msgs) {
		return msgs
	}
	lead := 0 // the provider's compaction the view starts at comes before the thinking (1.6)
	if len(msgs[start].blocks) > 1 && n.t.isPoint(msgs[start].blocks[0].b) {
		lead = 1
	}
	if len(msgs[start].blocks) > lead && wire.IsThinking(msgs[start].blocks[lead].b) {
		return msgs
	}
	n.t.report.ThinkingUnavailable = true
	n.act(ActionRepaired, msgs[start].blocks[0].uuid, "",
		"thinking is enabled but the assistant turn in flight does not start with replayable thinking: this request is sent with thinking disabled", 0)
	why := "thinking unavailable for the assistant turn in flight: no thinking block is sent, in any message"
	// Every message loses its thinking, not only the turn in flight's: the next request of
	// that turn goes without thinking too, and sends this one's messages again (see
	// thinkingOff).
	for i := range msgs {
		if msgs[i].role != transcript.RoleAssistant || !slices.ContainsFunc(msgs[i].blocks, func(nb nblock) bool { return wire.IsThinking(nb.b) }) {
			continue
		}
		// A new slice: the message's blocks may be a settled prefix's (see passes).
		kept := make([]nblock, 0, len(msgs[i].blocks))
		for _, nb := range msgs[i].blocks {
			if wire.IsThinking(nb.b) {
				n.drop(nb, why)
				continue
			}
			kept = append(kept, nb)
		}
		msgs[i].blocks = kept
	}
	return msgs
}
