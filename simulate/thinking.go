package simulate

import (
	"slices"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/transcript"
)

// SessionThinkingBudget is the thinking budget [SessionThinking] gives a session whose
// responses thought. A session file does not record the budget it ran with. The figures do not
// depend on it (a turn's output is the recorded one) as long as it stays under the max_tokens
// of every request: at the default levels a request under the auto-compact threshold leaves at
// least 31,000 tokens of room (33,000 less a 1 % margin), so 10,000 is never lowered, which
// would change the thinking parameter and with it the cached messages.
const SessionThinkingBudget = 10000

// SessionThinking infers the thinking setting a session ran with from its records: enabled,
// with [SessionThinkingBudget], when an assistant response of the main conversation holds a
// thinking or redacted-thinking block; nil (thinking off) when none does.
func SessionThinking(records []transcript.Record) *provider.Thinking {
	for i := range records {
		r := &records[i]
		if r.Type != transcript.TypeAssistant || r.Message == nil || r.IsSidechain {
			continue
		}
		if slices.ContainsFunc(r.Message.Content, func(b transcript.Block) bool {
			switch b.(type) {
			case *transcript.Thinking, *transcript.RedactedThinking:
				return true
			}
			return false
		}) {
			return &provider.Thinking{Type: "enabled", BudgetTokens: SessionThinkingBudget}
		}
	}
	return nil
}
