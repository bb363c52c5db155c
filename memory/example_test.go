package memory_test

import (
	"context"
	"fmt"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/memory"
	"github.com/agentctx/agentctx/transcript"
)

// An Extractor set as the pipeline's session memory: after a turn, Due says whether to
// extract, Extract writes the record to append, and the next compaction uses it.
func Example() {
	ex, err := memory.New(memory.Config{FirstTokens: 10}) // a low gate for the example
	if err != nil {
		panic(err)
	}
	cfg := agentctx.Config{ContextWindow: 50_000}
	cfg.Compact.Memory = ex
	p, err := agentctx.New(cfg)
	if err != nil {
		panic(err)
	}
	records := []transcript.Record{
		{Type: transcript.TypeUser, UUID: "u1", SessionID: "s1", Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: "Rename the config loader to LoadConfig and keep the old name as an alias."}}}},
		{Type: transcript.TypeAssistant, UUID: "a1", ParentUUID: "u1", SessionID: "s1", Message: &transcript.Message{Role: transcript.RoleAssistant,
			Content: []transcript.Block{&transcript.Text{Text: "Renamed; the alias stays until the next major version."}}}},
		{Type: transcript.TypeUser, UUID: "u2", ParentUUID: "a1", SessionID: "s1", Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true,
			Content: []transcript.Block{&transcript.Text{Text: "Now update the docs."}}}},
	}
	in := agentctx.Input{Records: records}
	res, err := p.Prepare(context.Background(), in)
	if err != nil {
		panic(err)
	}
	d := ex.Due(records, res.Report.InputTokens)
	fmt.Println("due:", d.Due)
	rec, err := ex.Extract(context.Background(), p, in, d.Tokens)
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.Subtype, "through", rec.SessionMemory.Through, "by", rec.SessionMemory.By)
	m, err := ex.SessionMemory(context.Background(), agentctx.MemoryRequest{SessionID: "s1", Records: append(records, rec)})
	if err != nil {
		panic(err)
	}
	fmt.Println("compaction gets it:", m.Through == "u2" && m.Summary != "")
	// Output:
	// due: true
	// agentctx_session_memory through u2 by extractive
	// compaction gets it: true
}
