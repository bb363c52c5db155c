package simulate

import (
	"context"
	"encoding/json"

	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// serverSummaryTokens caps the summary the simulated provider writes when it compacts.
const serverSummaryTokens = 5_000

// ServerCompaction is a compaction the simulated provider made on its side (the server
// strategy, [github.com/agentctx/agentctx.CompactServer]): the request passed the
// compaction edit's trigger, and the provider summarized the prompt in an extra sampling
// step before answering from the summary.
type ServerCompaction struct {
	// PreTokens is the request's input, which passed the trigger; SummaryTokens the
	// summary's counted size.
	PreTokens     int `json:"pre_tokens"`
	SummaryTokens int `json:"summary_tokens"`
	// Compaction is what the summarizing step costs, as the provider bills it (its
	// "compaction" iteration): the whole request as input, split by the prompt cache, and the
	// summary as output. The turn's Usage adds it to the answering step's, which reads the
	// tools, the system prompt and the summary.
	Compaction Usage `json:"compaction"`
}

// serverSummary returns the compaction block the simulated provider answers with when req
// passes its trigger, and the summary's counted size: the extractive summary of the
// request's messages, at most serverSummaryTokens, standing for the summary the provider's
// model writes.
func serverSummary(ctx context.Context, req *provider.Request, count func(string) int) (transcript.Block, int, error) {
	view := make([]summarize.Message, len(req.Messages))
	for i, m := range req.Messages {
		view[i] = summarize.Message{Role: m.Role, Content: m.Content}
	}
	sum, err := summarize.Extractive{}.Summarize(ctx, summarize.Request{View: view, MaxOutputTokens: serverSummaryTokens, Trigger: "auto", Attempt: 1})
	if err != nil {
		return nil, 0, err
	}
	raw, err := json.Marshal(map[string]string{"type": "compaction", "content": sum.Text})
	if err != nil {
		return nil, 0, err
	}
	b, err := transcript.UnmarshalBlock(raw)
	return b, count(sum.Text), err
}

// answering returns the request the provider answers from after compacting req: its tools
// and system prompt, then the summary.
func answering(req *provider.Request, block transcript.Block) provider.Request {
	out := *req
	out.Messages = []provider.Message{{Role: transcript.RoleAssistant, Content: []transcript.Block{block}}}
	return out
}
