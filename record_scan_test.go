package agentctx

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanReads is what every reader of the scan gives for one transcript.
type scanReads struct {
	Damage       []*transcript.LineError
	Recovery     []recoveryState
	History      []compactHistory
	Budget       map[string]frozenResult
	Previews     map[string]frozenAt
	Microcompact *mcLedger
	Pins         []string
	PinPos       []int
	Snips        map[string]snipRequest
	Each         [][]int // per set of kinds, the positions each visits that its reader wants
}

// scanLeaves returns the leaves the thread-dependent readers are asked about: none, the
// default leaf, and the last sidechain record.
func scanLeaves(records []transcript.Record) []*transcript.Record {
	leaves := []*transcript.Record{nil}
	if c, err := transcript.BuildChain(records, transcript.ChainOptions{}); err == nil && c.Leaf != nil {
		leaves = append(leaves, c.Leaf)
	}
	for i := len(records) - 1; i >= 0; i-- {
		if records[i].IsSidechain {
			leaves = append(leaves, &records[i])
			break
		}
	}
	return leaves
}

// scanWanted are the sets of kinds each is tested on, with what a reader of them wants.
var scanWanted = []struct {
	kinds transcript.ScanSet
	want  func(*transcript.Record) bool
}{
	{transcript.ScanDamaged, func(r *transcript.Record) bool { return r.Damage != nil }},
	{transcript.ScanCollapse, func(r *transcript.Record) bool {
		return r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeCollapseCommit
	}},
	{transcript.ScanBoundary | transcript.ScanFailure, func(r *transcript.Record) bool {
		return r.IsCompactBoundary() || r.Type == transcript.TypeSystem && r.Subtype == transcript.SubtypeCompactFailure
	}},
	{transcript.ScanMain | transcript.ScanSide | transcript.ScanRecovery, func(r *transcript.Record) bool {
		return transcript.ProviderResponse(r) || r.Subtype == transcript.SubtypeRecovery
	}},
	{transcript.ScanMain, func(r *transcript.Record) bool { return transcript.ProviderResponse(r) && !r.IsSidechain }},
}

// readScan runs every reader on records with sc (nil: the full passes).
func readScan(records []transcript.Record, sc *transcript.Scan) scanReads {
	out := scanReads{
		Damage:       sc.Damage(records),
		Budget:       frozenBudget(records, sc, 0),
		Previews:     budgetPreviews(records, sc, 0),
		Microcompact: loadMicrocompact(records, sc, 0),
		Snips:        snipRequests(records, sc),
	}
	out.Pins, out.PinPos = sc.Pinned(records)
	var boundaries []int
	for i := range records {
		if records[i].IsCompactBoundary() {
			boundaries = append(boundaries, i)
		}
	}
	for _, leaf := range scanLeaves(records) {
		out.Recovery = append(out.Recovery, readRecovery(records, sc, leaf))
		for _, b := range []int{-1, len(records)} {
			for _, thrash := range []int{0, 1, 3, 100} {
				out.History = append(out.History, readHistory(records, sc, leaf, b, thrash))
			}
		}
		for _, b := range boundaries[max(0, len(boundaries)-2):] {
			out.History = append(out.History, readHistory(records, sc, leaf, b, 2))
		}
	}
	for _, w := range scanWanted {
		var got []int
		sc.Each(records, w.kinds, func(i int, r *transcript.Record) {
			if w.want(r) {
				got = append(got, i)
			}
		})
		out.Each = append(out.Each, got)
	}
	return out
}

// requireSameScan checks that sc lists what a scan of records from nothing lists.
func requireSameScan(t *testing.T, records []transcript.Record, sc *transcript.Scan, msg string) {
	t.Helper()
	chain, err := new(transcript.ChainCache).Build(records, transcript.ChainOptions{})
	require.NoError(t, err, msg)
	fresh := chain.Scan()
	require.True(t, sc.Covers(records), msg)
	for _, k := range []transcript.ScanSet{transcript.ScanDamaged, transcript.ScanBoundary, transcript.ScanBudget, transcript.ScanSnip,
		transcript.ScanMicrocompact, transcript.ScanCollapse, transcript.ScanFailure, transcript.ScanPin, transcript.ScanRecovery,
		transcript.ScanMain, transcript.ScanSide} {
		got, want := scanPositions(records, sc, k), scanPositions(records, fresh, k)
		require.True(t, slices.Equal(want, got), "%s: kind %b: %v, want %v", msg, k, got, want)
	}
}

// scanPositions returns the positions sc lists under kind k.
func scanPositions(records []transcript.Record, sc *transcript.Scan, k transcript.ScanSet) []int {
	var out []int
	sc.Each(records, k, func(i int, _ *transcript.Record) { out = append(out, i) })
	return out
}

// scanTurn is a turn's copy of the scan, the records it covers and what the readers gave.
type scanTurn struct {
	scan    transcript.Scan
	records []transcript.Record
	reads   scanReads
}

// runScanTurns drives a Pipeline's memo through turns over all (prefixes growing by a few
// records, in one slice as a caller's log grows; now and then a rewind to an earlier prefix,
// or a different last record for one turn) and checks at each turn that the scan is the one
// built from nothing and that every reader gives with it what its full pass gives. It then
// checks that the copies earlier turns took still give what they gave.
func runScanTurns(t *testing.T, all []transcript.Record, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x7e57))
	memo := &transcript.ChainCache{}
	buf := append(make([]transcript.Record, 0, len(all)+1), all...)
	step := max(1, len(all)/40)
	var kept []scanTurn
	n := 0
	for turn := 0; n < len(all) || turn == 0; turn++ {
		n = min(len(all), n+1+rng.IntN(2*step))
		records := buf[:n]
		var restore func()
		switch rng.IntN(8) {
		case 0: // a rewind
			records = buf[:rng.IntN(n+1)]
		case 1: // another last record for this turn only
			if n < len(all) {
				orig := buf[n]
				buf[n] = transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeRecovery, UUID: fmt.Sprintf("other-%d", turn),
					Recovery: &transcript.RecoveryDecision{Rung: transcript.RungRequestTooLarge, Bytes: 1000 + turn}}
				records = buf[:n+1]
				restore = func() { buf[n] = orig }
			}
		}
		msg := fmt.Sprintf("turn %d, %d records", turn, len(records))
		chain, err := memo.Build(records, transcript.ChainOptions{})
		require.NoError(t, err, msg)
		requireSameScan(t, records, chain.Scan(), msg)
		got := readScan(records, chain.Scan())
		require.Equal(t, readScan(records, nil), got, msg)
		if turn%5 == 0 {
			// The reads point into the records they read: a copy of them, which later turns
			// leave as they are.
			c := slices.Clone(records)
			kept = append(kept, scanTurn{*chain.Scan(), c, readScan(c, chain.Scan())})
		}
		if restore != nil {
			restore()
		}
	}
	for k, old := range kept {
		require.Equal(t, old.reads, readScan(old.records, &old.scan), "the copy kept at turn %d changed", k*5)
	}
	// The same records decoded again, in a new slice: scanned anew.
	again := slices.Clone(all)
	chain, err := memo.Build(again, transcript.ChainOptions{})
	require.NoError(t, err)
	requireSameScan(t, again, chain.Scan(), "a new slice")
	require.Equal(t, readScan(again, nil), readScan(again, chain.Scan()), "a new slice")
}

// TestRecordScanGenerated compares the scan's readers with their full passes, turn by turn,
// on generated sessions holding every kind of record the scan lists.
func TestRecordScanGenerated(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			runScanTurns(t, scanMixed(40+int(seed)*15, seed), seed)
		})
	}
}

// TestRecordScanGoldenAndCorpus does the same on the transcripts of every golden case and
// every corpus session.
func TestRecordScanGoldenAndCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "cases", "*", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
			require.NoError(t, err)
			runScanTurns(t, tr.Records, 1)
		})
	}
	for _, s := range corpusSessions(t) {
		t.Run(s.path, func(t *testing.T) { runScanTurns(t, s.records, 2) })
	}
}

// TestRecordScanTrailing checks the one change a record may see after it was scanned: the
// last record gains, then loses, the damage of the torn line after it.
func TestRecordScanTrailing(t *testing.T) {
	k := linearSession(4)
	buf := append(make([]transcript.Record, 0, len(k.recs)+1), k.recs...)
	n := len(k.recs) - 1
	memo := &transcript.ChainCache{}
	torn := &transcript.LineError{File: "s.jsonl", Line: n + 1, Err: transcript.ErrTornLine}
	for _, tt := range []struct {
		name  string
		edit  func()
		count int
		want  int // damaged lines reported
	}{
		{"clean", func() {}, n, 0},
		{"a torn line after the last record", func() { buf[n-1].Damage = &transcript.Damage{Trailing: []*transcript.LineError{torn}} }, n, 1},
		{"the line completed", func() { buf[n-1].Damage = nil }, n + 1, 0},
	} {
		tt.edit()
		records := buf[:tt.count]
		chain, err := memo.Build(records, transcript.ChainOptions{})
		require.NoError(t, err, tt.name)
		got := chain.Scan().Damage(records)
		assert.Len(t, got, tt.want, tt.name)
		assert.Equal(t, (*transcript.Scan)(nil).Damage(records), got, tt.name)
	}
}

// TestRecordScanWithoutMemo checks that BuildChain without a memo indexes nothing, so that the
// readers fall back to their full passes, and that an empty transcript is covered.
func TestRecordScanWithoutMemo(t *testing.T) {
	records := scanMixed(10, 9)
	chain, err := transcript.BuildChain(records, transcript.ChainOptions{})
	require.NoError(t, err)
	assert.False(t, chain.Scan().Covers(records))
	assert.Equal(t, readScan(records, nil), readScan(records, chain.Scan()))

	memo := &transcript.ChainCache{}
	chain, err = memo.Build(nil, transcript.ChainOptions{})
	require.NoError(t, err)
	assert.True(t, chain.Scan().Covers(nil))
	chain, err = memo.Build(records, transcript.ChainOptions{})
	require.NoError(t, err)
	requireSameScan(t, records, chain.Scan(), "after an empty transcript")
}

// TestRecordScanConcurrent runs turns of one conversation from several goroutines on one
// memo, each on prefixes of one log that grow and shrink, and checks each turn's readers
// against their full passes while the other turns truncate and extend the scan it copied
// (run it under -race).
func TestRecordScanConcurrent(t *testing.T) {
	all := scanMixed(60, 11)
	memo := &transcript.ChainCache{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0xc0c0))
			for turn := range 25 {
				records := all[:len(all)/2+rng.IntN(len(all)/2+1)]
				chain, err := memo.Build(records, transcript.ChainOptions{})
				if !assert.NoError(t, err) {
					return
				}
				want := readScan(records, nil)
				for range 2 { // read again after the other goroutines moved on
					if !assert.Equal(t, want, readScan(records, chain.Scan()), "goroutine %d, turn %d", g, turn) {
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestRecordScanSteadyAllocs checks that a steady turn's work on the scan — the memo's index
// brought up to the records with one new prompt, then every reader — allocates as much at
// 2,000 turns as at 200: it follows the new record and the decisions, not the file.
func TestScanReadersSteadyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("builds the chain through its scratch pool, which the race detector empties at random")
	}
	allocs := map[int]float64{}
	for _, turns := range []int{200, 2000} {
		k := linearSession(turns)
		// The same few decisions in both sessions.
		for _, r := range scanMixed(6, 3) {
			if r.Type == transcript.TypeSystem {
				k.decision(r)
			}
		}
		k.user("the last prompt")
		n := len(k.recs)
		buf := append(make([]transcript.Record, 0, n), k.recs...)
		memo := &transcript.ChainCache{}
		_, err := memo.Build(buf, transcript.ChainOptions{})
		require.NoError(t, err)
		leaf := &buf[n-1]
		// Another prompt each turn, its uuid made beforehand: fmt's printers come from a
		// sync.Pool, which the race detector empties at random.
		uuids := make([]string, 21) // AllocsPerRun runs once more than asked
		for i := range uuids {
			uuids[i] = fmt.Sprintf("00000000-0000-4000-9000-%012d", i+1)
		}
		i := 0
		allocs[turns] = testing.AllocsPerRun(len(uuids)-1, func() {
			buf[n-1].UUID = uuids[i]
			i++
			chain, _ := memo.Build(buf, transcript.ChainOptions{})
			sc := chain.Scan()
			sc.Damage(buf)
			readRecovery(buf, sc, leaf)
			readHistory(buf, sc, leaf, n, 3)
			frozenBudget(buf, sc, 0)
			budgetPreviews(buf, sc, 0)
			loadMicrocompact(buf, sc, 0)
			sc.Pinned(buf)
			snipRequests(buf, sc)
		})
	}
	t.Logf("allocations of a steady turn's chain, scan and readers: %v", allocs)
	require.Equal(t, allocs[200], allocs[2000], "the scan's allocations grow with the history: %v", allocs)
}

// scanMixed returns a session of the given turns with, at places rng picks, every kind of
// record the scan lists or its readers look at: decision records of each subtype (some
// without their payload, some on the sidechain), compact boundaries of each trigger and
// summarizer, failures, sidechain responses, API errors and synthetic responses, damaged
// records, records without a uuid, records repeating an earlier uuid, and an assistant record
// with a system subtype.
func scanMixed(turns int, seed uint64) []transcript.Record {
	rng := rand.New(rand.NewPCG(seed, 0x5ca9))
	k := newTK()
	pick := func() string { // an earlier record's uuid, or one no record has
		if len(k.recs) == 0 || rng.IntN(8) == 0 {
			return fmt.Sprintf("missing-%d", rng.IntN(100))
		}
		return k.recs[rng.IntN(len(k.recs))].UUID
	}
	sys := func(sub transcript.Subtype) *transcript.Record {
		r := k.next(transcript.TypeSystem)
		r.Subtype, r.ParentUUID, r.IsMeta = sub, "", true
		r.IsSidechain = rng.IntN(5) == 0
		k.last = k.recs[len(k.recs)-1].UUID // decisions hang off nothing: the chain goes on
		return r
	}
	for i := range turns {
		k.user(fmt.Sprintf("question %d", i))
		if rng.IntN(2) == 0 {
			id := fmt.Sprintf("t%d", i)
			k.assistant(toolUse(id, "transcript.Read"), text("reading"))
			k.results(result(id, "contents"))
		}
		k.assistant(text(fmt.Sprintf("answer %d", i)))
		for range rng.IntN(3) {
			var r *transcript.Record
			switch rng.IntN(17) {
			case 0:
				r = sys(transcript.SubtypeRecovery)
				rungs := []string{"prompt_too_long", "request_too_large", "media_rejected", "output_cap", "continue"}
				r.Recovery = &transcript.RecoveryDecision{Rung: rungs[rng.IntN(len(rungs))], Tokens: rng.IntN(3) * 1000,
					Counted: rng.IntN(3) * 900, Bytes: rng.IntN(3) * 5000, MaxTokens: rng.IntN(3) * 4096,
					Media:    []transcript.StrippedMedia{{Hash: fmt.Sprintf("h%d", rng.IntN(4))}},
					Withheld: []string{pick()}}
			case 1:
				r = sys(transcript.SubtypeToolResultBudget)
				r.Budget = &transcript.BudgetDecision{Results: []transcript.BudgetResult{
					{ToolUseID: fmt.Sprintf("t%d", rng.IntN(i+1)), Replaced: rng.IntN(2) == 0, Preview: []string{"", "preview"}[rng.IntN(2)]}}}
			case 2:
				r = sys(transcript.SubtypeMicrocompact)
				r.Microcompact = &transcript.MicrocompactDecision{Trigger: []string{"time", "cached"}[rng.IntN(2)],
					ClearedToolUseIDs: []string{fmt.Sprintf("t%d", rng.IntN(i+1))}, PinnedUUID: []string{"", pick()}[rng.IntN(2)]}
			case 3:
				r = sys(transcript.SubtypePin)
				r.Pin = &transcript.PinDecision{UUIDs: []string{pick(), pick()}}
			case 4:
				r = sys(transcript.SubtypeSnip)
				r.Snip = &transcript.SnipDecision{RemovedUUIDs: []string{pick()}, Reason: "test"}
			case 5:
				r = sys(transcript.SubtypeCollapseCommit)
				if rng.IntN(3) > 0 {
					r.Collapse = &transcript.CollapseCommit{CollapseID: fmt.Sprintf("%016d", i), FirstUUID: pick(), LastUUID: pick(), Summary: "span"}
				}
			case 6:
				r = sys(transcript.SubtypeCompactBoundary)
				r.IsSidechain = rng.IntN(8) == 0
				if rng.IntN(4) > 0 {
					r.CompactMetadata = &transcript.CompactMetadata{Trigger: []string{"auto", "manual"}[rng.IntN(2)],
						Fallback: rng.IntN(3) == 0, Summarizer: []string{"scripted", "session_memory", "extractive"}[rng.IntN(3)]}
				}
				k.last = r.UUID
			case 7:
				r = sys(transcript.SubtypeCompactFailure)
				r.CompactFailure = &transcript.CompactFailure{Trigger: []string{"auto", "manual"}[rng.IntN(2)],
					Fallback: rng.IntN(3) == 0, LeafUUID: []string{k.last, pick()}[rng.IntN(2)]}
			case 8: // a decision without its payload
				r = sys([]transcript.Subtype{transcript.SubtypeRecovery, transcript.SubtypeToolResultBudget, transcript.SubtypeMicrocompact, transcript.SubtypePin,
					transcript.SubtypeSnip, transcript.SubtypeCompactFailure}[rng.IntN(6)])
			case 9: // a sidechain exchange
				r = k.next(transcript.TypeUser)
				r.IsSidechain = true
				r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("side question")}}
				k.add(r)
				r = k.next(transcript.TypeAssistant)
				r.IsSidechain = true
				k.msgN++
				r.Message = &transcript.Message{ID: fmt.Sprintf("msg_side_%d", k.msgN), Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
					Content: []transcript.Block{text("side answer")}, Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5}}
			case 10:
				r = k.next(transcript.TypeAssistant)
				r.IsAPIErrorMessage = true
				r.Message = &transcript.Message{ID: "", Role: transcript.RoleAssistant, Model: transcript.SyntheticModel, Content: []transcript.Block{text("API Error")}}
			case 11:
				r = k.next(transcript.TypeAssistant)
				r.Message = &transcript.Message{ID: fmt.Sprintf("msg_syn_%d", i), Role: transcript.RoleAssistant, Model: transcript.SyntheticModel, Content: []transcript.Block{text("No response requested.")}}
			case 12: // damaged: a field, or lines skipped before it
				r = k.next(transcript.TypeUser)
				r.Message = &transcript.Message{Role: transcript.RoleUser, Content: []transcript.Block{text("damaged")}}
				le := &transcript.LineError{File: "s.jsonl", Line: len(k.recs) + 1, Err: transcript.ErrTornLine}
				if rng.IntN(2) == 0 {
					le.Field = "timestamp"
					r.Damage = &transcript.Damage{Fields: []*transcript.LineError{le}}
				} else {
					r.Damage = &transcript.Damage{Skipped: []*transcript.LineError{le}}
				}
			case 13: // a system record without a uuid
				r = &transcript.Record{Type: transcript.TypeSystem, Subtype: transcript.SubtypeLocalCommand}
			case 14: // an earlier record written again
				if len(k.recs) > 0 {
					c := k.recs[rng.IntN(len(k.recs))]
					r = &c
				}
			case 15: // an assistant record that claims a decision's subtype
				r = k.next(transcript.TypeAssistant)
				r.Subtype = []transcript.Subtype{transcript.SubtypeRecovery, transcript.SubtypeCompactBoundary, transcript.SubtypeToolResultBudget}[rng.IntN(3)]
				k.msgN++
				r.Message = &transcript.Message{ID: fmt.Sprintf("msg_odd_%d", k.msgN), Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
					Content: []transcript.Block{text("odd")}, Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 5},
				}
				r.Budget = &transcript.BudgetDecision{Results: []transcript.BudgetResult{{ToolUseID: "t0", Replaced: true, Preview: "odd"}}}
			case 16: // a system record on the sidechain answering a decision of the main thread
				r = sys(transcript.SubtypeRecovery)
				r.IsSidechain = !r.IsSidechain
				r.Recovery = &transcript.RecoveryDecision{Rung: "output_cap", MaxTokens: 64000, Withheld: []string{pick()}}
			}
			if r != nil {
				k.add(r)
			}
		}
	}
	return k.recs
}
