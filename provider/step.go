package provider

import (
	"bytes"

	"github.com/agentctx/agentctx/transcript"
)

// Position is a block of a request's messages: Messages[Message].Content[Block].
type Position struct {
	Message, Block int
}

// Breakpoint is a cache marker on a block of a request's messages.
type Breakpoint struct {
	Position
	// CacheControl is the block's marker (its type and TTL).
	CacheControl *transcript.CacheControl
}

// CacheBreakpoints returns the message blocks that carry a cache_control marker, in order:
// where a host that builds its own request from a Pipeline's (in its own types, for its own
// client) puts its cache breakpoints. A request a Pipeline built holds one (the cache stage's)
// unless a caller's blocks carry their own. Markers on the system prompt and the tools are on
// Request.System and Request.Tools.
func (r Request) CacheBreakpoints() []Breakpoint {
	var out []Breakpoint
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if cc := transcript.CacheControlOf(b); cc != nil {
				out = append(out, Breakpoint{Position{i, j}, cc})
			}
		}
	}
	return out
}

// CacheEdits returns the positions of the request's cache_edits blocks (the cached
// microcompact's deletions), which a host that builds its own request sends as they are, or
// not at all on a provider without cache editing (the request is valid either way: the
// deleted results are then sent in full).
func (r Request) CacheEdits() []Position {
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

// Stubs returns the names of the request's tools whose definition is a stub ([StubTool]):
// the tools the history calls that the caller did not offer, which normalize declares so that
// the provider accepts the calls — and any stub the caller declared itself (as the simulator
// does). A host that builds its own request adds these definitions to its own tools.
func (r Request) Stubs() []string {
	var names []string
	for _, t := range r.Tools {
		if bytes.Equal(t.Definition, StubTool(t.Name).Definition) {
			names = append(names, t.Name)
		}
	}
	return names
}
