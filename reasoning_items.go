package agentctx

import (
	"slices"

	"github.com/agentctx/agentctx/internal/wire"
	"github.com/agentctx/agentctx/provider"
)

// dropReasoningItems removes the OpenAI reasoning items ([NormalizeConfig.KeepReasoningItems])
// from the assistant messages of a compaction's summary request: they are encrypted for the
// model that wrote them, so no summarizer reads them, and a summarizer on another API could
// not send them. normalize guarantees no assistant message ends with thinking, so none
// becomes empty.
func dropReasoningItems(msgs []provider.Message) {
	for i := range msgs {
		if slices.ContainsFunc(msgs[i].Content, wire.IsReasoningItem) {
			msgs[i].Content = slices.DeleteFunc(slices.Clone(msgs[i].Content), wire.IsReasoningItem)
		}
	}
}
