package main

import (
	"fmt"

	"github.com/agentctx/agentctx/anthropic"
	agentctxopenai "github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/provider"
)

// anthropicBody is the Anthropic SDK's parameters for req, and the anthropic-beta header
// values the request needs.
func anthropicBody(req provider.Request) (any, []string, error) {
	params, err := anthropic.Params(req, anthropic.Options{})
	notes := make([]string, len(req.Betas))
	for i, b := range req.Betas {
		notes[i] = "the request needs the header anthropic-beta: " + b
	}
	return params, notes, err
}

// openAIChatBody is the OpenAI SDK's Chat Completions parameters for req, and what they
// leave out.
func openAIChatBody(req provider.Request) (any, []string, error) {
	params, drops, err := agentctxopenai.ChatParams(req, agentctxopenai.Options{})
	return params, dropNotes(drops), err
}

// openAIResponsesBody is the OpenAI SDK's Responses parameters for req, and what they leave
// out.
func openAIResponsesBody(req provider.Request) (any, []string, error) {
	params, drops, err := agentctxopenai.ResponsesParams(req, agentctxopenai.Options{})
	return params, dropNotes(drops), err
}

// dropNotes says where each part an OpenAI body leaves out was, and why.
func dropNotes(drops []agentctxopenai.Drop) []string {
	notes := make([]string, len(drops))
	for i, d := range drops {
		notes[i] = fmt.Sprintf("%s: dropped %s: %s", d.Path, d.Kind, d.Reason)
	}
	return notes
}
