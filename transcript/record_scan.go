package transcript

import (
	"math/bits"
	"sort"
	"weak"
)

// scanKind is a kind of record that some stage looks for among all the records of a
// transcript, not only the chain's: decision records of one subtype, damaged records, the
// responses of one thread.
type scanKind uint8

// The kinds a [Scan] lists. A subtype's kind holds every record with that subtype, whatever
// its type; a reader checks the rest of what it looks for on the record itself.
const (
	scanDamaged scanKind = iota
	scanBoundary
	scanBudget
	scanSnip
	scanMicrocompact
	scanCollapse
	scanFailure
	scanPin
	scanRecovery
	scanReminder
	scanUsage
	scanMain
	scanSide
	scanCacheTTL
	numScanKinds
)

// ScanSet is a set of the kinds of records a [Scan] lists, one bit each.
type ScanSet uint16

// The kinds of records a [Scan] lists, each a set of one.
const (
	ScanDamaged      ScanSet = 1 << scanDamaged      // Damage != nil
	ScanBoundary     ScanSet = 1 << scanBoundary     // subtype compact_boundary
	ScanBudget       ScanSet = 1 << scanBudget       // subtype agentctx_tool_result_budget; type content-replacement
	ScanSnip         ScanSet = 1 << scanSnip         // subtype agentctx_snip
	ScanMicrocompact ScanSet = 1 << scanMicrocompact // subtype agentctx_microcompact or microcompact_boundary
	ScanCollapse     ScanSet = 1 << scanCollapse     // subtype agentctx_collapse_commit
	ScanFailure      ScanSet = 1 << scanFailure      // subtype agentctx_compact_failure
	ScanPin          ScanSet = 1 << scanPin          // subtype agentctx_pin
	ScanRecovery     ScanSet = 1 << scanRecovery     // subtype agentctx_recovery
	ScanReminder     ScanSet = 1 << scanReminder     // subtype agentctx_reminder
	ScanUsage        ScanSet = 1 << scanUsage        // subtype agentctx_usage
	ScanMain         ScanSet = 1 << scanMain         // a provider's response (see ProviderResponse) off the sidechain
	ScanSide         ScanSet = 1 << scanSide         // a provider's response on the sidechain
	ScanCacheTTL     ScanSet = 1 << scanCacheTTL     // subtype agentctx_cache_ttl
)

// kinds returns the set holding k.
func (k scanKind) kinds() ScanSet { return 1 << k }

// subtypeKind returns the kind of records of subtype s, if the index lists them.
func subtypeKind(s Subtype) (scanKind, bool) {
	switch s {
	case SubtypeCompactBoundary:
		return scanBoundary, true
	case SubtypeToolResultBudget:
		return scanBudget, true
	case SubtypeSnip:
		return scanSnip, true
	case SubtypeMicrocompact, SubtypeMicrocompactBoundary:
		return scanMicrocompact, true
	case SubtypeCollapseCommit:
		return scanCollapse, true
	case SubtypeCompactFailure:
		return scanFailure, true
	case SubtypePin:
		return scanPin, true
	case SubtypeRecovery:
		return scanRecovery, true
	case SubtypeReminder:
		return scanReminder, true
	case SubtypeUsage:
		return scanUsage, true
	case SubtypeCacheTTL:
		return scanCacheTTL, true
	}
	return 0, false
}

// Scan lists, for each scanKind, the positions of the records of that kind in a
// transcript, in file order. The stages that read decision records, damage or the latest
// response of the whole transcript walk these lists instead of every record, so a steady
// turn's cost there follows the decisions, not the file.
//
// A Pipeline keeps one per conversation in the chain's uuid index (see [chainIndex]),
// truncated and extended with it, and gives each turn a copy on its Chain. A copy never
// changes afterwards: extending appends past the lengths it holds, and truncating caps the
// lists it shortens, so that the next append moves them to new storage rather than writing
// over positions a copy still holds.
//
// What a record is listed under is read once, when it is scanned. The uuid index behind it
// keeps the scan of the records it finds as they were (see [chainIndex.common]: the same uuid,
// parentUuid and kinds at each position it compares, and in a slice it indexed before, the
// caller's append-only log of [github.com/agentctx/agentctx.Input.Records] between); the scan is also kept only while the
// records are in the same slice as before. Records read again from a file, or copied to a
// larger slice, are scanned anew: a line edited in place may hold other damage, or another
// subtype, under the same uuid.
//
// The lists are a superset of what a reader wants: a reader checks its own condition on each
// record listed, as the full pass over the records did. That keeps its result exact for a
// record whose damage changed after it was listed, and damageOf reads the last record
// whether listed or not: a caller reading a growing file on into the same slice may set
// Damage.Trailing on its last record, as [Read] does, when the line after it is
// torn.
type Scan struct {
	pos [numScanKinds][]int
	// n is how many records were scanned; indexed is false for a scan of nothing, which
	// readers take as no index (they then pass over every record).
	n       int
	indexed bool
	// first is the first record scanned, weakly: the scan does not keep the caller's records
	// alive, and a pointer to records still alive cannot stand for other records.
	first weak.Pointer[Record]
	// ttl is the pass over the responses [Scan.ChooseCacheTTL] reads; pins is the list
	// [Scan.Pinned] returns, which the index makes (it knows where each uuid is).
	ttl  ttlLedger
	pins pinList
}

// Covers reports whether sc indexes exactly records: readers use it when it does, and pass
// over every record otherwise. sc may be nil.
func (sc *Scan) Covers(records []Record) bool {
	return sc != nil && sc.indexed && sc.n == len(records)
}

// update brings sc up to records: it lists the records after the ones it has scanned when
// records are in the slice it scanned before, and scans them all otherwise.
func (sc *Scan) update(records []Record) {
	if len(records) == 0 {
		*sc = Scan{indexed: true, ttl: ttlLedger{want: sc.ttl.want}}
		return
	}
	if sc.n > 0 && sc.first.Value() != &records[0] {
		*sc = Scan{ttl: ttlLedger{want: sc.ttl.want}} // turns may hold copies of the lists: new ones
	}
	if sc.n == 0 {
		sc.first = weak.Make(&records[0])
	}
	sc.extend(records)
}

// extend lists the records after the ones sc has scanned.
func (sc *Scan) extend(records []Record) {
	for i := sc.n; i < len(records); i++ {
		for k := kindsOf(&records[i]); k != 0; k &= k - 1 {
			kind := bits.TrailingZeros16(uint16(k))
			sc.pos[kind] = append(sc.pos[kind], i)
		}
	}
	sc.n = max(sc.n, len(records))
	sc.indexed = true
	sc.ttl.extend(sc, records)
}

// kindsOf returns the kinds a Scan lists r under: all it reads of a record.
func kindsOf(r *Record) ScanSet {
	var k ScanSet
	if r.Damage != nil {
		k |= ScanDamaged
	}
	if r.Subtype != "" {
		if sk, ok := subtypeKind(r.Subtype); ok {
			k |= sk.kinds()
		}
	}
	if r.Type == TypeContentReplacement {
		k |= ScanBudget
	}
	if ProviderResponse(r) {
		if r.IsSidechain {
			k |= ScanSide
		} else {
			k |= ScanMain
		}
	}
	return k
}

// truncate drops the records from position n on. A list that loses positions is capped at
// its new length, so that the copies turns hold keep theirs.
func (sc *Scan) truncate(n int) {
	for k := range sc.pos {
		l := sc.pos[k]
		if cut := sort.SearchInts(l, n); cut < len(l) {
			sc.pos[k] = l[:cut:cut]
		}
	}
	if n < sc.n {
		sc.pins = pinList{}
	}
	sc.n = min(sc.n, n)
	sc.ttl.truncate(n)
}

// Each calls f on the records of the given kinds in file order, each once. Without an index
// of records it calls f on every record: callers' f must then skip what they do not want,
// as they must anyway (see [Scan]).
func (sc *Scan) Each(records []Record, kinds ScanSet, f func(i int, r *Record)) {
	sc.EachFrom(records, kinds, 0, f)
}

// EachFrom is Each on the records from position from on: a reader that needs no record before
// a chain's start ([Chain.Start]) walks only the decisions after it.
func (sc *Scan) EachFrom(records []Record, kinds ScanSet, from int, f func(i int, r *Record)) {
	from = max(from, 0)
	if !sc.Covers(records) {
		for i := from; i < len(records); i++ {
			f(i, &records[i])
		}
		return
	}
	var at [numScanKinds]int
	for k := range numScanKinds {
		if kinds&k.kinds() != 0 {
			at[k] = sort.SearchInts(sc.pos[k], from)
		}
	}
	for {
		next := -1
		for k := range numScanKinds {
			if kinds&k.kinds() == 0 || at[k] == len(sc.pos[k]) {
				continue
			}
			if p := sc.pos[k][at[k]]; next < 0 || p < next {
				next = p
			}
		}
		if next < 0 {
			return
		}
		for k := range numScanKinds {
			if kinds&k.kinds() != 0 && at[k] < len(sc.pos[k]) && sc.pos[k][at[k]] == next {
				at[k]++
			}
		}
		f(next, &records[next])
	}
}

// threadResponses returns the kinds of responses of leaf's thread: both threads' without a
// leaf (see OtherThread).
func threadResponses(leaf *Record) ScanSet {
	switch {
	case leaf == nil:
		return ScanMain | ScanSide
	case leaf.IsSidechain:
		return ScanSide
	}
	return ScanMain
}

// LastResponse returns the position of the latest response of leaf's thread, or -1. sc must
// cover records.
func (sc *Scan) LastResponse(records []Record, leaf *Record) int {
	return sc.LastResponseAfter(records, leaf, -1, nil)
}

// LastResponseAfter returns the position of the latest provider response of leaf's thread
// after position after for which ok (nil: any) holds, or -1. sc must cover records.
func (sc *Scan) LastResponseAfter(records []Record, leaf *Record, after int, ok func(*Record) bool) int {
	last := -1
	kinds := threadResponses(leaf)
	for _, k := range [...]scanKind{scanMain, scanSide} {
		if kinds&k.kinds() == 0 {
			continue
		}
		l := sc.pos[k]
		for j := len(l) - 1; j >= 0 && l[j] > max(last, after); j-- {
			if r := &records[l[j]]; ProviderResponse(r) && !OtherThread(r, leaf) && (ok == nil || ok(r)) {
				last = l[j]
				break
			}
		}
	}
	return last
}

// ProviderResponse reports whether r is a provider's response: an assistant message that is
// neither an API error nor one the library made up.
func ProviderResponse(r *Record) bool {
	return r.Type == TypeAssistant && r.Message != nil && !r.IsAPIErrorMessage && r.Message.Model != SyntheticModel
}
