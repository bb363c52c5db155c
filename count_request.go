package agentctx

// Request counts a request's input: system blocks, tool definitions and messages (each with
// [MessageOverheadTokens] of framing). The result is an estimate of what the provider will
// bill as input (it cannot know the provider's own tokenizer); it is what the report's figures
// and the max_tokens clamp use.
func (c *Counter) Request(r *Request) int {
	n := 0
	for _, b := range r.System {
		n += c.Block(b)
	}
	for _, t := range r.Tools {
		n += c.textBytes(t.Definition)
	}
	for _, m := range r.Messages {
		n += MessageOverheadTokens + c.Blocks(m.Content)
	}
	return n
}
