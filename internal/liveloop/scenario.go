package liveloop

import (
	"fmt"
	"io"

	"github.com/agentctx/agentctx"

	"github.com/agentctx/agentctx/transcript"
)

// The summarizers a scenario can compact with.
const (
	// SummarizerExtractive compacts with [github.com/agentctx/agentctx/summarize.Extractive]: no model call.
	SummarizerExtractive = "extractive"
	// SummarizerModel compacts with the adapter's model summarizer (anthropic.Summarizer,
	// openai.Summarizer), which the fake server answers.
	SummarizerModel = "model"
)

// Scenario is one run of the agent loop: the provider, the window, the summarizer, the
// tools and the script's rates. The zero value of a rate is zero; [Matrix] and [Newcomer]
// return complete scenarios.
type Scenario struct {
	// Name names the run in the table; empty: adapter/window/summarizer.
	Name string
	// Adapter is [AdapterAnthropic] or [AdapterOpenAI].
	Adapter string
	// Window is the model's context window, in tokens (Config.ContextWindow and the
	// window the fake provider enforces).
	Window int
	// Turns is the number of model answers the run asks for. Zero: 1,000.
	Turns int
	// Summarizer is [SummarizerExtractive] or [SummarizerModel].
	Summarizer string
	// Seed seeds the script, the tools and the workspace: the same scenario gives the same
	// run. Zero: 1.
	Seed uint64
	// Tools are the scripted tools the model calls. Nil: [CorpusTools].
	Tools []ToolSpec
	// BigRate is the share of Read, Bash and Grep calls whose result is [BigOutput] bytes.
	BigRate float64
	// ParallelRate is the share of answers with 2–4 tool calls at once.
	ParallelRate float64
	// EndRate is the share of answers that end the model's turn; a new user prompt follows.
	EndRate float64
	// Screenshots is the number of PNG screenshots the model takes on a schedule spread
	// over the run, besides any calls of [ImageTool] that Tools weighs in.
	Screenshots int
	// EventEvery is the period, in answers, of the provider's scripted events: one
	// prompt-too-long refusal of a prompt that fits and one answer cut at max_tokens per
	// period (a shorter run gets one of each). Zero: 300; negative: none.
	EventEvery int
	// Persist writes the session to a JSONL file through an [transcript.Appender] and the
	// replaced tool results to an [agentctx.FileStore], both in a temporary directory,
	// instead of keeping them in memory ([agentctx.MapStore]).
	Persist bool
	// Strategy is the run's Config.ProviderContext.Strategy: who compacts. Zero: the
	// library ([agentctx.CompactClient]). Under [agentctx.CompactServer] the fake Anthropic
	// server compacts when the prompt passes the request's trigger, as the provider does.
	Strategy agentctx.CompactionStrategy
	// PauseAfterCompaction is the run's Config.ProviderContext.PauseAfterCompaction: the
	// server's answer ends after its summary, and the loop sends the next request without a
	// new prompt.
	PauseAfterCompaction bool
	// Pin makes the first user prompt open with [PinnedRule] and pins it
	// (Pipeline.Pin): the loop then checks that every request after a compaction holds it
	// (Metrics.PinnedChecked, PinnedMissing).
	Pin bool
	// Fold turns on the collapse producer ([github.com/agentctx/agentctx.FoldOldest] as
	// Config.Collapse.Producer): the oldest rounds are folded into collapse commits before
	// auto-compact.
	Fold bool
	// Memory turns on session memory: a [github.com/agentctx/agentctx/memory.Extractor] writing through the run's
	// summarizer, set as session.Options.Memory and Config.Compact.Memory, so that a
	// compaction uses the latest extraction. The loop waits for an extraction in flight before
	// each Prepare, so that the run stays a function of its scenario.
	Memory bool
	// Facts plants six facts early in the run (a constraint and a decision in the first two
	// prompts, a file the model writes, a failed command, the fix the model states, an open
	// item; see [FactKinds]) and checks the request of every turn that compacts or folds, once
	// they are all planted, for each of them ([Metrics.Retention]).
	Facts bool
	// Trace, when set, receives one line for each Prepare, request and Recover of the run:
	// the request's figures (counted input, pressure, max_tokens), what the provider
	// answered, and any compaction. Nil: no trace.
	Trace io.Writer
}

// PinnedRule is the standing rule a [Scenario.Pin] run's first prompt opens with, in the
// harness's own words.
const PinnedRule = "A standing rule for this whole session: never edit anything under vendor/, and run go vet before you say a change is done."

// ServerStrategy returns the server-strategy scenario: the corpus's tools at a 200,000-token
// window on the anthropic adapter, the provider compacting (Config.ProviderContext.Strategy
// server, with pause when pause is set) and the first prompt pinned. It has no scripted
// events: a scripted refusal comes at three quarters of the window, below the provider's
// trigger (the library's auto-compact threshold), and would always compact on the client
// first.
func ServerStrategy(turns int, pause bool) Scenario {
	sc := corpusScenario(AdapterAnthropic, 200_000, SummarizerExtractive, turns)
	sc.Name = "anthropic/200000/server"
	if pause {
		sc.Name += "+pause"
	}
	sc.Strategy, sc.PauseAfterCompaction, sc.Pin, sc.EventEvery = agentctx.CompactServer, pause, true, -1
	sc.ParallelRate, sc.EndRate = 0.4, 0.05
	return sc
}

// Windows are the context windows of the run matrix.
var Windows = []int{8_000, 32_000, 64_000, 128_000, 200_000, 1_000_000}

// Model is the model name of every run; the window comes from the scenario.
const Model = "claude-sonnet-4-5"

// MaxOutputTokens is every run's Config.MaxOutputTokens.
const MaxOutputTokens = 8_192

// label returns the scenario's name for the table.
func (sc Scenario) label() string {
	if sc.Name != "" {
		return sc.Name
	}
	return fmt.Sprintf("%s/%d/%s", sc.Adapter, sc.Window, sc.Summarizer)
}

// withDefaults fills in the fields whose zero value stands for a default.
func (sc Scenario) withDefaults() Scenario {
	if sc.Turns == 0 {
		sc.Turns = 1000
	}
	if sc.Seed == 0 {
		sc.Seed = 1
	}
	if sc.Tools == nil {
		sc.Tools = CorpusTools()
	}
	if sc.EventEvery == 0 {
		sc.EventEvery = 300
	}
	return sc
}

// corpusScenario is a matrix cell: the corpus's tools, a 300 KB result in 1 % of the Read,
// Bash and Grep calls, 20 % parallel calls, 12 % of answers ending the turn.
func corpusScenario(adapter string, window int, summarizer string, turns int) Scenario {
	return Scenario{Adapter: adapter, Window: window, Turns: turns, Summarizer: summarizer, Seed: 1,
		Tools: CorpusTools(), BigRate: 0.01, ParallelRate: 0.20, EndRate: 0.12}
}

// Matrix returns the run matrix: every window of [Windows] with both summarizers on both
// adapters, turns answers each, then [Newcomer].
func Matrix(turns int) []Scenario {
	var out []Scenario
	for _, adapter := range []string{AdapterAnthropic, AdapterOpenAI} {
		for _, w := range Windows {
			for _, s := range []string{SummarizerExtractive, SummarizerModel} {
				out = append(out, corpusScenario(adapter, w, s, turns))
			}
		}
	}
	return append(out, Newcomer(turns))
}

// Newcomer returns the trial agent a new user built (on the defaults it died at turn 140)
// as a scenario: a 60,000 window on the anthropic adapter with the extractive summarizer, tools Read, Bash and Grep
// whose outputs are 2–40 KB, 300 KB in 4 % of the calls, 20 % parallel calls and three PNG
// screenshots.
func Newcomer(turns int) Scenario {
	shots, _ := distOf(CorpusDists, ImageTool)
	return Scenario{Name: "newcomer", Adapter: AdapterAnthropic, Window: 60_000, Turns: turns, Summarizer: SummarizerExtractive, Seed: 7,
		Tools: []ToolSpec{
			{Name: "Read", Weight: 1, Sizes: UniformDist("Read", 2<<10, 40<<10)},
			{Name: "Bash", Weight: 1, Sizes: UniformDist("Bash", 2<<10, 40<<10)},
			{Name: "Grep", Weight: 1, Sizes: UniformDist("Grep", 2<<10, 40<<10)},
			{Name: ImageTool, Weight: 0, Sizes: shots},
		},
		BigRate: 0.04, ParallelRate: 0.20, EndRate: 0.12, Screenshots: 3}
}

// system is the system prompt of every run, in the harness's own words.
var system = []*transcript.Text{{Text: "You are a coding agent working in a Go repository on the user's behalf. " +
	"Use the tools to read, search, change and test the code; keep changes small and explain what you did. " +
	"When a task is done, say so briefly and wait for the next one."}}

// ProducerWindows are the windows at which [Producers] compares the runs: small enough that
// a run compacts many times.
var ProducerWindows = []int{32_000, 60_000}

// Producers returns the comparison of the collapse producer and session memory: at each window
// of [ProducerWindows], the matrix's cell on the anthropic adapter with the summarizer given,
// facts planted, with neither, with the producer, with session memory and with both.
func Producers(summarizer string, turns int) []Scenario {
	var out []Scenario
	for _, w := range ProducerWindows {
		for _, on := range []struct{ fold, memory bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			sc := corpusScenario(AdapterAnthropic, w, summarizer, turns)
			sc.Fold, sc.Memory, sc.Facts = on.fold, on.memory, true
			sc.Name = fmt.Sprintf("%d/%s/%s", w, summarizer, producersLabel(on.fold, on.memory))
			out = append(out, sc)
		}
	}
	return out
}

// producersLabel names what a [Producers] scenario turns on.
func producersLabel(fold, memory bool) string {
	switch {
	case fold && memory:
		return "fold+memory"
	case fold:
		return "fold"
	case memory:
		return "memory"
	}
	return "off"
}
