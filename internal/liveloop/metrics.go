package liveloop

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Metrics is what one run measured.
type Metrics struct {
	// Scenario is the run's scenario, with its defaults filled in.
	Scenario Scenario
	// Turns is the number of model answers the loop completed.
	Turns int
	// Requests counts the conversation's requests sent, re-sends after a recovery included;
	// SummaryRequests the summary requests the provider received.
	Requests, SummaryRequests int
	// TerminalTurn is the turn (counting from 1) whose error ended the run, 0 when none did;
	// Terminal is the error's text.
	TerminalTurn int
	Terminal     string
	// InvalidBodies counts the requests that broke the contract: Validate failures of the
	// loop's own check, Prepare's validate-stage errors, and bodies the fake provider refused
	// as invalid (Rejected of them). FirstInvalid says what the first one broke.
	InvalidBodies, Rejected int
	FirstInvalid            string
	// Refusals counts the provider's prompt-too-long refusals of the conversation's requests
	// (OverWindow of them because prompt + max_tokens exceeded the window, Injected scripted
	// refusals of prompts that fit); Recovered those that Session.Recover answered with a
	// request. SummaryRefusals counts the summary requests refused as over the window.
	Refusals, OverWindow, Injected, Recovered, SummaryRefusals int
	// Truncations counts the answers cut at max_tokens; TruncationsRecovered those that
	// Recover answered with a request.
	Truncations, TruncationsRecovered int
	// Compactions counts the compactions made (auto and reactive), Failed the attempts that
	// failed; Freed holds each compaction's share of the context it freed,
	// 1 − PostTokens/PreTokens.
	Compactions, Failed int
	Freed               []float64
	// ServerCompactions counts the provider's compactions (answers opening with a
	// compaction block), Paused those whose answer ended after the summary.
	ServerCompactions, Paused int
	// PinnedChecked counts the requests after a compaction (the library's or the provider's)
	// of a run that pinned [PinnedRule]; PinnedMissing those that did not hold it.
	PinnedChecked, PinnedMissing int
	// MemoryCompactions counts the compactions whose summary was the session memory's latest
	// extraction ([Scenario.Memory]); Extractions the extractions the session appended;
	// ExtractionError is the error of the latest failed one.
	MemoryCompactions, Extractions int
	ExtractionError                string
	// Folds counts the turns on which the collapse producer folded a span ([Scenario.Fold]).
	Folds int
	// FactChecks counts the requests checked for the planted facts ([Scenario.Facts]): those
	// of the turns that compacted or folded once every fact was planted; FactsKept counts, by
	// kind, the checked requests that still name the fact.
	FactChecks int
	FactsKept  map[string]int
	// FactLost holds, by kind, the turn of the first checked request that no longer named the
	// fact.
	FactLost map[string]int
	// Fallbacks, BreakerOpen and Thrash count the turns whose Report showed the degradation:
	// a summary written by the fallback summarizer, the circuit breaker open, the thrash guard
	// stopping auto-compact.
	Fallbacks, BreakerOpen, Thrash int
	// CacheReadShare is the share of the input tokens read from the prompt cache when
	// simulate.Run replays the finished transcript under the run's Config; SimError is
	// why the replay failed, if it did. ProviderCacheShare is the share the fake provider
	// reported for the conversation's requests.
	CacheReadShare, ProviderCacheShare float64
	SimError                           string
	// Prepare holds the duration of each Session.Prepare call.
	Prepare []time.Duration
	// Calls counts the tool calls by tool; BigOutputs the results of BigOutput bytes.
	Calls      map[string]int
	BigOutputs int
	// PeakInput is the largest counted input of a request (Report.InputTokens).
	PeakInput int
	// PeakHeap is the largest live heap seen after a turn, in bytes; PeakRSS the process's
	// peak resident set (VmHWM), set by the command that runs one scenario per process.
	PeakHeap, PeakRSS uint64
	// Wall is the run's duration.
	Wall time.Duration
}

// PerHundred returns the compactions per 100 completed turns.
func (m *Metrics) PerHundred() float64 {
	if m.Turns == 0 {
		return 0
	}
	return 100 * float64(m.Compactions) / float64(m.Turns)
}

// Retention returns the share of the planted facts the checked requests name, in percent:
// every kind over every check; 0 without a check.
func (m *Metrics) Retention() float64 {
	if m.FactChecks == 0 {
		return 0
	}
	kept := 0
	for _, k := range FactKinds {
		kept += m.FactsKept[k]
	}
	return 100 * float64(kept) / float64(m.FactChecks*len(FactKinds))
}

// KindRetention returns the share of the checked requests that name the planted fact of kind,
// in percent; 0 without a check.
func (m *Metrics) KindRetention(kind string) float64 {
	if m.FactChecks == 0 {
		return 0
	}
	return 100 * float64(m.FactsKept[kind]) / float64(m.FactChecks)
}

// FreedMedian returns the median share of the context the compactions freed, or 0 without
// a compaction.
func (m *Metrics) FreedMedian() float64 {
	if len(m.Freed) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(m.Freed))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// PrepareQuantile returns the q-quantile (0 ≤ q ≤ 1, nearest rank) of the Prepare times.
func (m *Metrics) PrepareQuantile(q float64) time.Duration {
	if len(m.Prepare) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(m.Prepare))
	k := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// Failures lists how the run falls short of the bar: a terminal error, an invalid body, a
// median freed share under half. Nil for a run that meets it.
func (m *Metrics) Failures() []string {
	var out []string
	if m.Terminal != "" {
		out = append(out, fmt.Sprintf("terminal error at turn %d: %s", m.TerminalTurn, m.Terminal))
	}
	if m.InvalidBodies > 0 {
		out = append(out, fmt.Sprintf("%d invalid bodies; the first: %s", m.InvalidBodies, m.FirstInvalid))
	}
	if m.PinnedMissing > 0 {
		out = append(out, fmt.Sprintf("the pinned rule was missing from %d of %d requests after a compaction", m.PinnedMissing, m.PinnedChecked))
	}
	if m.ExtractionError != "" {
		out = append(out, "an extraction failed: "+m.ExtractionError)
	}
	if len(m.Freed) > 0 && m.FreedMedian() < 0.5 {
		out = append(out, fmt.Sprintf("compactions freed %.2f of the context on median, under 0.5", m.FreedMedian()))
	}
	return out
}

// TableHeader returns the markdown header of the rows [Metrics.Row] writes.
func TableHeader() string {
	return "| run | turns | terminal error | invalid bodies | refusals recovered | max_tokens recovered | compactions /100 turns | freed (median) | cache read (simulated) | Prepare p50 / p99 | peak memory | fallback / breaker / thrash | wall |\n" +
		"|---|---|---|---|---|---|---|---|---|---|---|---|---|"
}

// Row returns the run as one markdown table row.
func (m *Metrics) Row() string {
	terminal := "—"
	if m.Terminal != "" {
		terminal = fmt.Sprintf("turn %d: %s", m.TerminalTurn, shorten(m.Terminal, 160))
	}
	invalid := fmt.Sprint(m.InvalidBodies)
	if m.Rejected > 0 {
		invalid += fmt.Sprintf(" (%d refused by the provider)", m.Rejected)
	}
	freed := "—"
	if len(m.Freed) > 0 {
		freed = fmt.Sprintf("%.2f", m.FreedMedian())
	}
	cache := fmt.Sprintf("%.2f", m.CacheReadShare)
	if m.SimError != "" {
		cache = "replay failed: " + shorten(m.SimError, 60)
	}
	mem := fmt.Sprintf("heap %s", mib(m.PeakHeap))
	if m.PeakRSS > 0 {
		mem = fmt.Sprintf("RSS %s", mib(m.PeakRSS))
	}
	return fmt.Sprintf("| %s | %d/%d | %s | %s | %d/%d | %d/%d | %.1f | %s | %s | %s / %s | %s | %d / %d / %d | %s |",
		m.Scenario.label(), m.Turns, m.Scenario.Turns, terminal, invalid, m.Recovered, m.Refusals, m.TruncationsRecovered, m.Truncations,
		m.PerHundred(), freed, cache, ms(m.PrepareQuantile(0.5)), ms(m.PrepareQuantile(0.99)), mem,
		m.Fallbacks, m.BreakerOpen, m.Thrash, m.Wall.Round(100*time.Millisecond))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(n uint64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// shorten returns s on one line, cut to about n bytes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ProducersHeader returns the markdown header of the rows [Metrics.ProducersRow] writes.
func ProducersHeader() string {
	return "| run | turns | compactions /100 turns | folds | extractions | compactions from memory | summary requests | requests checked | facts kept | " +
		strings.Join(FactKinds, " | ") + " | first missing (turn) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|" + strings.Repeat("---:|", len(FactKinds)) + "---|"
}

// ProducersRow returns the run's compactions, folds, extractions and planted-fact retention as
// one markdown table row.
func (m *Metrics) ProducersRow() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %s | %d | %.1f (%d) | %d | %d | %d | %d | %d | %.1f %% |", m.Scenario.label(), m.Turns, m.PerHundred(), m.Compactions,
		m.Folds, m.Extractions, m.MemoryCompactions, m.SummaryRequests, m.FactChecks, m.Retention())
	var lost []string
	for _, k := range FactKinds {
		fmt.Fprintf(&b, " %.0f %% |", m.KindRetention(k))
		if at := m.FactLost[k]; at > 0 {
			lost = append(lost, fmt.Sprintf("%s %d", k, at))
		}
	}
	if len(lost) == 0 {
		lost = []string{"—"}
	}
	fmt.Fprintf(&b, " %s |", strings.Join(lost, ", "))
	return b.String()
}
