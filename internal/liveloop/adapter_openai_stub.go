//go:build !liveloop_openai

package liveloop

// newOpenAIAdapter is the openai adapter of a build without the liveloop_openai tag: none.
func newOpenAIAdapter(string) (Adapter, error) { return nil, ErrOpenAIUnavailable }
