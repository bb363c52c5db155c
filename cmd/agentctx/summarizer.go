package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	agentctxopenai "github.com/agentctx/agentctx/openai"
	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	openaisdk "github.com/openai/openai-go/v3"
)

// summarizerNames are the values of --summarizer.
var summarizerNames = []string{"extractive", "anthropic", "openai"}

// summarizerFlags are the flags that pick a compaction's summarizer.
type summarizerFlags struct {
	name  string
	model string
}

func (f *summarizerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "summarizer", "extractive", "the `name` of the summarizer that writes a compaction's summary: "+
		"extractive (no model, no network), anthropic (the Messages API: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL "+
		"from the environment, as the SDK reads them) or openai (Chat Completions on any OpenAI-compatible server: "+
		"OPENAI_API_KEY and OPENAI_BASE_URL)")
	fs.StringVar(&f.model, "summary-model", "", "the `model` the summarizer asks (anthropic: default the session's model; openai: required)")
}

// summarizer returns the summarizer the flags name; nil for the extractive one. A model
// summarizer whose key is missing from the environment is an error that says which variable
// to set.
func (f *summarizerFlags) summarizer() (agentctx.Summarizer, error) {
	switch f.name {
	case "extractive":
		if f.model != "" {
			return nil, usageError{"--summary-model needs --summarizer anthropic or openai: the extractive summarizer asks no model"}
		}
		return nil, nil
	case "anthropic":
		if os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("ANTHROPIC_AUTH_TOKEN") == "" {
			return nil, fmt.Errorf("--summarizer anthropic: ANTHROPIC_API_KEY is not set (nor ANTHROPIC_AUTH_TOKEN): set it to an Anthropic API key, and ANTHROPIC_BASE_URL for another endpoint")
		}
		c := anthropicsdk.NewClient()
		return anthropic.Summarizer{Client: anthropic.NewClient(&c), Model: f.model}, nil
	case "openai":
		if os.Getenv("OPENAI_API_KEY") == "" {
			return nil, fmt.Errorf("--summarizer openai: OPENAI_API_KEY is not set: set it to the server's key (any value for a local server that checks none), and OPENAI_BASE_URL for a server other than OpenAI's")
		}
		if f.model == "" {
			return nil, usageError{"--summarizer openai needs --summary-model: the server's model, e.g. gpt-5-mini or qwen3:8b"}
		}
		c := openaisdk.NewClient()
		return agentctxopenai.Summarizer{Client: &c, Options: agentctxopenai.Options{Model: f.model}}, nil
	}
	return nil, usageError{fmt.Sprintf("--summarizer %q: want one of %s", f.name, strings.Join(summarizerNames, ", "))}
}
