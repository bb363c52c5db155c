package agentctx

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seqMessages is n request messages of distinct texts, a tool call in every third.
func seqMessages(n int) []provider.Message {
	msgs := make([]provider.Message, n)
	for i := range msgs {
		role := transcript.RoleUser
		if i%2 == 1 {
			role = transcript.RoleAssistant
		}
		content := []transcript.Block{&transcript.Text{Text: fmt.Sprintf("message %d %s", i, strings.Repeat("x", i%7))}}
		if i%3 == 0 {
			content = append(content, &transcript.ToolUse{ID: fmt.Sprint(i), Name: "Bash", Input: fmt.Appendf(nil, `{"n":%d}`, i)})
		}
		msgs[i] = provider.Message{Role: role, Content: content}
	}
	return msgs
}

// requestByBlocks counts a request without any memo above the texts: Counter.Block per block.
func requestByBlocks(c *Counter, r *provider.Request) int {
	n := 0
	for _, m := range r.Messages {
		n += messageOverheadTokens + c.Blocks(m.Content)
	}
	return n
}

// TestCounterSequence counts the same conversation's request as it changes from turn to turn
// — a new message, a message replaced in the middle, one rewritten in place, a shorter
// request, another conversation — and checks each count against one made block by block, and
// that a steady turn counts only its new text.
func TestCounterSequence(t *testing.T) {
	calls := 0
	c := NewCounter(TokenCounterFunc(func(s string) int { calls++; return len(s) }))
	ref := NewCounter(byteCounter)
	msgs := seqMessages(40)
	check := func(name string, msgs []provider.Message) {
		t.Helper()
		r := &provider.Request{Messages: msgs}
		assert.Equal(t, requestByBlocks(ref, r), c.Request(r), name)
	}
	check("first turn", msgs[:30])
	calls = 0
	check("one more message", msgs[:31])
	assert.Equal(t, 2, calls, "a steady turn counts its new message only: its text and its tool input")

	changed := append([]provider.Message(nil), msgs[:31]...)
	changed[10] = provider.Message{Role: transcript.RoleUser, Content: []transcript.Block{&transcript.Text{Text: "a message replaced in the middle"}}}
	check("a message replaced", changed)
	changed[10].Content[0].(*transcript.Text).Text = "its text reassigned"
	check("a text reassigned", changed)
	changed[12].Content = append([]transcript.Block{&transcript.Text{Text: "a block put first"}}, changed[12].Content...)
	check("a block inserted", changed)
	check("shorter", msgs[:5])
	check("longer again", msgs)
	check("another conversation", seqMessages(12)[3:])
	check("empty", nil)

	// A sequence that moved by one message counts right through the message memo.
	calls = 0
	check("shifted", msgs[1:])
	assert.Zero(t, calls, "every message is in the message memo")
}

// TestCounterSequenceConcurrent counts turns of one conversation from many goroutines at
// once, each turn a different length, as forks of a conversation do.
func TestCounterSequenceConcurrent(t *testing.T) {
	c := NewCounter(byteCounter)
	ref := NewCounter(byteCounter)
	msgs := seqMessages(200)
	want := make([]int, len(msgs)+1)
	for n := range want {
		want[n] = requestByBlocks(ref, &provider.Request{Messages: msgs[:n]})
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 300 {
				n := (i*7 + g*31) % len(want)
				require.Equal(t, want[n], c.Request(&provider.Request{Messages: msgs[:n]}), "%d messages", n)
			}
		})
	}
	wg.Wait()
}

// TestSizeSteadyAllocs sizes a warm turn (the count, the pressure figure and its calibration,
// max_tokens) again and checks that it allocates a few times, whatever the history's length.
func TestSizeSteadyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops what sync.Pool holds at random: the scratch is allocated again")
	}
	allocs := map[int]float64{}
	for _, turns := range []int{150, 600} {
		k := newTK()
		for i := range turns {
			k.user(fmt.Sprintf("question %d: %s", i, strings.Repeat("why ", i%9)))
			k.assistant(text(fmt.Sprintf("let me look %d", i)), &transcript.ToolUse{ID: fmt.Sprint("t", i), Name: "Bash", Input: fmt.Appendf(nil, `{"command":"ls %d"}`, i)})
			k.results(&transcript.ToolResult{ToolUseID: fmt.Sprint("t", i), Content: []transcript.Block{text(fmt.Sprintf("file%d.go", i))}})
			for j := len(k.recs) - 3; j < len(k.recs)-1; j++ {
				k.recs[j].Message.Usage = &transcript.Usage{InputTokens: 100 + 160*i, OutputTokens: 20}
			}
			k.assistant(text(fmt.Sprintf("the answer is %d", i)))
			k.recs[len(k.recs)-1].Message.Usage = &transcript.Usage{InputTokens: 180 + 160*i, OutputTokens: 30}
		}
		p, err := New(Config{ContextWindow: 1_000_000, Tokens: byteCounter})
		require.NoError(t, err)
		tr, err := p.build(t.Context(), &Input{Records: k.recs})
		require.NoError(t, err)
		report := *tr.report
		report.Stages = nil
		allocs[turns] = testing.AllocsPerRun(20, func() { p.size(tr) })
		again := *tr.report
		again.Stages = nil
		require.Equal(t, report, again, "sizing again gives the same figures")
		require.Contains(t, tr.report.Pressure.RatioSource, "fitted", "the fit runs")
	}
	assert.Equal(t, allocs[150], allocs[600], "allocations do not follow the history: %v", allocs)
	assert.LessOrEqual(t, allocs[600], 8.0, "allocations per sizing")
}
