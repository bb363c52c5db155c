package agentctx

import (
	"fmt"
	"maps"
	"strings"
)

// Model describes the limits of one model, in tokens. The zero Model is an unknown model.
type Model struct {
	// Name is the model id or id prefix, e.g. "claude-sonnet-4-5".
	Name string
	// ContextWindow is the maximum prompt plus output size.
	ContextWindow int
	// MaxOutput is the maximum max_tokens the model accepts.
	MaxOutput int
	// MinCacheTokens is the shortest prefix the provider's prompt cache stores for the
	// model: a cache breakpoint on a shorter prefix writes nothing, and the prompt is billed
	// as uncached input (package simulate models it). Zero: 1,024, the smallest any current Claude model has.
	MinCacheTokens int
	// ServerCompaction reports that the provider compacts the model's conversations on its
	// side (Anthropic's compact_20260112), which [CompactAuto] then asks for.
	ServerCompaction bool
}

// defaultMinCacheTokens is the minimum cacheable prefix of a model whose table entry names
// none: 1,024 tokens, the smallest any current Claude model has.
const defaultMinCacheTokens = 1024

// AutoCompactThreshold returns [AutoCompactThreshold](m.ContextWindow, m.MaxOutput).
func (m Model) AutoCompactThreshold() int {
	return AutoCompactThreshold(m.ContextWindow, m.MaxOutput)
}

// AutoCompactThreshold returns the prompt size, in tokens, at which auto-compact fires:
// [DefaultLevels](window, maxOutput).Threshold. For large windows it is Claude Code's
// window − min(maxOutput, 20,000) − 13,000: the first term reserves room for the summary the
// compaction must write (capped at 20k, the most a summary needs), the second is a buffer for
// the estimate's error and the next user message; 167,000 for a 200k window and a 64k-output
// model. Small windows scale both reserves (see DefaultLevels), so it is never negative.
func AutoCompactThreshold(window, maxOutput int) int {
	return DefaultLevels(window, maxOutput).Threshold
}

// Models maps a model id prefix to the model's limits. Keys are ids as the Anthropic API
// spells them, without the date suffix; [Models.Lookup] resolves dated and provider-prefixed
// ids by longest prefix. A Models value is an ordinary map: callers may add or override
// entries (e.g. a 1M-token window) on their own copy from [DefaultModels]. A nil Models finds
// nothing. Lookup only reads the map, so concurrent lookups are safe while nobody writes it.
type Models map[string]Model

// DefaultModels returns a new table of current Claude models. Context windows are the
// standard 200,000 tokens (the 1M-token window of some models is opt-in; see [Models.Lookup]
// for the "[1m]" suffix). The figures are as of early 2026.
func DefaultModels() Models {
	const window = 200_000
	ms := Models{}
	// Minimum cacheable prefixes as Anthropic's tables give them. The tables disagree on
	// Sonnet 4.6 (1,024 or 2,048 tokens); the larger is taken, so a simulation never counts a
	// cache read the provider may not give. Server-side compaction: the models Anthropic's
	// compaction documentation lists.
	for _, m := range []Model{
		{"claude-opus-4-7", window, 64_000, 4096, true},
		{"claude-opus-4-6", window, 128_000, 4096, true},
		{"claude-opus-4-5", window, 64_000, 4096, false},
		{"claude-opus-4-1", window, 32_000, 1024, false},
		{"claude-opus-4", window, 32_000, 1024, false},
		{"claude-sonnet-4-6", window, 64_000, 2048, true},
		{"claude-sonnet-4-5", window, 64_000, 1024, false},
		{"claude-sonnet-4", window, 64_000, 1024, false},
		{"claude-haiku-4-5", window, 64_000, 4096, false},
		{"claude-3-7-sonnet", window, 64_000, 1024, false},
		{"claude-3-5-haiku", window, 8_192, 2048, false},
	} {
		ms[m.Name] = m
	}
	return ms
}

// Clone returns a copy of ms that can be changed independently.
func (ms Models) Clone() Models { return maps.Clone(ms) }

// Lookup returns the limits of the named model. The name matches a key exactly or extends it
// with "-" or "@" (a date or version: "claude-sonnet-4-5-20250929", "claude-opus-4-1@20250805");
// the longest matching key wins, so "claude-opus-4-1-…" is Opus 4.1, not Opus 4. A provider
// prefix before "claude-" ("us.anthropic.claude-…", "anthropic/claude-…") is ignored, and a
// trailing "[1m]" (Claude Code's marker for the 1M-token context beta) sets ContextWindow to
// 1,000,000. The Model is returned as stored in the table.
func (ms Models) Lookup(name string) (Model, bool) {
	name, oneM := strings.CutSuffix(name, "[1m]")
	if i := strings.Index(name, "claude-"); i > 0 {
		name = name[i:]
	}
	var best Model
	bestKey, found := "", false
	for key, m := range ms {
		// Two different keys of one length cannot both be prefixes of name, so the longest
		// match is unique and map order does not matter.
		if matchesModel(name, key) && (!found || len(key) > len(bestKey)) {
			best, bestKey, found = m, key, true
		}
	}
	if found && oneM {
		best.ContextWindow = 1_000_000
	}
	return best, found
}

// validate returns an error naming the first negative figure of m, the model table's entry
// for model.
func (m Model) validate(model string) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"ContextWindow", m.ContextWindow}, {"MaxOutput", m.MaxOutput}, {"MinCacheTokens", m.MinCacheTokens}} {
		if f.v < 0 {
			return fmt.Errorf("agentctx: the Models entry for model %q has a negative %s %d", model, f.name, f.v)
		}
	}
	return nil
}

func matchesModel(name, key string) bool {
	rest, ok := strings.CutPrefix(name, key)
	return ok && (rest == "" || rest[0] == '-' || rest[0] == '@')
}
