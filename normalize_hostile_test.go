package agentctx

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileUsers returns a transcript of n consecutive user prompt records and one answer.
func hostileUsers(n int) []transcript.Record {
	k := newTK()
	for i := range n {
		k.user(fmt.Sprintf("prompt %d", i))
	}
	k.assistant(text("answer"))
	return k.recs
}

// hostileParallel returns one response of n tool calls written one record each (sharing
// message.id), then the n results, each parented on its tool_use record, as Claude Code
// writes parallel calls.
func hostileParallel(n int) []transcript.Record {
	k := newTK()
	k.user("go")
	uses := make([]transcript.Block, n)
	for i := range uses {
		uses[i] = toolUse(fmt.Sprintf("t%d", i), "Read")
	}
	k.assistant(uses...)
	holders := k.recs[1:]
	for i := range n {
		r := k.next(transcript.TypeUser)
		r.ParentUUID = holders[i].UUID
		r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{result(fmt.Sprintf("t%d", i), "ok")}}
		k.add(r)
	}
	k.assistant(text("done"))
	return k.recs
}

// hostileStreamed returns one response of n tool calls whose results were written while it
// streamed: tool_use record, its result, the next tool_use record (same message.id), …
func hostileStreamed(n int) []transcript.Record {
	k := newTK()
	k.user("go")
	k.assistant(toolUse("t0", "Read"))
	k.results(result("t0", "ok"))
	for i := 1; i < n; i++ {
		normMore(k, toolUse(fmt.Sprintf("t%d", i), "Read"))
		k.results(result(fmt.Sprintf("t%d", i), "ok"))
	}
	k.assistant(text("done"))
	return k.recs
}

func BenchmarkNormalizeHostile(b *testing.B) {
	for _, shape := range []struct {
		name string
		gen  func(int) []transcript.Record
	}{{"users", hostileUsers}, {"parallel", hostileParallel}, {"streamed", hostileStreamed}} {
		for _, n := range []int{5000, 40000} {
			recs := shape.gen(n)
			b.Run(fmt.Sprintf("%s/n=%d", shape.name, n), func(b *testing.B) {
				p := newTestPipeline(b, Config{}, normNow)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Prepare(b.Context(), Input{Records: recs}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestNormalizeHostileLinear normalizes each hostile transcript at n and at 8n records and
// requires the bytes normalize allocates to grow at most 16-fold: linear work grows about
// 8-fold, the quadratic merge it replaced 64-fold. Allocated bytes, unlike time, do not
// depend on the machine (BenchmarkNormalizeHostile measures time). The request must still
// hold every block, merged.
func TestNormalizeHostileLinear(t *testing.T) {
	const n = 1000
	for _, shape := range []struct {
		name string
		gen  func(int) []transcript.Record
		want func(n int) []int // blocks per request message
	}{
		{"users", hostileUsers, func(n int) []int { return []int{n, 1, 1} }},
		{"parallel", hostileParallel, func(n int) []int { return []int{1, n, n, 1, 1} }},
		{"streamed", hostileStreamed, func(n int) []int { return []int{1, n, n, 1, 1} }},
	} {
		t.Run(shape.name, func(t *testing.T) {
			small := normalizeAlloc(t, shape.gen(n), shape.want(n))
			large := normalizeAlloc(t, shape.gen(8*n), shape.want(8*n))
			assert.LessOrEqual(t, large, 16*small, "bytes allocated by normalize: %d at n=%d, %d at n=%d", small, n, large, 8*n)
		})
	}
}

// normalizeAlloc runs the normalize stage alone over the chain of recs, checks the number of
// blocks of each request message and returns the bytes normalize allocated.
func normalizeAlloc(t *testing.T, recs []transcript.Record, want []int) uint64 {
	t.Helper()
	p := newTestPipeline(t, Config{}, normNow)
	chain, err := transcript.BuildChain(recs, transcript.ChainOptions{})
	require.NoError(t, err)
	tn := p.newTurn(t.Context(), &Input{Records: recs}, chain)
	tn.report.stage("normalize")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, p.stages.normalize.run(tn))
	runtime.ReadMemStats(&after)
	got := make([]int, len(tn.req.Messages))
	for i, m := range tn.req.Messages {
		got[i] = len(m.Content)
	}
	require.Equal(t, want, got, "blocks per request message")
	return after.TotalAlloc - before.TotalAlloc
}
