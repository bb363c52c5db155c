package agentctx

// requestOverhead is the per-message framing the provider adds around each message, in tokens.
const requestOverhead = 3

// Request counts a request's input: system blocks, tool definitions and messages. The result
// is an estimate of what the provider will bill as input (it cannot know the provider's own
// tokenizer); it is what the report's figures and the max_tokens clamp use.
func (c *Counter) Request(r *Request) int {
	n := 0
	for _, b := range r.System {
		n += c.Block(b)
	}
	for _, t := range r.Tools {
		n += c.Text(string(t.Definition))
	}
	for _, m := range r.Messages {
		n += requestOverhead + c.Blocks(m.Content)
	}
	return n
}
