package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/provider"
	simulation "github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
)

// simulate replays a session under a policy and reports its tokens, cache and cost.
func (a *app) simulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		svg    string
		asJSON bool
		pf     policyFlags
	)
	pf.register(fs, a)
	fs.BoolVar(&asJSON, "json", false, "print the simulation as JSON (the schema is in docs/simulate.md)")
	fs.StringVar(&svg, "svg", "", "also write a chart of the input tokens per turn to this `file`: the threshold, the compactions, the cached share")
	files, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return helpRequest{flagUsage(fs)}
	}
	if err != nil {
		return UsageError{flagMessage(err)}
	}
	if len(files) != 1 {
		return UsageError{fmt.Sprintf("simulate needs exactly one session FILE, got %d", len(files))}
	}
	pf.allowAll = true
	rp, err := pf.replay(ctx, a, fs, files[0], stderr)
	if err != nil {
		return err
	}
	defer rp.close()
	if pf.strategy == strategyAll {
		return strategies(ctx, rp, stdout, asJSON)
	}
	sim, err := simulation.Run(ctx, rp.records, rp.cfg, rp.opts)
	if err != nil {
		return fmt.Errorf("%s: %w", rp.addr, err)
	}
	if svg != "" {
		if err := os.WriteFile(svg, chart(sim, rp.addr.String()), 0o644); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	if asJSON {
		out, err := json.MarshalIndent(sim, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(out, '\n'))
		return err
	}
	_, err = io.WriteString(stdout, simText(sim, rp.addr.String()))
	return err
}

// policyFlags are the flags of the commands that replay a session under a policy (simulate,
// report): the model, the window, the policy file, the tools and the summarizer.
type policyFlags struct {
	model, config, tools string
	window               int
	sf                   summarizerFlags
	// mode is --replay; system and systemTokens the fixed prefix; thinking --thinking.
	mode, system, thinking string
	systemTokens           int
	// strategy is --strategy; allowAll: the command compares the strategies for "all".
	strategy string
	allowAll bool
}

func (pf *policyFlags) register(fs *flag.FlagSet, a *app) {
	fs.StringVar(&pf.model, "model", "", "the model `name` to simulate (default: the config file's, else the session's last model that the model table knows, else "+defaultModel+"; without one named, each turn is priced at its response's model, as the real one is)")
	fs.IntVar(&pf.window, "window", 0, "the context window, `N` tokens (default: the config file's, else the model's)")
	fs.StringVar(&pf.config, "config", "", "a TOML `file` setting every stage's knobs and prices (see docs/simulate.md)")
	fs.StringVar(&pf.tools, "tools", "", "a JSON `file` holding the tool definitions every request carries (default: the tools the session calls, declared up front with empty schemas)")
	fs.StringVar(&pf.mode, "replay", simulation.ReplayFile, "`policy`: replay the conversation without the file's compactions, compacting only where the policy decides; file: replay the file with its compactions")
	fs.StringVar(&pf.system, "system", "", "a text `file` holding the system prompt every request carries (default: a synthetic one of the size the file's first usage says it lacks)")
	fs.IntVar(&pf.systemTokens, "system-tokens", 0, "a synthetic system prompt of `N` counted tokens on every request, instead of the estimate (0: none)")
	fs.StringVar(&pf.thinking, "thinking", "", "the thinking setting, `off|adaptive|N` (N: enabled with that budget; default: the config file's, else the session's own, inferred from its thinking blocks)")
	fs.StringVar(&pf.strategy, "strategy", "", "who compacts, `client|server|auto` (Config.ProviderContext.Strategy; default client); simulate also takes all: the three side by side")
	pf.sf.register(fs, a)
}

// replay is a session ready to replay: its records, the policy and the simulation's options,
// with a progress line on stderr.
type replay struct {
	addr    address
	records []transcript.Record
	cfg     agentctx.Config
	opts    simulation.Options
	close   func()
}

// replay reads the session file names (a path or a postgres:// address) and the policy the
// flags of fs set.
func (pf *policyFlags) replay(ctx context.Context, a *app, fs *flag.FlagSet, file string, stderr io.Writer) (*replay, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["window"] && pf.window <= 0 {
		return nil, UsageError{fmt.Sprintf("--window must be positive, got %d", pf.window)}
	}
	if pf.mode != simulation.ReplayFile && pf.mode != simulation.ReplayPolicy {
		return nil, UsageError{fmt.Sprintf("--replay must be policy or file, got %q", pf.mode)}
	}
	switch agentctx.CompactionStrategy(pf.strategy) {
	case "", agentctx.CompactClient, agentctx.CompactServer, agentctx.CompactAuto:
	default:
		if pf.strategy != strategyAll || !pf.allowAll {
			return nil, UsageError{fmt.Sprintf("--strategy must be client, server or auto, got %q", pf.strategy)}
		}
	}
	if pf.systemTokens < 0 {
		return nil, UsageError{fmt.Sprintf("--system-tokens must not be negative, got %d", pf.systemTokens)}
	}
	if set["system"] && set["system-tokens"] {
		return nil, UsageError{"--system and --system-tokens both set the system prompt: pass one"}
	}
	var thinking *provider.Thinking
	if set["thinking"] {
		t, err := parseThinking(pf.thinking)
		if err != nil {
			return nil, UsageError{"--thinking: " + err.Error()}
		}
		thinking = t
	}
	summarizer, err := pf.sf.summarizer(a.Summarizers)
	if err != nil {
		return nil, err
	}
	var pol policy
	if pf.config != "" {
		p, err := readPolicy(pf.config)
		if err != nil {
			return nil, err
		}
		pol = *p
	}
	addr, err := parseAddress(file, true, a.Database)
	if err != nil {
		return nil, err
	}
	tr, db, err := readAddress(ctx, addr, transcript.ReadOptions{})
	rp := &replay{addr: addr, close: func() {}}
	if db != nil {
		rp.close = db.Close
	}
	if err != nil {
		rp.close()
		return nil, err
	}
	// The lines the read skipped are said, as inspect says them: the replay goes on without
	// them.
	for _, p := range tr.Problems {
		fmt.Fprintf(stderr, "problem    %s (skipped)\n", p.Error())
	}
	cfg := agentctx.Config{Compact: agentctx.CompactConfig{Summarizer: summarizer, Rehydrate: agentctx.RehydrateConfig{DisableFiles: true}}}
	pol.apply(&cfg)
	if pf.model != "" {
		cfg.Model = pf.model
	}
	if cfg.Model == "" {
		cfg.Model, _ = sessionModel(tr)
	}
	if pf.window != 0 {
		cfg.ContextWindow = pf.window
	}
	if pf.strategy != strategyAll {
		cfg.ProviderContext.Strategy = agentctx.CompactionStrategy(pf.strategy)
	}
	if _, ok := agentctx.DefaultModels().Lookup(cfg.Model); !ok && cfg.ContextWindow == 0 {
		rp.close()
		return nil, UsageError{fmt.Sprintf("model %q is not in the model table, so its context window is unknown: pass --window", cfg.Model)}
	}
	// Without a model named, each turn is priced at its response's model, as the real one is.
	opts := simulation.Options{Prices: pol.prices(), Replay: pf.mode, Calibrate: true, ResponseModels: pf.model == "" && pol.Model == ""}
	switch {
	case set["thinking"]:
		cfg.Thinking = thinking
	case pol.thinkingSet:
		cfg.Thinking = pol.thinking
	default:
		opts.SessionThinking = true
	}
	if opts.Tools, err = readTools(pf.tools); err != nil {
		rp.close()
		return nil, err
	}
	switch {
	case pf.system != "":
		if opts.System, err = readSystem(pf.system); err != nil {
			rp.close()
			return nil, err
		}
	case set["system-tokens"]:
		opts.SystemTokens = pf.systemTokens
	default:
		opts.EstimatePrefix = true
	}
	if line := newProgress(stderr); line != nil {
		opts.Progress = line.set
		close := rp.close
		rp.close = func() { line.clear(); close() }
	}
	rp.records, rp.cfg, rp.opts = tr.Records, cfg, opts
	return rp, nil
}

// sessionModel returns the session's last model that the model table knows, or the default.
func sessionModel(tr *transcript.File) (string, bool) {
	models := agentctx.DefaultModels()
	for i := len(tr.Records) - 1; i >= 0; i-- {
		r := &tr.Records[i]
		if r.Type == transcript.TypeAssistant && r.Message != nil {
			if _, ok := models.Lookup(r.Message.Model); ok {
				return r.Message.Model, true
			}
		}
	}
	return defaultModel, false
}

// simText formats a simulation for people: a header, one line per turn, and the totals of
// the policy beside the real ones.
func simText(sim *simulation.Result, path string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: %d records, %d responses replayed", path, sim.Records, sim.Responses)
	if sim.Skipped > 0 {
		fmt.Fprintf(&b, " (%d sidechain or error responses skipped)", sim.Skipped)
	}
	fmt.Fprintf(&b, "\nmodel %s  window %d  auto-compact threshold %d\n", sim.Model, sim.ContextWindow, sim.Threshold)
	if p := sim.Price; sim.Priced {
		fmt.Fprintf(&b, "price per million tokens: input $%g, cache write $%g (5m) $%g (1h), cache read $%g, output $%g\n",
			p.Input, p.CacheWrite5m, p.CacheWrite1h, p.CacheRead, p.Output)
	} else {
		b.WriteString("price: the model is not in the price table; costs are 0 (add it under [prices] in --config)\n")
	}
	b.WriteString(setupText(sim))
	b.WriteString("\n turn  time                      input   read  write uncached  output      cost  stages\n")
	for _, t := range sim.Turns {
		ts := "-"
		if !t.Time.IsZero() {
			ts = t.Time.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(&b, "%5d  %-22s %8d %6d %6d %8d %7d %9.4f  %s\n", t.Turn, ts, t.InputTokens, t.CacheRead,
			t.CacheWrite5m+t.CacheWrite1h, t.Uncached, t.Output, t.Cost, turnNotes(t))
	}
	real := sim.Real
	col := func(f func(*simulation.Totals) string) string {
		if real == nil {
			return "-"
		}
		return f(real)
	}
	tot := &sim.Totals
	fmt.Fprintf(&b, "\n%-22s %16s %16s\n", "", "policy", "real")
	row := func(name string, f func(*simulation.Totals) string) {
		fmt.Fprintf(&b, "%-22s %16s %16s\n", name, f(tot), col(f))
	}
	num := func(f func(*simulation.Totals) int) func(*simulation.Totals) string {
		return func(t *simulation.Totals) string { return fmt.Sprint(f(t)) }
	}
	row("turns", num(func(t *simulation.Totals) int { return t.Turns }))
	row("input tokens", num(func(t *simulation.Totals) int { return t.InputTokens }))
	row("peak (turn)", func(t *simulation.Totals) string { return fmt.Sprintf("%d (%d)", t.PeakTokens, t.PeakTurn) })
	row("cache read", num(func(t *simulation.Totals) int { return t.CacheRead }))
	row("cache write 5m", num(func(t *simulation.Totals) int { return t.CacheWrite5m }))
	row("cache write 1h", num(func(t *simulation.Totals) int { return t.CacheWrite1h }))
	row("uncached input", num(func(t *simulation.Totals) int { return t.Uncached }))
	row("output tokens", num(func(t *simulation.Totals) int { return t.Output }))
	row("cost (USD)", func(t *simulation.Totals) string { return fmt.Sprintf("%.4f", t.Cost) })
	row("cache-read share", func(t *simulation.Totals) string {
		if t.InputTokens == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f %%", 100*float64(t.CacheRead)/float64(t.InputTokens))
	})
	row("compactions", num(func(t *simulation.Totals) int { return t.Compactions }))
	row("cache misses", num(func(t *simulation.Totals) int { return t.Misses }))
	fmt.Fprintf(&b, "%-22s %16d %16s\n", "prefix breaks", tot.PrefixBreaks, "-")
	if tot.Unexplained > 0 {
		fmt.Fprintf(&b, "%-22s %16d %16s\n", "unexplained breaks", tot.Unexplained, "-")
	}
	if tot.CompactFailures > 0 || tot.Failed > 0 {
		fmt.Fprintf(&b, "%-22s %16d %16s\n", "failed compactions", tot.CompactFailures, "-")
		fmt.Fprintf(&b, "%-22s %16d %16s\n", "turns not sendable", tot.Failed, "-")
	}
	if real != nil && real.Cost > 0 && sim.Priced {
		fmt.Fprintf(&b, "%-22s %16s\n", "policy ÷ real cost", fmt.Sprintf("%.3f", tot.Cost/real.Cost))
	}
	if real != nil && real.Turns < len(sim.Turns) {
		fmt.Fprintf(&b, "(the real figures cover the %d turns whose response carries usage)\n", real.Turns)
	}
	if c := sim.Calibration; c != nil && c.Scaled {
		b.WriteString("(the policy's cache split and cost are counted tokens × the calibration ratio; input tokens per turn are counted)\n")
	}
	return b.String()
}

// turnNotes lists what the stages did in a turn, a compaction, an expired cache and an error.
func turnNotes(t simulation.Turn) string {
	var notes []string
	for _, s := range t.Stages {
		if s.Actions == 0 || s.Stage == "cache" || s.Stage == "compact" {
			continue
		}
		n := fmt.Sprintf("%s %d", s.Stage, s.Actions)
		if s.TokensFreed > 0 {
			n += fmt.Sprintf(" (-%d)", s.TokensFreed)
		}
		notes = append(notes, n)
	}
	if c := t.Compaction; c != nil {
		notes = append(notes, fmt.Sprintf("compaction %s %d→%d", c.Outcome, c.PreTokens, c.PostTokens))
	}
	if t.Expired {
		notes = append(notes, "cache expired")
	}
	if b := t.PrefixBreak; b != nil {
		cause := b.Cause
		if cause == "" {
			cause = "UNEXPLAINED"
		}
		notes = append(notes, fmt.Sprintf("prefix break (%s, %d tokens lost)", cause, b.Lost))
	}
	if t.Error != "" {
		notes = append(notes, "NOT SENT: "+t.Error)
	}
	return strings.Join(notes, ", ")
}

// setupText says how the replay was set up: its mode, the fixed prefix and the calibration
// when the simulation reports them, and the thinking setting.
func setupText(sim *simulation.Result) string {
	var b strings.Builder
	if sim.Replay != "" {
		what := "the file with its own compactions"
		if sim.Replay == simulation.ReplayPolicy {
			what = "from the first record, the file's compactions left out"
		}
		fmt.Fprintf(&b, "replay %s: %s\n", sim.Replay, what)
	}
	if fp := sim.FixedPrefix; fp != nil {
		fmt.Fprintf(&b, "fixed prefix: a system prompt of %d tokens", fp.Tokens)
		switch fp.Source {
		case simulation.PrefixEstimate:
			fmt.Fprintf(&b, ", estimated as the calibration fit's intercept (the first response: %d tokens reported, %d counted in the request without it)", fp.FirstPrompt, fp.FirstRequest)
		case simulation.PrefixSystemTokens:
			b.WriteString(", synthetic (--system-tokens)")
		default:
			b.WriteString(" (--system)")
		}
		b.WriteString("\n")
	}
	if sim.WarmPrefix > 0 {
		fmt.Fprintf(&b, "warm start: the first response read from the cache, so %d tokens of the fixed prefix start cached\n", sim.WarmPrefix)
	}
	if c := sim.Calibration; c != nil {
		fmt.Fprintf(&b, "calibration: %.4f provider tokens per counted token, fitted on %d responses", c.Ratio, c.Responses)
		if c.Model != "" {
			fmt.Fprintf(&b, " of %s", c.Model)
		}
		if c.Unfit != "" {
			fmt.Fprintf(&b, " (not fitted: %s)", c.Unfit)
		}
		b.WriteString("\n")
		for _, m := range c.Models {
			fmt.Fprintf(&b, "calibration of %s: %.4f, its fixed part %d provider tokens, fitted on %d responses\n", m.Model, m.Ratio, m.Fixed, m.Responses)
		}
	}
	th := "off"
	if t := sim.Thinking; t != nil {
		th = t.Type
		if t.BudgetTokens > 0 {
			th += fmt.Sprintf(", budget %d", t.BudgetTokens)
		}
	}
	from := ""
	if sim.ThinkingSource == "session" {
		from = " (the session's own)"
	}
	fmt.Fprintf(&b, "thinking %s%s\n", th, from)
	return b.String()
}
