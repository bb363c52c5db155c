package agentctx

import "github.com/agentctx/agentctx/provider"

// validateTurn runs [provider.Validate] on the request Prepare built, when [Config.Validate] is set,
// with what the pipeline knows: its window, the request's counted input and whether prefill
// is allowed. Input.Tools are the request's first tools, so a duplicate or schema-less
// definition the caller gave is reported at its own index, tools[i].
func (p *Pipeline) validateTurn(t *turn) error {
	if !p.cfg.Validate {
		return nil
	}
	err := provider.Validate(t.req, provider.ValidateOptions{
		AllowPrefill:  p.cfg.Normalize.AllowPrefill,
		ContextWindow: p.window,
		InputTokens:   t.report.InputTokens,
		MaxBodyBytes:  t.maxBody,

		ReasoningItems: p.cfg.Normalize.KeepReasoningItems,
	})
	if err != nil {
		return &StageError{Stage: "validate", Err: err}
	}
	return nil
}
