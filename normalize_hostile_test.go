package agentctx

import (
	"fmt"
	"testing"
)

// hostileUsers returns a transcript of n consecutive user prompt records and one answer.
func hostileUsers(n int) []Record {
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
func hostileParallel(n int) []Record {
	k := newTK()
	k.user("go")
	uses := make([]Block, n)
	for i := range uses {
		uses[i] = toolUse(fmt.Sprintf("t%d", i), "Read")
	}
	k.assistant(uses...)
	holders := k.recs[1:]
	for i := range n {
		r := k.next(TypeUser)
		r.ParentUUID = holders[i].UUID
		r.Message = &Message{Role: RoleUser, Content: []Block{result(fmt.Sprintf("t%d", i), "ok")}}
		k.add(r)
	}
	k.assistant(text("done"))
	return k.recs
}

// hostileStreamed returns one response of n tool calls whose results were written while it
// streamed: tool_use record, its result, the next tool_use record (same message.id), …
func hostileStreamed(n int) []Record {
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
		gen  func(int) []Record
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
