package liveloop

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
)

// answer is what the scripted model says to one request: text, tool calls, and why it
// stopped ("end_turn", "tool_use", "max_tokens", or "compaction" after a paused server-side
// compaction).
type answer struct {
	text  string
	calls []call
	stop  string
	// outputTokens is set when the answer was cut at max_tokens: the provider bills the cap.
	outputTokens int
	// compaction is the summary of a server-side compaction the answer opens with; "" when
	// it compacted nothing.
	compaction string
}

// call is one tool call of an answer.
type call struct {
	id, name string
	input    json.RawMessage
}

// model is the scripted model behind the fake servers: it answers the conversation's
// requests from a seeded script — tool calls drawn from the scenario's tools, 2–4 at once in
// a share of the answers, the end of a turn now and then — and writes summaries. It also
// holds the schedule of the provider's scripted refusals and cut answers. Safe for
// concurrent use.
type model struct {
	sc     *Scenario
	ws     *workspace
	prefix string // tool call ids: "toolu_" or "call_"

	mu       sync.Mutex
	r        *rand.Rand // main answers
	sr       *rand.Rand // summaries
	answered int        // main answers given
	ptlAt    []int      // answer counts from which one prompt-too-long refusal is due
	cutAt    []int      // answer counts at which an answer stops at max_tokens
	shotAt   []int      // answer counts at which the model takes a screenshot
}

func newModel(sc *Scenario, ws *workspace, prefix string) *model {
	m := &model{sc: sc, ws: ws, prefix: prefix,
		r: rand.New(rand.NewPCG(sc.Seed, 0x30de1)), sr: rand.New(rand.NewPCG(sc.Seed, 0x5a3))}
	m.ptlAt, m.cutAt = schedule(sc.Turns, sc.EventEvery)
	for i := 1; i <= sc.Screenshots; i++ {
		m.shotAt = append(m.shotAt, i*sc.Turns/(sc.Screenshots+1))
	}
	return m
}

// schedule returns when the scripted refusals and cut answers come: one of each per period
// of answers (at 40 % and 70 % of it), and one of each at 40 % and 70 % of a run shorter
// than a period.
func schedule(turns, period int) (ptl, cut []int) {
	if period <= 0 {
		return nil, nil
	}
	if turns < period {
		return []int{turns * 2 / 5}, []int{turns * 7 / 10}
	}
	for base := 0; base < turns; base += period {
		ptl = append(ptl, base+period*2/5)
		cut = append(cut, base+period*7/10)
	}
	return ptl, cut
}

// refuse reports whether the provider refuses this main request as too long although it
// fits: once per scheduled refusal, at the first request after it is due whose prompt takes
// at least three quarters of the window (so that the count the refusal names, just over
// the window, is off by at most a third: a provider whose tokenizer disagrees, not one
// that lies about a prompt a tenth of its size).
func (m *model) refuse(tokens, window int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ptlAt) == 0 || m.answered < m.ptlAt[0] || 4*tokens < 3*window {
		return false
	}
	m.ptlAt = m.ptlAt[1:]
	return true
}

// due reports whether an event of at is due at the current answer, consuming it.
func (m *model) due(at *[]int) bool {
	if len(*at) == 0 || m.answered < (*at)[0] {
		return false
	}
	*at = (*at)[1:]
	return true
}

// answer returns the model's next answer in the conversation; maxTokens is the request's
// output cap.
func (m *model) answer(maxTokens int) answer {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.r
	if m.due(&m.cutAt) {
		// A long answer the cap cuts: the provider bills the whole cap.
		return answer{text: proseText(r, min(maxTokens*5, 400_000)), stop: "max_tokens", outputTokens: maxTokens}
	}
	m.answered++
	a := m.scripted(r)
	if m.sc.Facts {
		if p, ok := plantedAnswer(m.answered, a, func() string { return m.prefix + randID(r) }); ok {
			return p
		}
	}
	return a
}

// scripted returns the script's next answer (see answer).
func (m *model) scripted(r *rand.Rand) answer {
	shot := m.due(&m.shotAt)
	if !shot && r.Float64() < m.sc.EndRate {
		return answer{text: pick(r, doneTexts) + " " + proseText(r, 80+r.IntN(500)), stop: "end_turn"}
	}
	n := 1
	if r.Float64() < m.sc.ParallelRate {
		n = 2 + r.IntN(3)
	}
	a := answer{stop: "tool_use"}
	if r.Float64() < 0.6 {
		a.text = pick(r, stepTexts)
	}
	for i := range n {
		name := m.pickTool(r)
		if shot && i == 0 {
			name = ImageTool
		}
		a.calls = append(a.calls, call{id: m.prefix + randID(r), name: name, input: m.input(r, name)})
	}
	return a
}

// pickTool draws a tool by the scenario's weights.
func (m *model) pickTool(r *rand.Rand) string {
	total := 0
	for _, t := range m.sc.Tools {
		total += t.Weight
	}
	k := r.IntN(max(total, 1))
	for _, t := range m.sc.Tools {
		if k < t.Weight {
			return t.Name
		}
		k -= t.Weight
	}
	return "Bash"
}

func randID(r *rand.Rand) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 24)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// input returns a call's input.
func (m *model) input(r *rand.Rand, tool string) json.RawMessage {
	var in map[string]string
	switch tool {
	case "Read":
		in = map[string]string{"file_path": m.ws.pickFile(r, true)}
	case "Bash":
		in = map[string]string{"command": pick(r, commands)}
	case "Grep":
		in = map[string]string{"pattern": pick(r, verbWords) + title(pick(r, identWords)), "path": pick(r, pkgDirs)}
	case "Edit":
		path := m.ws.pickFile(r, false)
		in = map[string]string{"file_path": path, "old_string": m.ws.lineOf(r, path), "new_string": codeLine(r)}
	case "Write":
		path := filepath.Join(pick(r, pkgDirs), fmt.Sprintf("%s_%s.go", pick(r, identWords), pick(r, verbWords)))
		in = map[string]string{"file_path": path, "content": codeText(r, 300+r.IntN(2500))}
	case "WebFetch":
		in = map[string]string{"url": "https://docs.example.com/" + pick(r, identWords) + "/" + pick(r, verbWords), "prompt": "What does this page say about " + pick(r, identWords) + " limits?"}
	case "Task":
		in = map[string]string{"description": "Survey " + pick(r, pkgDirs), "prompt": "Find every place in " + pick(r, pkgDirs) + " that " + pick(r, verbWords) + "s a " + pick(r, identWords) + " and report how each handles errors."}
	case "Glob":
		in = map[string]string{"pattern": pick(r, pkgDirs) + "/**/*.go"}
	case ImageTool:
		in = map[string]string{"page": "/" + pick(r, identWords)}
	default:
		in = map[string]string{}
	}
	b, err := json.Marshal(in)
	if err != nil {
		panic("liveloop: unreachable: " + err.Error())
	}
	return b
}

// summary returns the model's answer to a summary request: a draft in <analysis> tags, then
// a <summary> of about a tenth of the prompt (at least 300 tokens, at most 5,000 and four
// fifths of the cap).
func (m *model) summary(promptTokens, maxTokens int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.sr
	tokens := min(max(300, promptTokens/10), 5000, maxTokens*4/5)
	bytes := tokens * 4 // the prose runs at about 4.5 bytes a token; leave room under the cap
	var b strings.Builder
	b.WriteString("<analysis>\n")
	b.WriteString(proseText(r, bytes/8))
	b.WriteString("</analysis>\n\n<summary>\n")
	sections := []string{"1. Intent and constraints", "2. User messages", "3. Decisions", "4. Files and code",
		"5. Errors and fixes", "6. Pending work", "7. Current step"}
	per := max(40, (bytes-bytes/8)/len(sections))
	for _, s := range sections {
		b.WriteString(s + ":\n")
		if s == "4. Files and code" {
			b.WriteString(codeText(r, per))
			continue
		}
		b.WriteString(proseText(r, per))
	}
	b.WriteString("</summary>")
	return b.String()
}

var (
	stepTexts = []string{"Let me look at the code involved first.", "I will check how this is wired up.",
		"Next I will run the tests to see where things stand.", "Let me search for the other callers.",
		"I will make the change and then verify it.", "Reading the relevant files now."}
	doneTexts = []string{"The change is in place and the tests pass.", "Here is what I found.",
		"That is done; the build is green again.", "I have a first version ready for review."}
	commands = []string{"go test ./...", "go build ./...", "go vet ./internal/...", "git status --short",
		"git diff --stat", "make lint", "go test -run TestStore -v ./internal/store/", "ls -la internal"}
	prompts = []string{"Add a retry with backoff to the client in %s and cover it with a test.",
		"The tests in %s fail on the CI machine; find out why and fix them.",
		"Refactor %s so that the %s no longer reaches into the %s directly.",
		"Write documentation for the exported names of %s.",
		"Profile %s under load and make the hot path allocate less.",
		"Review the error handling in %s and make the messages say what went wrong."}
)

// userPrompt returns a new user prompt, in the harness's own words.
func userPrompt(r *rand.Rand) string {
	p := pick(r, prompts)
	args := []any{pick(r, pkgDirs), pick(r, identWords), pick(r, identWords)}
	return fmt.Sprintf(p, args[:strings.Count(p, "%s")]...)
}
