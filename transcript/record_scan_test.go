package transcript

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanMixed returns a session of the given turns with, at places rng picks, every kind of
// record the scan lists or its readers look at: decision records of each subtype (some
// without their payload, some on the sidechain), compact boundaries of each trigger and
// summarizer, failures, sidechain responses, API errors and synthetic responses, damaged
// records, records without a uuid, records repeating an earlier uuid, and an assistant record
// with a system subtype.
func scanMixed(turns int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 0x5ca9))
	k := newTK()
	pick := func() string { // an earlier record's uuid, or one no record has
		if len(k.recs) == 0 || rng.IntN(8) == 0 {
			return fmt.Sprintf("missing-%d", rng.IntN(100))
		}
		return k.recs[rng.IntN(len(k.recs))].UUID
	}
	sys := func(sub Subtype) *Record {
		r := k.next(TypeSystem)
		r.Subtype, r.ParentUUID, r.IsMeta = sub, "", true
		r.IsSidechain = rng.IntN(5) == 0
		k.last = k.recs[len(k.recs)-1].UUID // decisions hang off nothing: the chain goes on
		return r
	}
	for i := range turns {
		k.user(fmt.Sprintf("question %d", i))
		if rng.IntN(2) == 0 {
			id := fmt.Sprintf("t%d", i)
			k.assistant(toolUse(id, "Read"), text("reading"))
			k.results(result(id, "contents"))
		}
		k.assistant(text(fmt.Sprintf("answer %d", i)))
		for range rng.IntN(3) {
			var r *Record
			switch rng.IntN(17) {
			case 0:
				r = sys(SubtypeRecovery)
				rungs := []string{"prompt_too_long", "request_too_large", "media_rejected", "output_cap", "continue"}
				r.Recovery = &RecoveryDecision{Rung: rungs[rng.IntN(len(rungs))], Tokens: rng.IntN(3) * 1000,
					Counted: rng.IntN(3) * 900, Bytes: rng.IntN(3) * 5000, MaxTokens: rng.IntN(3) * 4096,
					Media:    []StrippedMedia{{Hash: fmt.Sprintf("h%d", rng.IntN(4))}},
					Withheld: []string{pick()}}
			case 1:
				r = sys(SubtypeToolResultBudget)
				r.Budget = &BudgetDecision{Results: []BudgetResult{
					{ToolUseID: fmt.Sprintf("t%d", rng.IntN(i+1)), Replaced: rng.IntN(2) == 0, Preview: []string{"", "preview"}[rng.IntN(2)]}}}
			case 2:
				r = sys(SubtypeMicrocompact)
				r.Microcompact = &MicrocompactDecision{Trigger: []string{"time", "cached"}[rng.IntN(2)],
					ClearedToolUseIDs: []string{fmt.Sprintf("t%d", rng.IntN(i+1))}, PinnedUUID: []string{"", pick()}[rng.IntN(2)]}
			case 3:
				r = sys(SubtypePin)
				r.Pin = &PinDecision{UUIDs: []string{pick(), pick()}}
			case 4:
				r = sys(SubtypeSnip)
				r.Snip = &SnipDecision{RemovedUUIDs: []string{pick()}, Reason: "test"}
			case 5:
				r = sys(SubtypeCollapseCommit)
				if rng.IntN(3) > 0 {
					r.Collapse = &CollapseCommit{CollapseID: fmt.Sprintf("%016d", i), FirstUUID: pick(), LastUUID: pick(), Summary: "span"}
				}
			case 6:
				r = sys(SubtypeCompactBoundary)
				r.IsSidechain = rng.IntN(8) == 0
				if rng.IntN(4) > 0 {
					r.CompactMetadata = &CompactMetadata{Trigger: []string{"auto", "manual"}[rng.IntN(2)],
						Fallback: rng.IntN(3) == 0, Summarizer: []string{"scripted", "session_memory", "extractive"}[rng.IntN(3)]}
				}
				k.last = r.UUID
			case 7:
				r = sys(SubtypeCompactFailure)
				r.CompactFailure = &CompactFailure{Trigger: []string{"auto", "manual"}[rng.IntN(2)],
					Fallback: rng.IntN(3) == 0, LeafUUID: []string{k.last, pick()}[rng.IntN(2)]}
			case 8: // a decision without its payload
				r = sys([]Subtype{SubtypeRecovery, SubtypeToolResultBudget, SubtypeMicrocompact, SubtypePin,
					SubtypeSnip, SubtypeCompactFailure}[rng.IntN(6)])
			case 9: // a sidechain exchange
				r = k.next(TypeUser)
				r.IsSidechain = true
				r.Message = &Message{Role: RoleUser, Content: []Block{text("side question")}}
				k.add(r)
				r = k.next(TypeAssistant)
				r.IsSidechain = true
				k.msgN++
				r.Message = &Message{ID: fmt.Sprintf("msg_side_%d", k.msgN), Role: RoleAssistant, Model: "claude-sonnet-4-5",
					Content: []Block{text("side answer")}, Usage: &Usage{InputTokens: 10, OutputTokens: 5}}
			case 10:
				r = k.next(TypeAssistant)
				r.IsAPIErrorMessage = true
				r.Message = &Message{ID: "", Role: RoleAssistant, Model: SyntheticModel, Content: []Block{text("API Error")}}
			case 11:
				r = k.next(TypeAssistant)
				r.Message = &Message{ID: fmt.Sprintf("msg_syn_%d", i), Role: RoleAssistant, Model: SyntheticModel, Content: []Block{text("No response requested.")}}
			case 12: // damaged: a field, or lines skipped before it
				r = k.next(TypeUser)
				r.Message = &Message{Role: RoleUser, Content: []Block{text("damaged")}}
				le := &LineError{File: "s.jsonl", Line: len(k.recs) + 1, Err: ErrTornLine}
				if rng.IntN(2) == 0 {
					le.Field = "timestamp"
					r.Damage = &Damage{Fields: []*LineError{le}}
				} else {
					r.Damage = &Damage{Skipped: []*LineError{le}}
				}
			case 13: // a system record without a uuid
				r = &Record{Type: TypeSystem, Subtype: SubtypeLocalCommand}
			case 14: // an earlier record written again
				if len(k.recs) > 0 {
					c := k.recs[rng.IntN(len(k.recs))]
					r = &c
				}
			case 15: // an assistant record that claims a decision's subtype
				r = k.next(TypeAssistant)
				r.Subtype = []Subtype{SubtypeRecovery, SubtypeCompactBoundary, SubtypeToolResultBudget}[rng.IntN(3)]
				k.msgN++
				r.Message = &Message{ID: fmt.Sprintf("msg_odd_%d", k.msgN), Role: RoleAssistant, Model: "claude-sonnet-4-5",
					Content: []Block{text("odd")}, Usage: &Usage{InputTokens: 10, OutputTokens: 5},
				}
				r.Budget = &BudgetDecision{Results: []BudgetResult{{ToolUseID: "t0", Replaced: true, Preview: "odd"}}}
			case 16: // a system record on the sidechain answering a decision of the main thread
				r = sys(SubtypeRecovery)
				r.IsSidechain = !r.IsSidechain
				r.Recovery = &RecoveryDecision{Rung: "output_cap", MaxTokens: 64000, Withheld: []string{pick()}}
			}
			if r != nil {
				k.add(r)
			}
		}
	}
	return k.recs
}

// TestRecordScanSteadyAllocs checks that a steady turn's work on the scan — the memo's index
// brought up to the records with one new prompt, then every reader — allocates as much at
// 2,000 turns as at 200: it follows the new record and the decisions, not the file.
func TestRecordScanSteadyAllocs(t *testing.T) {
	allocs := map[int]float64{}
	for _, turns := range []int{200, 2000} {
		k := linearSession(turns)
		// The same few decisions in both sessions.
		for _, r := range scanMixed(6, 3) {
			if r.Type == TypeSystem {
				k.decision(r)
			}
		}
		k.user("the last prompt")
		n := len(k.recs)
		buf := append(make([]Record, 0, n), k.recs...)
		memo := &ChainCache{}
		memo.keep(memo.index(buf))
		leaf := &buf[n-1]
		// Another prompt each turn, its uuid made beforehand: fmt's printers come from a
		// sync.Pool, which the race detector empties at random.
		uuids := make([]string, 21) // AllocsPerRun runs once more than asked
		for i := range uuids {
			uuids[i] = fmt.Sprintf("00000000-0000-4000-9000-%012d", i+1)
		}
		ix := memo.index(buf) // the first turn to weigh the cache TTL passes over the responses
		ix.scan.ChooseCacheTTL(buf, leaf, 0.1, 1.25, 2)
		memo.keep(ix)
		i := 0
		allocs[turns] = testing.AllocsPerRun(len(uuids)-1, func() {
			buf[n-1].UUID = uuids[i]
			i++
			ix := memo.index(buf)
			sc := ix.scan
			memo.keep(ix)
			sc.Damage(buf)
			sc.LastResponse(buf, leaf)
			sc.Each(buf, ScanBudget|ScanRecovery|ScanCacheTTL, func(int, *Record) {})
			sc.ChooseCacheTTL(buf, leaf, 0.1, 1.25, 2)
		})
	}
	t.Logf("allocations of a steady turn's scan: %v", allocs)
	require.Equal(t, allocs[200], allocs[2000], "the scan's allocations grow with the history: %v", allocs)
}
