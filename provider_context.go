package agentctx

import (
	"encoding/json"
	"errors"
	"fmt"
)

// CompactionStrategy says who compacts a conversation that nears the window.
type CompactionStrategy string

// The compaction strategies of [ProviderContextConfig.Strategy].
const (
	// CompactClient: the library compacts (auto-compact at the threshold, with
	// [CompactConfig.Summarizer]). The zero value ("") means the same.
	CompactClient CompactionStrategy = "client"
	// CompactServer: the provider compacts. The request asks for Anthropic's server-side
	// compaction (compact_20260112) with its trigger at the library's own auto-compact
	// threshold, so that the two never fight; the library's auto-compact waits for the
	// blocking limit, where the provider has not compacted (it failed, or the figure is
	// short of the provider's count) and the request would otherwise be refused.
	CompactServer CompactionStrategy = "server"
	// CompactAuto: [CompactServer] where the model table says the model supports server-side
	// compaction ([Model.ServerCompaction]) and the threshold is at least the provider's
	// minimum trigger; [CompactClient] otherwise.
	CompactAuto CompactionStrategy = "auto"
)

// The anthropic-beta header values of the provider's context management.
const (
	// BetaCompaction is the beta of server-side compaction (compact_20260112).
	BetaCompaction = "compact-2026-01-12"
	// BetaContextManagement is the beta of context editing (clear_tool_uses_20250919,
	// clear_thinking_20251015).
	BetaContextManagement = "context-management-2025-06-27"
)

// MinServerCompactTrigger is the smallest trigger, in input tokens, the provider accepts for
// its compaction.
const MinServerCompactTrigger = 50_000

// ProviderContextConfig asks the provider to manage part of the context on its side
// (Anthropic's context_management). The zero value asks for nothing: requests are as
// before, and the library compacts.
type ProviderContextConfig struct {
	// Strategy is who compacts: [CompactClient] (zero value), [CompactServer] or
	// [CompactAuto]. The Pipeline resolves it for its model ([Pipeline.ServerCompaction]).
	Strategy CompactionStrategy
	// Instructions replace the provider's summarization prompt when it compacts; empty: the
	// provider's own.
	Instructions string
	// PauseAfterCompaction asks the provider to end the answer after its summary
	// (stop_reason "compaction"), so that the caller can add what must survive before the
	// conversation goes on.
	PauseAfterCompaction bool
	// ClearToolUses, when set, asks the provider to clear old tool results past a trigger
	// (clear_tool_uses_20250919): the provider-side counterpart of microcompact.
	ClearToolUses *ClearToolUses
	// ClearThinking, when set, asks the provider to clear the thinking of older assistant
	// turns (clear_thinking_20251015).
	ClearThinking *ClearThinking
}

// ClearToolUses configures the provider's clearing of tool results. Zero fields take the
// provider's defaults.
type ClearToolUses struct {
	// TriggerTokens is the prompt size, in input tokens, at which clearing starts.
	TriggerTokens int
	// Keep is how many of the latest tool uses keep their results.
	Keep int
	// ClearAtLeast is the fewest tokens a clearing must free, or nothing is cleared (so that
	// breaking the prompt cache is worth it).
	ClearAtLeast int
	// ExcludeTools names tools whose results are never cleared.
	ExcludeTools []string
	// ClearToolInputs also clears the inputs of the cleared tool calls.
	ClearToolInputs bool
}

// ClearThinking configures the provider's clearing of thinking blocks.
type ClearThinking struct {
	// KeepTurns is how many of the latest assistant turns keep their thinking; 0: the
	// provider's default; negative: all of them.
	KeepTurns int
}

// providerContext is a resolved [ProviderContextConfig]: whether the provider compacts, and
// what every request carries for it.
type providerContext struct {
	server bool
	body   json.RawMessage // the request's context_management; nil: none
	betas  []string
}

// resolve validates c and resolves it for a model (m, known from the table) whose
// auto-compact threshold is threshold.
func (c ProviderContextConfig) resolve(m Model, known bool, threshold int) (providerContext, error) {
	var pc providerContext
	switch c.Strategy {
	case "", CompactClient:
	case CompactServer:
		if threshold < MinServerCompactTrigger {
			return pc, fmt.Errorf("agentctx: ProviderContext.Strategy %q: the auto-compact threshold %d is below the provider's minimum trigger %d", c.Strategy, threshold, MinServerCompactTrigger)
		}
		pc.server = true
	case CompactAuto:
		pc.server = known && m.ServerCompaction && threshold >= MinServerCompactTrigger
	default:
		return pc, fmt.Errorf("agentctx: ProviderContext.Strategy %q is not client, server or auto", c.Strategy)
	}
	if t := c.ClearToolUses; t != nil {
		for _, f := range []struct {
			name string
			v    int
		}{{"TriggerTokens", t.TriggerTokens}, {"Keep", t.Keep}, {"ClearAtLeast", t.ClearAtLeast}} {
			if f.v < 0 {
				return pc, fmt.Errorf("agentctx: ProviderContext.ClearToolUses.%s %d is negative", f.name, f.v)
			}
		}
	}
	if !pc.server && (c.Instructions != "" || c.PauseAfterCompaction) {
		// Settings of a compaction the provider does not run: kept out of the request.
		c.Instructions, c.PauseAfterCompaction = "", false
	}
	var edits []any
	if t := c.ClearThinking; t != nil {
		// The provider wants the thinking edit first.
		e := map[string]any{"type": "clear_thinking_20251015"}
		switch {
		case t.KeepTurns < 0:
			e["keep"] = "all"
		case t.KeepTurns > 0:
			e["keep"] = counted("thinking_turns", t.KeepTurns)
		}
		edits = append(edits, e)
	}
	if t := c.ClearToolUses; t != nil {
		e := map[string]any{"type": "clear_tool_uses_20250919"}
		if t.TriggerTokens > 0 {
			e["trigger"] = counted("input_tokens", t.TriggerTokens)
		}
		if t.Keep > 0 {
			e["keep"] = counted("tool_uses", t.Keep)
		}
		if t.ClearAtLeast > 0 {
			e["clear_at_least"] = counted("input_tokens", t.ClearAtLeast)
		}
		if len(t.ExcludeTools) > 0 {
			e["exclude_tools"] = t.ExcludeTools
		}
		if t.ClearToolInputs {
			e["clear_tool_inputs"] = true
		}
		edits = append(edits, e)
	}
	if len(edits) > 0 {
		pc.betas = append(pc.betas, BetaContextManagement)
	}
	if pc.server {
		e := map[string]any{"type": "compact_20260112", "trigger": counted("input_tokens", threshold)}
		if c.PauseAfterCompaction {
			e["pause_after_compaction"] = true
		}
		if c.Instructions != "" {
			e["instructions"] = c.Instructions
		}
		edits = append(edits, e)
		pc.betas = append(pc.betas, BetaCompaction)
	}
	if len(edits) == 0 {
		return pc, nil
	}
	body, err := json.Marshal(map[string]any{"edits": edits})
	if err != nil {
		return pc, errors.Join(errors.New("agentctx: ProviderContext"), err)
	}
	pc.body = body
	return pc, nil
}

// counted is a {"type": unit, "value": n} figure of the provider's context management.
func counted(unit string, n int) map[string]any { return map[string]any{"type": unit, "value": n} }

// ServerCompaction reports whether the provider compacts this pipeline's conversations
// ([ProviderContextConfig.Strategy] resolved for its model): its requests ask for it, and
// its own auto-compact waits for the blocking limit.
func (p *Pipeline) ServerCompaction() bool { return p.provider.server }
