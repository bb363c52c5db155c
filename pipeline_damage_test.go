package agentctx

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrepareDamagedTranscript damages one line in the middle of a session and checks that
// Prepare keeps the history before it and says what happened, in the Report and its text.
func TestPrepareDamagedTranscript(t *testing.T) {
	k := linearSession(15)
	n := len(k.recs)
	at := n / 2
	for _, isText := k.recs[at].Message.Content[0].(*transcript.Text); !isText || k.recs[at].Type != transcript.TypeAssistant || !k.recs[at+1].Message.StringContent; {
		at++
		_, isText = k.recs[at].Message.Content[0].(*transcript.Text)
	}
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, now)
	clean, err := p.Prepare(t.Context(), Input{Records: k.recs})
	require.NoError(t, err)
	cleanBody := string(requestBytes(t, clean.Request))

	tests := []struct {
		name  string
		opts  transcript.ReadOptions
		edit  func(string) string
		same  bool   // the request is the clean one; else the line is skipped and bridged over
		field string // the field reported dropped
	}{
		{name: "usage 1e400", edit: func(l string) string { return strings.Replace(l, `"input_tokens":10`, `"input_tokens":1e400`, 1) },
			same: true, field: "message.usage.input_tokens"},
		{name: "usage 12.5", edit: func(l string) string { return strings.Replace(l, `"output_tokens":5`, `"output_tokens":12.5`, 1) },
			same: true, field: "message.usage.output_tokens"},
		{name: "numeric timestamp", edit: func(l string) string {
			return strings.Replace(l, `"timestamp":"`, `"timestamp":1767323066,"was":"`, 1)
		}, same: true, field: "timestamp"},
		{name: "invalid JSON", edit: func(l string) string { return l[:len(l)-1] + ",}" }},
		{name: "torn", edit: func(l string) string { return l[:len(l)/3] }},
		{name: "over the line cap", opts: transcript.ReadOptions{MaxLineBytes: 2048},
			edit: func(l string) string {
				return strings.Replace(l, `"answer`, `"`+strings.Repeat("y", 4000)+` answer`, 1)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := readDamaged(t, k.recs, tt.opts, func(lines []string) []string {
				edited := tt.edit(lines[at])
				require.NotEqual(t, lines[at], edited)
				lines[at] = edited
				return lines
			})
			res, err := p.Prepare(t.Context(), Input{Records: tr.Records})
			require.NoError(t, err)
			rep := res.Report
			text := rep.String()
			require.Len(t, rep.Damage, 1, text)
			assert.Equal(t, at+1, rep.Damage[0].Line)
			assert.Contains(t, text, fmt.Sprintf("s.jsonl:%d: ", at+1))
			if tt.same {
				assert.Equal(t, tt.field, rep.Damage[0].Field)
				assert.Contains(t, text, "kept without it")
				assert.Empty(t, rep.ChainProblems)
				assert.Equal(t, cleanBody, string(requestBytes(t, res.Request)), "the record is in the request")
				return
			}
			assert.Contains(t, text, "(skipped)")
			require.Len(t, rep.ChainProblems, 1, text)
			cp := rep.ChainProblems[0]
			assert.Equal(t, transcript.ChainUnreadable, cp.Kind)
			assert.Equal(t, at+1, cp.Line)
			assert.Equal(t, at, cp.Cut)
			assert.Equal(t, k.recs[at-1].UUID, cp.Bridge)
			assert.Contains(t, text, "chain: 1 broken parent links")
			assert.Contains(t, text, fmt.Sprintf("without the bridge the chain would lose %d records", at))
			// Everything but the lost answer is sent: its neighbours, both user turns, merge.
			assert.Len(t, res.Request.Messages, len(clean.Request.Messages)-2)

			off := newTestPipeline(t, Config{Model: "claude-sonnet-4-5", NoBridge: true}, now)
			res, err = off.Prepare(t.Context(), Input{Records: tr.Records})
			require.NoError(t, err)
			require.Len(t, res.Report.ChainProblems, 1)
			assert.Empty(t, res.Report.ChainProblems[0].Bridge)
			assert.Equal(t, at, res.Report.ChainProblems[0].Cut)
			assert.Contains(t, res.Report.String(), fmt.Sprintf("the chain starts here; %d earlier records are cut off", at))
			assert.Less(t, len(res.Request.Messages), len(clean.Request.Messages)/2+2)
		})
	}
}

// TestPrepareReportsReplays checks the dedupe reaches the Report and its text.
func TestPrepareReportsReplays(t *testing.T) {
	k := newTK()
	k.user("q")
	a := k.assistant(text("answer"))
	k.add(new(again(a, "r-a", a.UUID)))
	k.user("next")
	p := newTestPipeline(t, Config{Model: "claude-sonnet-4-5"}, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	res, err := p.Prepare(t.Context(), Input{Records: roundTrip(t, k.recs)})
	require.NoError(t, err)
	require.Len(t, res.Report.Replays, 1)
	assert.Equal(t, 3, res.Report.Replays[0].Line)
	assert.Contains(t, res.Report.String(), "replays: 1 records left out as repeats")
	assert.Contains(t, res.Report.String(), "line 3: record r-a repeats 1 block(s) of response msg_0001")
	require.Len(t, res.Request.Messages, 3)
	assert.Len(t, res.Request.Messages[1].Content, 1, "the answer once")
}
