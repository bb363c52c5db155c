package agentctx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// keptBridges says which of the chain's bridged breaks (see [transcript.ChainProblem]) lie
// inside the kept tail — a kept record whose parent link broke — as "line 219 (unreadable),
// line 240 (dangling)", or "" for none: the kept tail is relinked across them as the chain
// was, and the compaction's reason says so.
func keptBridges(kept []item, problems []transcript.ChainProblem) string {
	var in map[string]bool
	var out []string
	for _, p := range problems {
		if p.Bridge == "" {
			continue
		}
		if in == nil {
			in = make(map[string]bool, len(kept))
			for i := range kept {
				if kept[i].rec != nil {
					in[kept[i].uuid] = true
				}
			}
		}
		if in[p.UUID] {
			out = append(out, fmt.Sprintf("line %d (%s)", p.Line, p.Kind))
		}
	}
	return strings.Join(out, ", ")
}

// unionProblems returns a followed by the problems of b that a does not hold. The chain a kept
// tail was relinked on meets the breaks inside the tail again, with fewer records cut off
// behind them: a break is the same break whatever its Cut.
func unionProblems(a, b []transcript.ChainProblem) []transcript.ChainProblem {
	out := slices.Clip(a)
	for _, x := range b {
		if !slices.ContainsFunc(a, func(y transcript.ChainProblem) bool { y.Cut = x.Cut; return y == x }) {
			out = append(out, x)
		}
	}
	return out
}
