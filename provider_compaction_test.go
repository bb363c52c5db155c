package agentctx

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx/summarize"
	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compactionJSON is an Anthropic compaction block as an answer carries it.
const compactionJSON = `{"type":"compaction","content":"Summary: the parser is written; tests come next.","encrypted_content":"Eabc","signature":"c2ln"}`

// answer appends one assistant record holding blocks, with the usage and extra fields given.
func (k *tk) answer(u transcript.Usage, extra map[string]json.RawMessage, blocks ...transcript.Block) *transcript.Record {
	k.msgN++
	r := k.next(transcript.TypeAssistant)
	r.Message = &transcript.Message{ID: "msg_c" + r.UUID[len(r.UUID)-4:], Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-6",
		Content: blocks, Usage: &u, Extra: extra}
	return k.add(r)
}

func unknown(raw string) *transcript.UnknownBlock {
	b, err := transcript.UnmarshalBlock([]byte(raw))
	if err != nil {
		panic(err)
	}
	return b.(*transcript.UnknownBlock)
}

func TestProviderCompaction(t *testing.T) {
	calls := 0
	summarizer := summarize.Func(func(context.Context, summarize.Request) (summarize.Summary, error) {
		calls++
		return summarize.Summary{Text: "<summary>a client summary</summary>"}, nil
	})
	tests := []struct {
		name  string
		block string
		// wantPoint: the view starts at the compaction; otherwise it is a no-op, not sent.
		wantPoint bool
	}{
		{name: "summary", block: compactionJSON, wantPoint: true},
		{name: "null content", block: `{"type":"compaction","content":null,"encrypted_content":null}`},
		{name: "empty content", block: `{"type":"compaction","content":""}`},
		{name: "openai item", block: `{"type":"compaction","encrypted_content":"gAAAA"}`, wantPoint: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls = 0
			k := newTK()
			k.readTurns(3)
			k.user("Now add the tests.")
			// The answer that compacted: its usage measured the prompt before the compaction,
			// over the threshold.
			held := k.answer(transcript.Usage{InputTokens: 190_000, OutputTokens: 200}, nil, unknown(tc.block), text("Writing the tests now."))
			k.user("Go on.")
			p := newTestPipeline(t, Config{Validate: true, Compact: CompactConfig{Summarizer: summarizer}}, k.at(0))
			res, err := p.Prepare(context.Background(), Input{Records: k.recs})
			require.NoError(t, err)
			msgs := res.Request.Messages
			if !tc.wantPoint {
				assert.Empty(t, res.Report.ProviderCompaction)
				assert.Equal(t, transcript.RoleUser, msgs[0].Role)
				assert.NotContains(t, string(requestBytes(t, res.Request)), `"compaction"`)
				return
			}
			assert.Equal(t, held.UUID, res.Report.ProviderCompaction)
			require.Len(t, msgs, 2)
			assert.Equal(t, transcript.RoleAssistant, msgs[0].Role)
			got, err := transcript.MarshalBlock(msgs[0].Content[0])
			require.NoError(t, err)
			assert.Equal(t, tc.block, string(got), "the block goes back byte for byte")
			assert.Nil(t, res.Report.Compaction, "no client compaction over the provider's")
			assert.Zero(t, calls)
			assert.Equal(t, res.Report.InputTokens, res.Report.Pressure.Tokens, "counted from the compaction, not anchored on the usage before it")
			assert.Equal(t, LevelOK, res.Report.Pressure.Level)

			// A resume reads the same records and sends the same bytes.
			again, err := newTestPipeline(t, Config{Validate: true}, k.at(0)).Prepare(context.Background(), Input{Records: roundTrip(t, k.recs)})
			require.NoError(t, err)
			assert.Equal(t, string(requestBytes(t, res.Request)), string(requestBytes(t, again.Request)))
		})
	}
}

func TestProviderCompactionLatestWins(t *testing.T) {
	k := newTK()
	k.user("Start.")
	k.answer(transcript.Usage{InputTokens: 100, OutputTokens: 10}, nil, unknown(compactionJSON), text("First."))
	k.user("More.")
	second := `{"type":"compaction","content":"Second summary.","encrypted_content":"Edef"}`
	k.answer(transcript.Usage{InputTokens: 100, OutputTokens: 10}, nil, text("Before it."), unknown(second), text("Second."))
	k.user("Again.")
	res, err := newTestPipeline(t, Config{Validate: true}, k.at(0)).Prepare(context.Background(), Input{Records: k.recs})
	require.NoError(t, err)
	body := string(requestBytes(t, res.Request))
	assert.NotContains(t, body, "Summary: the parser")
	assert.NotContains(t, body, "Before it.", "blocks before the compaction in its own message are not sent")
	got, err := transcript.MarshalBlock(res.Request.Messages[0].Content[0])
	require.NoError(t, err)
	assert.Equal(t, second, string(got))
}

func TestProviderCompactionAppliedEdits(t *testing.T) {
	k := newTK()
	k.readTurns(4)
	edits := map[string]json.RawMessage{"context_management": json.RawMessage(`{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":3,"cleared_input_tokens":1500},{"type":"clear_thinking_20251015","cleared_thinking_turns":1,"cleared_input_tokens":200}]}`)}
	k.answer(transcript.Usage{InputTokens: 10, OutputTokens: 5}, edits, text("Done."))
	k.user("Next.")
	res, err := newTestPipeline(t, Config{}, k.at(0)).Prepare(context.Background(), Input{Records: k.recs})
	require.NoError(t, err)
	pr := res.Report.Pressure
	assert.Equal(t, 1700, pr.ServerCleared)
	assert.Equal(t, max(pr.Counted-1700, pr.Anchor+pr.Added-pr.Freed), pr.Tokens)
	assert.Contains(t, pr.Why, "context editing cleared 1700 tokens")
}

// transcriptUsage is an answer's usage with a prompt of n input tokens.
func transcriptUsage(n int) transcript.Usage {
	return transcript.Usage{InputTokens: n, OutputTokens: 100}
}

// A fork of a conversation the provider compacted starts at the same compaction: a branch
// from the answer that holds it (Input.Leaf on an earlier prompt's answer, then a new prompt)
// and a fire-and-forget fork (SkipCacheWrite) both send the block first, byte for byte, and
// nothing before it; the main conversation's request is unchanged by the branch's records.
func TestProviderCompactionFork(t *testing.T) {
	k := newTK()
	k.readTurns(3)
	k.user("Now add the tests.")
	held := k.answer(transcript.Usage{InputTokens: 190_000, OutputTokens: 200}, nil, unknown(compactionJSON), text("Writing the tests now."))
	main := k.user("Go on.")
	mainUUID := main.UUID
	p := newTestPipeline(t, Config{Validate: true}, k.at(0))
	before, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)

	fork, err := p.Prepare(t.Context(), Input{Records: k.recs, SkipCacheWrite: true})
	require.NoError(t, err)
	assert.Equal(t, held.UUID, fork.Report.ProviderCompaction)

	// A branch: another prompt after the same answer, written after the main one.
	branch := k.next(transcript.TypeUser)
	branch.ParentUUID = held.UUID
	branch.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("Instead, write the docs.")}}
	branch = k.add(branch)
	br, err := p.Prepare(t.Context(), Input{Records: k.recs, Leaf: branch.UUID})
	require.NoError(t, err)
	onMain, err := p.Prepare(t.Context(), Input{Records: k.recs, Leaf: mainUUID})
	require.NoError(t, err)

	for name, res := range map[string]Result{"fork": fork, "branch": br, "main": onMain} {
		msgs := res.Request.Messages
		require.NotEmpty(t, msgs, name)
		got, err := transcript.MarshalBlock(msgs[0].Content[0])
		require.NoError(t, err, name)
		assert.Equal(t, compactionJSON, string(got), "%s: the block first, byte for byte", name)
		assert.NotContains(t, string(requestBytes(t, res.Request)), "question 0", "%s: nothing before the block", name)
	}
	assert.Contains(t, string(requestBytes(t, br.Request)), "Instead, write the docs.")
	assert.Equal(t, string(requestBytes(t, before.Request)), string(requestBytes(t, onMain.Request)), "the main conversation is unchanged by the branch")
}
