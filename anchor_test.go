package agentctx

import (
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func anchorUser(uuid string, blocks ...transcript.Block) *transcript.Record {
	return &transcript.Record{Type: transcript.TypeUser, UUID: uuid, Message: &transcript.Message{Role: transcript.RoleUser, Content: blocks}}
}

func anchorAsst(uuid, msgID string, u *transcript.Usage, b transcript.Block) *transcript.Record {
	return &transcript.Record{Type: transcript.TypeAssistant, UUID: uuid, Message: &transcript.Message{ID: msgID, Type: "message",
		Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5-20250929", Content: []transcript.Block{b}, Usage: u}}
}

func usage(in, created, read, out int) *transcript.Usage {
	return &transcript.Usage{InputTokens: in, CacheCreationInputTokens: created, CacheReadInputTokens: read, OutputTokens: out}
}

func TestAnchorTotals(t *testing.T) {
	c := NewCounter(byteCounter)
	// Sizes with byteCounter: a user text record is len(text)+messageOverheadTokens.
	u1 := anchorUser("u1", &transcript.Text{Text: "first question"})
	// Response msg_1, split into three records; output_tokens is a running count; the tool
	// result of t1 was written between the response's records.
	a1 := anchorAsst("a1", "msg_1", usage(100, 10, 50, 5), &transcript.Thinking{Thinking: "hmm"})
	a2 := anchorAsst("a2", "msg_1", usage(100, 10, 50, 20), &transcript.ToolUse{ID: "t1", Name: "Read", Input: json.RawMessage(`{}`)})
	r1 := anchorUser("r1", &transcript.ToolResult{ToolUseID: "t1", Content: []transcript.Block{&transcript.Text{Text: "file body"}}})
	a3 := anchorAsst("a3", "msg_1", usage(100, 10, 50, 40), &transcript.ToolUse{ID: "t2", Name: "Bash", Input: json.RawMessage(`{}`)})
	r2 := anchorUser("r2", &transcript.ToolResult{ToolUseID: "t2", Content: []transcript.Block{&transcript.Text{Text: "ok"}}})
	progress := &transcript.Record{Type: transcript.TypeProgress, UUID: "p1", Data: json.RawMessage(`{"type":"hook_progress"}`)}
	sys := &transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeTurnDuration, UUID: "s1", Content: json.RawMessage(`"12s"`)}
	u2 := anchorUser("u2", &transcript.Text{Text: "next"})
	apiErr := anchorAsst("e1", "", usage(1, 0, 0, 1), &transcript.Text{Text: "API Error: overloaded"})
	apiErr.IsAPIErrorMessage = true
	synthetic := anchorAsst("e2", "msg_x", usage(1, 0, 0, 1), &transcript.Text{Text: "No response requested."})
	synthetic.Message.Model = transcript.SyntheticModel
	noUsage := anchorAsst("n1", "msg_n", nil, &transcript.Text{Text: "no usage"})
	zeroUsage := anchorAsst("z1", "msg_z", usage(0, 0, 0, 0), &transcript.Text{Text: "zero usage"})
	a4 := anchorAsst("a4", "", usage(300, 0, 0, 7), &transcript.Text{Text: "no id"})

	n := func(rs ...*transcript.Record) int {
		s := 0
		for _, r := range rs {
			s += c.Record(r)
		}
		return s
	}
	split := []*transcript.Record{u1, a1, a2, r1, a3, r2, progress, sys, u2}
	for _, tt := range []struct {
		name   string
		chain  []*transcript.Record
		anchor string
		usage  int // AnchorUsage.Total()
		after  int
	}{
		{"empty", nil, "", 0, 0},
		{"no assistant", []*transcript.Record{u1, progress, u2}, "", 0, 0},
		{"split response", split, "a3", 100 + 10 + 50 + 40, n(r1, r2, u2)},
		{"anchor last", []*transcript.Record{u1, a1, a2, a3}, "a3", 200, 0},
		{"synthetic records are not anchors", append(split[:len(split):len(split)], apiErr, synthetic),
			"a3", 200, n(r1, r2, u2, apiErr, synthetic)},
		{"no or zero usage is not an anchor", []*transcript.Record{u1, a1, a2, a3, r2, noUsage, zeroUsage}, "a3", 200, n(r2, noUsage, zeroUsage)},
		{"response without id", []*transcript.Record{u1, a1, a2, a3, r2, u2, a4, u1}, "a4", 307, n(u1)},
		{"only synthetic", []*transcript.Record{u1, apiErr, u2}, "", 0, 0},
		{"nil records", []*transcript.Record{nil, u1, a3, nil, u2}, "a3", 200, n(u2)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Totals(tt.chain)
			assert.Equal(t, n(tt.chain...), got.Counted)
			assert.Equal(t, tt.anchor, got.AnchorUUID)
			if tt.anchor == "" {
				assert.Nil(t, got.AnchorUsage)
				assert.Zero(t, got.AfterAnchor)
				assert.Equal(t, got.Counted, got.Anchored)
				return
			}
			require.NotNil(t, got.AnchorUsage)
			assert.Equal(t, tt.usage, got.AnchorUsage.Total())
			assert.Equal(t, tt.after, got.AfterAnchor)
			assert.Equal(t, tt.usage+tt.after, got.Anchored)
		})
	}
}

// TestAnchorTotalsCorpus runs Totals over the active chain of every corpus session. It also logs
// a calibration figure: between two consecutive responses the provider-reported prompt grows by
// the tokens of the records in between (the previous response and the tool results and prompts
// after it); the ratio of counted (cl100k) to reported growth measures how far the counter is
// from Claude's tokenizer on real traffic.
func TestAnchorTotalsCorpus(t *testing.T) {
	c := NewCounter(nil)
	var counted, reported int
	for _, name := range corpusFiles(t) {
		tr, err := transcript.ReadFile(name, transcript.ReadOptions{Strict: true})
		require.NoError(t, err)
		recs := tr.Records
		chain, err := transcript.BuildChain(recs, transcript.ChainOptions{})
		require.NoError(t, err, name)
		tot := c.Totals(chain.Records)
		if tot.AnchorUsage != nil {
			assert.Equal(t, tot.AnchorUsage.Total()+tot.AfterAnchor, tot.Anchored, name)
		} else {
			assert.Equal(t, tot.Counted, tot.Anchored, name)
		}

		// Responses in chain order: index of the first record and the final usage.
		type response struct {
			first int
			usage *transcript.Usage
		}
		var resps []response
		byID := map[string]int{}
		for i, r := range chain.Records {
			if !isAnchor(r) || r.Message.ID == "" {
				continue
			}
			if k, ok := byID[r.Message.ID]; ok {
				resps[k].usage = r.Message.Usage
				continue
			}
			byID[r.Message.ID] = len(resps)
			resps = append(resps, response{i, r.Message.Usage})
		}
		for k := 1; k < len(resps); k++ {
			growth := resps[k].usage.ContextTokens() - resps[k-1].usage.ContextTokens()
			if growth <= 0 || growth > 50_000 {
				continue // a compaction or a cache anomaly, not growth
			}
			reported += growth
			for _, r := range chain.Records[resps[k-1].first:resps[k].first] {
				counted += c.Record(r)
			}
		}
	}
	require.Positive(t, reported)
	ratio := float64(counted) / float64(reported)
	t.Logf("prompt growth between responses: counted %d (cl100k), reported %d: ratio %.3f", counted, reported, ratio)
	assert.InDelta(t, 0.8, ratio, 0.3, "cl100k is a proxy for Claude's tokenizer, not a different unit")
}
