package provider

import (
	"bytes"

	"github.com/agentctx/agentctx/transcript"
)

// Position is a block of a request's messages: Messages[Message].Content[Block].
type Position struct {
	Message, Block int
}

// CacheBreakpoints returns the positions of the message blocks that carry a cache_control
// marker, in order, with their markers: where a host that builds its own request from a
// Pipeline's (in its own types, for its own client) puts its cache breakpoints. A request a
// Pipeline built holds one (the cache stage's) unless a caller's blocks carry their own.
// Markers on the system prompt and the tools are on Request.System and Request.Tools.
func (r *Request) CacheBreakpoints() ([]Position, []*transcript.CacheControl) {
	var at []Position
	var ccs []*transcript.CacheControl
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if cc := transcript.CacheControlOf(b); cc != nil {
				at, ccs = append(at, Position{i, j}), append(ccs, cc)
			}
		}
	}
	return at, ccs
}

// CacheEdits returns the positions of the request's cache_edits blocks (the cached
// microcompact's deletions), which a host that builds its own request sends as they are, or
// not at all on a provider without cache editing (the request is valid either way: the
// deleted results are then sent in full).
func (r *Request) CacheEdits() []Position {
	var at []Position
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if _, ok := b.(*transcript.CacheEdits); ok {
				at = append(at, Position{i, j})
			}
		}
	}
	return at
}

// Stubs returns the names of the tools of the request that are stubs ([StubTool]): tools the
// history calls and the caller did not offer, declared so that the provider accepts the calls.
// A host that builds its own request adds these definitions to its own tools.
func (r *Request) Stubs() []string {
	var names []string
	for _, t := range r.Tools {
		if bytes.Equal(t.Definition, StubTool(t.Name).Definition) {
			names = append(names, t.Name)
		}
	}
	return names
}
