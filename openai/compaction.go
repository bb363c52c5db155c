package openai

import (
	"encoding/json"
	"fmt"

	"github.com/agentctx/agentctx/transcript"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// compactionItem returns the input item of a provider compaction that took effect (see
// [transcript.CompactionOf]): the item as the transcript holds it, byte for byte, which is
// how OpenAI wants its compaction back. The Pipeline sends it first, with nothing before it.
// A compaction block of another provider (Anthropic's, with a readable "content") has no
// encrypted content OpenAI could read: it goes as a compaction item all the same only when
// it has one, and is otherwise left to the callers' drop rules.
func compactionItem(b transcript.Block) (responses.ResponseInputItemUnionParam, bool) {
	u, ok := b.(*transcript.UnknownBlock)
	if !ok || transcript.CompactionOf(b) != transcript.CompactionPoint {
		return responses.ResponseInputItemUnionParam{}, false
	}
	var f struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(u.JSON, &f) != nil || f.Content != nil {
		return responses.ResponseInputItemUnionParam{}, false // Anthropic's: not OpenAI's to read
	}
	return param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(u.JSON)), true
}

// contextManagement converts the request's context_management (the Anthropic shape
// [github.com/agentctx/agentctx.ProviderContextConfig] gives) into the Responses API's: the
// compaction edit becomes a compaction entry with the same threshold; context editing has no
// Responses counterpart and is dropped, and reported.
func contextManagement(raw json.RawMessage, drops *[]Drop) []responses.ResponseNewParamsContextManagement {
	if len(raw) == 0 {
		return nil
	}
	var cm struct {
		Edits []struct {
			Type    string `json:"type"`
			Trigger struct {
				Value int64 `json:"value"`
			} `json:"trigger"`
		} `json:"edits"`
	}
	if err := json.Unmarshal(raw, &cm); err != nil {
		*drops = append(*drops, Drop{Path: "context_management", Kind: "context_management", Reason: "not a context_management object: " + err.Error()})
		return nil
	}
	var out []responses.ResponseNewParamsContextManagement
	for i, e := range cm.Edits {
		if e.Type != "compact_20260112" {
			*drops = append(*drops, Drop{Path: fmt.Sprintf("context_management.edits.%d", i), Kind: transcript.BlockKind(e.Type), Reason: dropContextEdit})
			continue
		}
		entry := responses.ResponseNewParamsContextManagement{Type: "compaction"}
		if e.Trigger.Value > 0 {
			entry.CompactThreshold = param.NewOpt(e.Trigger.Value)
		}
		out = append(out, entry)
	}
	return out
}
