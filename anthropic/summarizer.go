package anthropic

import (
	"context"
	"strings"

	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"
)

// Summarizer is an [summarize.Summarizer] that sends the library's summary request
// ([summarize.Request.Request]: the conversation's own system prompt, tools and
// messages with one cache marker at the end of the shared prefix, so that it reads the
// conversation's prompt cache) and returns the text of the answer with its usage. A prompt
// the provider refuses as too long gives an [*Error] holding an
// [*provider.PromptTooLongError] with the provider's figures, so that the pipeline leaves out
// the oldest rounds and asks again. It is safe for concurrent use.
type Summarizer struct {
	// Client sends the request. It must be set.
	Client *Client
	// Model, when set, replaces the request's model (a cheaper model for summaries; the
	// cache is per model, so the summary then reads none of the conversation's).
	Model string
	// Options are the summary turn's options (see [Options]); Stream and OnEvent apply too.
	Options Options
}

// Summarize sends req.Request and returns the text blocks of the answer, joined.
func (s Summarizer) Summarize(ctx context.Context, req summarize.Request) (summarize.Summary, error) {
	r := req.Request
	if s.Model != "" {
		r.Model = s.Model
	}
	m, err := s.Client.Send(ctx, r, s.Options)
	if err != nil {
		return summarize.Summary{}, err
	}
	var b strings.Builder
	for _, blk := range m.Content {
		if t, ok := blk.(*transcript.Text); ok {
			b.WriteString(t.Text)
		}
	}
	by := m.Model
	if by == "" {
		by = r.Model
	}
	return summarize.Summary{Text: b.String(), Usage: m.Usage, By: by}, nil
}
