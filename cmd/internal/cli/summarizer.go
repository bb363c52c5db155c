package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/summarize"
)

// summarizerNames are the values of --summarizer: the extractive summarizer, then the model
// summarizers of agentctx-full.
var summarizerNames = []string{"extractive", "anthropic", "openai"}

// summarizerFlags are the flags that pick a compaction's summarizer.
type summarizerFlags struct {
	name  string
	model string
}

func (f *summarizerFlags) register(fs *flag.FlagSet, a *app) {
	fs.StringVar(&f.name, "summarizer", "extractive", "the `name` of the summarizer that writes a compaction's summary: "+
		"extractive (no model, no network), anthropic (the Messages API: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL "+
		"from the environment, as the SDK reads them) or openai (Chat Completions on any OpenAI-compatible server: "+
		"OPENAI_API_KEY and OPENAI_BASE_URL)"+onlyFull(len(a.Summarizers) == 0))
	fs.StringVar(&f.model, "summary-model", "", "the `model` the summarizer asks (anthropic: default the session's model; openai: required)")
}

// summarizer returns the summarizer the flags name, made by one of makers; nil for the
// extractive one. A model summarizer whose key is missing from the environment is an error
// that says which variable to set.
func (f *summarizerFlags) summarizer(makers map[string]NewSummarizer) (summarize.Summarizer, error) {
	switch {
	case f.name == "extractive":
		if f.model != "" {
			return nil, UsageError{"--summary-model needs --summarizer anthropic or openai: the extractive summarizer asks no model"}
		}
		return nil, nil
	case !slices.Contains(summarizerNames, f.name):
		return nil, UsageError{fmt.Sprintf("--summarizer %q: want one of %s", f.name, strings.Join(summarizerNames, ", "))}
	case makers[f.name] == nil:
		return nil, needsFull{"--summarizer " + f.name}
	}
	return makers[f.name](f.model)
}
