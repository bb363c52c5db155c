package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	simulation "github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
)

// policy is the simulate command's config file (TOML): every stage's knobs, and the price
// table. A key left out keeps the library's default; an unknown key is an error. The format
// is documented in docs/simulate.md.
type policy struct {
	Model           string `toml:"model"`
	ContextWindow   int    `toml:"context_window"`
	MaxOutputTokens int    `toml:"max_output_tokens"`
	// Thinking is "off", "adaptive" or a budget (an integer, or a string of one): see
	// parseThinking. Read into thinking, thinkingSet.
	Thinking    any `toml:"thinking"`
	thinking    *provider.Thinking
	thinkingSet bool

	Budget struct {
		Disable         bool           `toml:"disable"`
		MaxResultChars  int            `toml:"max_result_chars"`
		ToolMaxChars    map[string]int `toml:"tool_max_chars"`
		TailTools       []string       `toml:"tail_tools"`
		MaxMessageChars int            `toml:"max_message_chars"`
		PreviewBytes    int            `toml:"preview_bytes"`
	} `toml:"budget"`
	Snip struct {
		TagMessages    bool `toml:"tag_messages"`
		ReminderTokens int  `toml:"reminder_tokens"`
	} `toml:"snip"`
	Microcompact struct {
		Disable             bool          `toml:"disable"`
		Gap                 time.Duration `toml:"gap"`
		KeepRecent          int           `toml:"keep_recent"`
		Tools               []string      `toml:"tools"`
		Cached              bool          `toml:"cached"`
		CacheEditingBeta    string        `toml:"cache_editing_beta"`
		CachedTriggerTokens int           `toml:"cached_trigger_tokens"`
	} `toml:"microcompact"`
	Collapse struct {
		Disable        bool    `toml:"disable"`
		Fold           bool    `toml:"fold"`
		CommitFraction float64 `toml:"commit_fraction"`
		TargetFraction float64 `toml:"target_fraction"`
	} `toml:"collapse"`
	Compact struct {
		DisableAuto      bool `toml:"disable_auto"`
		DisableFallback  bool `toml:"disable_fallback"`
		SummaryMaxTokens int  `toml:"summary_max_tokens"`
		PinnedMaxTokens  int  `toml:"pinned_max_tokens"`
		MaxFailures      int  `toml:"max_failures"`
		ThrashTurns      int  `toml:"thrash_turns"`
		ThrashRuns       int  `toml:"thrash_runs"`
		Tail             struct {
			Disable         bool `toml:"disable"`
			MinTokens       int  `toml:"min_tokens"`
			MinTextMessages int  `toml:"min_text_messages"`
			MaxTokens       int  `toml:"max_tokens"`
		} `toml:"tail"`
		Rehydrate struct {
			DisableSkills   bool     `toml:"disable_skills"`
			DisableTodos    bool     `toml:"disable_todos"`
			MaxFiles        int      `toml:"max_files"`
			MaxFileTokens   int      `toml:"max_file_tokens"`
			MaxFilesTokens  int      `toml:"max_files_tokens"`
			MaxSkillTokens  int      `toml:"max_skill_tokens"`
			MaxSkillsTokens int      `toml:"max_skills_tokens"`
			FileTools       []string `toml:"file_tools"`
		} `toml:"rehydrate"`
	} `toml:"compact"`
	Context struct {
		CurrentDate bool `toml:"current_date"`
	} `toml:"context"`
	Normalize struct {
		AllowPrefill bool   `toml:"allow_prefill"`
		Continuation string `toml:"continuation"`
	} `toml:"normalize"`
	Cache struct {
		Disable        bool    `toml:"disable"`
		TTL            string  `toml:"ttl"`
		SystemMarker   bool    `toml:"system_marker"`
		NoSystemMarker bool    `toml:"no_system_marker"`
		ToolsMarker    bool    `toml:"tools_marker"`
		ReadPrice      float64 `toml:"read_price"`
		WritePrice     float64 `toml:"write_price"`
		MinGain        float64 `toml:"min_gain"`
	} `toml:"cache"`
	Pressure struct {
		Warning         limit   `toml:"warning"`
		Error           limit   `toml:"error"`
		Threshold       limit   `toml:"threshold"`
		Blocking        limit   `toml:"blocking"`
		Ratio           float64 `toml:"ratio"`
		DefaultRatio    float64 `toml:"default_ratio"`
		MinOutputTokens int     `toml:"min_output_tokens"`
		MaxBodyBytes    int     `toml:"max_body_bytes"`
	} `toml:"pressure"`
	// Prices replace or add entries of the default price table, by model id prefix.
	Prices map[string]price `toml:"prices"`
}

// limit is a pressure level: tokens, or a fraction of the window.
type limit struct {
	Tokens   int     `toml:"tokens"`
	Fraction float64 `toml:"fraction"`
}

// price is one model's price, in US dollars per million tokens.
type price struct {
	Input        float64 `toml:"input"`
	CacheWrite5m float64 `toml:"cache_write_5m"`
	CacheWrite1h float64 `toml:"cache_write_1h"`
	CacheRead    float64 `toml:"cache_read"`
	Output       float64 `toml:"output"`
}

// readPolicy reads the config file at path. Its errors name the file, the line and the key.
func readPolicy(path string) (*policy, error) {
	data, err := readFile(path, maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var p policy
	md, err := toml.Decode(string(data), &p)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("--config: %s:%d: %s", path, pe.Position.Line, strings.TrimPrefix(pe.Message, "toml: "))
		}
		return nil, fmt.Errorf("--config: %s: %s", path, strings.TrimPrefix(err.Error(), "toml: "))
	}
	if keys := md.Undecoded(); len(keys) > 0 {
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.String()
		}
		return nil, fmt.Errorf("--config: %s: unknown key %s (docs/simulate.md lists the keys)", path, strings.Join(names, ", "))
	}
	// The library would name its own fields (a negative window even as unknown for the model).
	for _, k := range []struct {
		key string
		v   int
	}{{"context_window", p.ContextWindow}, {"max_output_tokens", p.MaxOutputTokens}} {
		if k.v < 0 {
			return nil, fmt.Errorf("--config: %s: %s %d is negative", path, k.key, k.v)
		}
	}
	if md.IsDefined("thinking") {
		v := fmt.Sprint(p.Thinking)
		if _, ok := p.Thinking.(string); !ok {
			if _, ok := p.Thinking.(int64); !ok {
				return nil, fmt.Errorf("--config: %s: thinking: want \"off\", \"adaptive\" or a budget in tokens, got %v", path, p.Thinking)
			}
		}
		th, err := parseThinking(v)
		if err != nil {
			return nil, fmt.Errorf("--config: %s: thinking: %v", path, err)
		}
		p.thinking, p.thinkingSet = th, true
	}
	return &p, nil
}

// parseThinking reads a thinking setting: "off" (none), "adaptive", or N, thinking enabled
// with a budget of N tokens (at least the provider's 1,024).
func parseThinking(s string) (*provider.Thinking, error) {
	switch s {
	case "off":
		return nil, nil
	case "adaptive":
		return &provider.Thinking{Type: "adaptive"}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("want off, adaptive or a budget in tokens, got %q", s)
	}
	if n < 1024 {
		return nil, fmt.Errorf("a thinking budget is at least 1024 tokens, got %d", n)
	}
	return &provider.Thinking{Type: "enabled", BudgetTokens: n}, nil
}

// readSystem reads the system prompt file of --system: UTF-8 text, read whole.
func readSystem(path string) ([]*transcript.Text, error) {
	data, err := readFile(path, maxToolsBytes)
	if err != nil {
		return nil, fmt.Errorf("--system: %w", err)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("--system: %s: not UTF-8 text", path)
	}
	if len(data) == 0 {
		return []*transcript.Text{}, nil
	}
	return []*transcript.Text{{Text: string(data)}}, nil
}

// apply sets cfg's knobs from the file.
func (p *policy) apply(cfg *agentctx.Config) {
	if p.Model != "" {
		cfg.Model = p.Model
	}
	if p.ContextWindow != 0 {
		cfg.ContextWindow = p.ContextWindow
	}
	if p.MaxOutputTokens != 0 {
		cfg.MaxOutputTokens = p.MaxOutputTokens
	}
	b := &p.Budget
	cfg.Budget.Disable, cfg.Budget.MaxResultChars, cfg.Budget.ToolMaxChars = b.Disable, b.MaxResultChars, b.ToolMaxChars
	cfg.Budget.TailTools = b.TailTools
	cfg.Budget.MaxMessageChars, cfg.Budget.PreviewBytes = b.MaxMessageChars, b.PreviewBytes
	cfg.Snip.TagMessages = p.Snip.TagMessages
	cfg.Snip.ReminderTokens = p.Snip.ReminderTokens
	m := &p.Microcompact
	cfg.Microcompact = agentctx.MicrocompactConfig{Disable: m.Disable, Gap: m.Gap, KeepRecent: m.KeepRecent, Tools: m.Tools,
		Cached: m.Cached, CacheEditingBeta: m.CacheEditingBeta, CachedTriggerTokens: m.CachedTriggerTokens}
	cfg.Collapse.Disable = p.Collapse.Disable
	cfg.Collapse.CommitFraction, cfg.Collapse.TargetFraction = p.Collapse.CommitFraction, p.Collapse.TargetFraction
	if p.Collapse.Fold {
		cfg.Collapse.Producer = agentctx.FoldOldest{}
	}
	c := &p.Compact
	cfg.Compact.DisableAuto, cfg.Compact.DisableFallback = c.DisableAuto, c.DisableFallback
	cfg.Compact.SummaryMaxTokens, cfg.Compact.PinnedMaxTokens, cfg.Compact.MaxFailures = c.SummaryMaxTokens, c.PinnedMaxTokens, c.MaxFailures
	cfg.Compact.ThrashTurns, cfg.Compact.ThrashRuns = c.ThrashTurns, c.ThrashRuns
	cfg.Compact.Tail = agentctx.TailConfig{Disable: c.Tail.Disable, MinTokens: c.Tail.MinTokens, MinTextMessages: c.Tail.MinTextMessages, MaxTokens: c.Tail.MaxTokens}
	r := &c.Rehydrate
	cfg.Compact.Rehydrate.DisableSkills, cfg.Compact.Rehydrate.DisableTodos = r.DisableSkills, r.DisableTodos
	cfg.Compact.Rehydrate.MaxFiles, cfg.Compact.Rehydrate.MaxFileTokens, cfg.Compact.Rehydrate.MaxFilesTokens = r.MaxFiles, r.MaxFileTokens, r.MaxFilesTokens
	cfg.Compact.Rehydrate.MaxSkillTokens, cfg.Compact.Rehydrate.MaxSkillsTokens, cfg.Compact.Rehydrate.FileTools = r.MaxSkillTokens, r.MaxSkillsTokens, r.FileTools
	cfg.Context.CurrentDate = p.Context.CurrentDate
	cfg.Normalize = agentctx.NormalizeConfig{AllowPrefill: p.Normalize.AllowPrefill, Continuation: p.Normalize.Continuation}
	cfg.Cache = agentctx.CacheConfig{Disable: p.Cache.Disable, TTL: p.Cache.TTL, SystemMarker: p.Cache.SystemMarker,
		NoSystemMarker: p.Cache.NoSystemMarker, ToolsMarker: p.Cache.ToolsMarker,
		ReadPrice: p.Cache.ReadPrice, WritePrice: p.Cache.WritePrice, MinGain: p.Cache.MinGain}
	pr := &p.Pressure
	lim := func(l limit) agentctx.Limit { return agentctx.Limit{Tokens: l.Tokens, Fraction: l.Fraction} }
	cfg.Pressure = agentctx.PressureConfig{Warning: lim(pr.Warning), Error: lim(pr.Error), Threshold: lim(pr.Threshold), Blocking: lim(pr.Blocking),
		Ratio: pr.Ratio, DefaultRatio: pr.DefaultRatio, MinOutputTokens: pr.MinOutputTokens, MaxBodyBytes: pr.MaxBodyBytes}
}

// prices returns the default price table with the file's entries.
func (p *policy) prices() simulation.Prices {
	ps := simulation.DefaultPrices()
	for name, pr := range p.Prices {
		ps[name] = simulation.Price{Input: pr.Input, CacheWrite5m: pr.CacheWrite5m, CacheWrite1h: pr.CacheWrite1h, CacheRead: pr.CacheRead, Output: pr.Output}
	}
	return ps
}
