package liveloop

import (
	"encoding/json"
	"strings"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

// The kinds of fact a run with [Scenario.Facts] plants.
const (
	FactConstraint = "constraint" // a rule the user sets in the first prompt
	FactDecision   = "decision"   // what the user decides in the second prompt
	FactPath       = "path"       // a file the model writes
	FactError      = "error"      // a tool call that fails
	FactFix        = "fix"        // what the model says it did about the failure
	FactOpen       = "open item"  // what the model says it will do later
)

// FactKinds lists the kinds of planted fact, in the order a run plants them.
var FactKinds = []string{FactConstraint, FactDecision, FactPath, FactError, FactFix, FactOpen}

// plantedFact is one planted fact: the word that marks it (unlike anything else a run says)
// and the text that carries it.
type plantedFact struct {
	kind, marker, text string
}

// facts are the facts of a run with [Scenario.Facts], in the harness's own words.
var facts = []plantedFact{
	{FactConstraint, "quillmarsh", "One rule for all of this work: the files under gen/quillmarsh/ are written by the release job, so never edit them by hand."},
	{FactDecision, "tarnwick", "I have decided: the session state goes into the tarnwick store, not into process memory."},
	{FactPath, "brackenfold", "internal/brackenfold/store.go"},
	{FactError, "ostervane", "Exit code 1\npanic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nexample.com/app/internal/ostervane.(*Registry).Add(...)"},
	{FactFix, "ollanby", "The panic came from a registry map that was never made: I now make it in the ollanby constructor, and the tests pass again."},
	{FactOpen, "peldricott", "Still to do later: the peldricott exporter needs a test for an empty batch; I will come back to it once this works."},
}

// factOf returns the planted fact of kind.
func factOf(kind string) plantedFact {
	for _, f := range facts {
		if f.kind == kind {
			return f
		}
	}
	panic("liveloop: unreachable: no fact of kind " + kind)
}

// The model's answers that plant facts, by their number: the file written, the command that
// fails, the fix said right after it, the open item. plantedBy is the answer after which every
// fact the model plants is in the conversation.
const (
	plantPathAt  = 2
	plantErrorAt = 4
	plantFixAt   = 5
	plantOpenAt  = 7
	plantedBy    = plantOpenAt
)

// failingCommand is the command of the tool call whose result is the planted error.
var failingCommand = "go test ./internal/" + factOf(FactError).marker + "/..."

// plantedAnswer returns the answer that plants a fact at the model's answer n (counting from
// 1), with ordinary the answer the script would give otherwise and newID the source of tool
// call ids, and whether n plants one.
func plantedAnswer(n int, ordinary answer, newID func() string) (answer, bool) {
	input := func(v map[string]string) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			panic("liveloop: unreachable: " + err.Error())
		}
		return b
	}
	switch n {
	case plantPathAt:
		path := factOf(FactPath).text
		return answer{text: "I will put the store in a file of its own.", stop: "tool_use", calls: []call{{id: newID(), name: "Write",
			input: input(map[string]string{"file_path": path, "content": "package " + factOf(FactPath).marker + "\n\n// Store keeps the session state.\ntype Store struct{}\n"})}}}, true
	case plantErrorAt:
		return answer{text: "Let me run that package's tests.", stop: "tool_use", calls: []call{{id: newID(), name: "Bash",
			input: input(map[string]string{"command": failingCommand})}}}, true
	case plantFixAt, plantOpenAt:
		a := ordinary
		if a.stop != "tool_use" {
			a = answer{stop: "tool_use", calls: []call{{id: newID(), name: "Bash", input: input(map[string]string{"command": "go test ./..."})}}}
		}
		kind := FactFix
		if n == plantOpenAt {
			kind = FactOpen
		}
		a.text = factOf(kind).text
		return a, true
	}
	return answer{}, false
}

// plantedResult returns the planted error as the result of tu when tu runs the failing command,
// else nil.
func plantedResult(tu *transcript.ToolUse) *transcript.ToolResult {
	if tu.Name != "Bash" {
		return nil
	}
	var in map[string]string
	if json.Unmarshal(tu.Input, &in) != nil || in["command"] != failingCommand {
		return nil
	}
	return transcript.ErrorResult(tu.ID, factOf(FactError).text)
}

// plantedPrompt returns the user's prompt number n (counting from 1) with the fact it plants,
// if any, after it.
func plantedPrompt(n int, prompt string) string {
	switch n {
	case 1:
		return prompt + "\n\n" + factOf(FactConstraint).text
	case 2:
		return prompt + "\n\n" + factOf(FactDecision).text
	}
	return prompt
}

// folded reports whether the collapse producer folded a span on the turn rep reports.
func folded(rep *agentctx.Report) bool {
	for _, st := range rep.Stages {
		for _, a := range st.Actions {
			if a.Kind == agentctx.ActionFolded {
				return true
			}
		}
	}
	return false
}

// retain checks, once every fact is planted, the request of a turn that compacted or folded
// for each planted fact's marker, and tallies what it finds.
func (l *loop) retain(res *agentctx.Result) {
	if !l.sc.Facts || l.prompts < 2 || l.m.Turns < plantedBy {
		return
	}
	c := res.Report.Compaction
	if (c == nil || c.Outcome != agentctx.CompactCompacted) && !folded(&res.Report) {
		return
	}
	body, err := res.Request.MarshalJSON()
	if err != nil {
		l.invalid(err)
		return
	}
	l.m.FactChecks++
	for _, f := range facts {
		switch {
		case strings.Contains(string(body), f.marker):
			l.m.FactsKept[f.kind]++
		case l.m.FactLost[f.kind] == 0:
			l.m.FactLost[f.kind] = l.m.Turns + 1
		}
	}
}
