package main

import (
	"fmt"
	"os"

	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/cmd/internal/cli"
	agentctxopenai "github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/summarize"
	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	openaisdk "github.com/openai/openai-go/v3"
)

// anthropicSummarizer asks model (default: the session's) on the Messages API, with the
// key and base URL of the environment, as the SDK reads them.
func anthropicSummarizer(model string) (summarize.Summarizer, error) {
	if os.Getenv("ANTHROPIC_API_KEY") == "" && os.Getenv("ANTHROPIC_AUTH_TOKEN") == "" {
		return nil, fmt.Errorf("--summarizer anthropic: ANTHROPIC_API_KEY is not set (nor ANTHROPIC_AUTH_TOKEN): set it to an Anthropic API key, and ANTHROPIC_BASE_URL for another endpoint")
	}
	c := anthropicsdk.NewClient()
	return anthropic.Summarizer{Client: anthropic.NewClient(&c), Model: model}, nil
}

// openAISummarizer asks model over Chat Completions on any OpenAI-compatible server, with
// the key and base URL of the environment.
func openAISummarizer(model string) (summarize.Summarizer, error) {
	if os.Getenv("OPENAI_API_KEY") == "" {
		return nil, fmt.Errorf("--summarizer openai: OPENAI_API_KEY is not set: set it to the server's key (any value for a local server that checks none), and OPENAI_BASE_URL for a server other than OpenAI's")
	}
	if model == "" {
		return nil, cli.UsageError{Msg: "--summarizer openai needs --summary-model: the server's model, e.g. gpt-5-mini or qwen3:8b"}
	}
	c := openaisdk.NewClient()
	return agentctxopenai.Summarizer{Client: &c, Options: agentctxopenai.Options{Model: model}}, nil
}
