package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentctx/agentctx"
	simulation "github.com/agentctx/agentctx/simulate"
)

// strategyAll is --strategy's value that compares the compaction strategies side by side.
const strategyAll = "all"

// strategyRow is one strategy's replay of the session, for --strategy all.
type strategyRow struct {
	Strategy agentctx.CompactionStrategy `json:"strategy"`
	// Server is what the strategy resolved to for the model: the provider compacts.
	Server bool               `json:"server"`
	Result *simulation.Result `json:"result"`
}

// strategies replays the session once per compaction strategy (client, server, auto) and
// prints them side by side: who compacted, how often, the tokens and the cost.
func strategies(ctx context.Context, rp *replay, stdout io.Writer, asJSON bool) error {
	var rows []strategyRow
	for _, s := range []agentctx.CompactionStrategy{agentctx.CompactClient, agentctx.CompactServer, agentctx.CompactAuto} {
		cfg := rp.cfg
		cfg.ProviderContext.Strategy = s
		p, err := agentctx.New(cfg)
		if err != nil {
			return fmt.Errorf("--strategy %s: %w", s, err)
		}
		sim, err := simulation.Run(ctx, rp.records, cfg, rp.opts)
		if err != nil {
			return fmt.Errorf("%s: --strategy %s: %w", rp.addr, s, err)
		}
		rows = append(rows, strategyRow{Strategy: s, Server: p.ServerCompaction(), Result: sim})
	}
	if asJSON {
		out, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(out, '\n'))
		return err
	}
	var b strings.Builder
	first := rows[0].Result
	fmt.Fprintf(&b, "session    %s\nmodel      %s, window %d, threshold %d (the provider's trigger under server)\nturns      %d\n\n",
		rp.addr, first.Model, first.ContextWindow, first.Threshold, first.Responses)
	fmt.Fprintf(&b, "%-8s %-8s %8s %8s %12s %12s %10s %10s %10s\n", "strategy", "compacts", "client", "provider", "input", "cache read", "output", "peak", "cost")
	for _, r := range rows {
		who := "client"
		if r.Server {
			who = "provider"
		}
		t := r.Result.Totals
		fmt.Fprintf(&b, "%-8s %-8s %8d %8d %12d %12d %10d %10d %10s\n", r.Strategy, who, t.Compactions, t.ServerCompactions,
			t.InputTokens, t.CacheRead, t.Output, t.PeakTokens, fmt.Sprintf("$%.2f", t.Cost))
	}
	b.WriteString("\nclient: the library's compactions; provider: the provider's (its summarizing step billed: the whole prompt in, the summary out).\n")
	_, err := io.WriteString(stdout, b.String())
	return err
}
