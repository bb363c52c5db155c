package transcript

import (
	"bytes"
	"cmp"
	"io"
	"slices"
)

// tailHistory gathers, in a reverse scan of the bytes before a tail read's cut, the records
// from there that the pipeline reads across the whole transcript, so that a tail read gives
// the requests a whole read gives:
//
//   - every compact boundary and every decision record of the library (budget, snip,
//     microcompact, collapse, compaction failure, pin, recovery), for the stages that replay
//     them, the circuit breaker and the thrash guard;
//   - the records the pins name, which every turn after a compaction re-places;
//   - from each stretch before a compact boundary of the main thread (since the one before,
//     or the start), its first HistoryResponses distinct provider responses, which the
//     thrash guard counts;
//   - the latest provider response of the main thread before the cut and the latest one that
//     completed, for the recovery's "latest response" and "a response completed since" its
//     output-cap decision, and for the history of a compaction that cuts before the tail's
//     responses.
//
// It weighs every provider response before the cut for the cache TTL as a whole read does
// (see [ChooseCacheTTL]), reading only the values the weighing needs (see weighLine): the
// read sets the result on the boundary's record.
//
// It also checks that no line before the cut holds a uuid or a message id of a record after
// it: then a whole read would take that record's first occurrence from before the cut.
type tailHistory struct {
	ra        io.ReaderAt
	kept      map[int64]int // offset → index in found
	found     []foundRecord
	pins      map[string]bool // uuids pins name that no record found yet holds
	tailUUIDs map[string]bool
	tailMsgs  map[string]bool
	gap       []lineRef // the assistant lines of the current stretch, last first
	// weighed holds what the cache TTL's weighing reads of every response before the cut.
	weighed weighList
	// needLast and needDone are true while the latest response of the main thread before the
	// cut, and the latest that completed, are still to be found. They are looked for whatever
	// the tail holds: a compaction whose cut falls before the tail's responses carries them
	// in its history (see CutHistory).
	needLast, needDone bool
	// built by settle:
	records []Record
	lines   []int
}

// foundRecord is a record kept from before the cut, with its line counted from the cut back
// (1: the line right before the cut).
type foundRecord struct {
	off  int64
	back int
	rec  Record
}

// lineRef names a line of the file to decode later.
type lineRef struct {
	off  int64
	n    int
	back int
}

// newTailHistory returns the history scan for the tail records.
func newTailHistory(ra io.ReaderAt, tail []Record) *tailHistory {
	h := &tailHistory{ra: ra, kept: map[int64]int{}, pins: map[string]bool{}, tailUUIDs: map[string]bool{}, tailMsgs: map[string]bool{},
		needLast: true, needDone: true}
	for i := range tail {
		r := &tail[i]
		if r.UUID != "" {
			h.tailUUIDs[r.UUID] = true
		}
		if r.Message != nil && r.Message.ID != "" {
			h.tailMsgs[r.Message.ID] = true
		}
		h.notePin(r)
	}
	for i := range tail {
		delete(h.pins, tail[i].UUID)
	}
	return h
}

// tailCompleted reports whether r is a provider response of the main thread that ended other
// than at max_tokens.
func tailCompleted(r *Record) bool {
	return ProviderResponse(r) && !r.IsSidechain && r.Message.StopReason != "" && r.Message.StopReason != "max_tokens"
}

// notePin adds the uuids r pins, when it is a pin decision.
func (h *tailHistory) notePin(r *Record) {
	if r.Type == TypeSystem && r.Subtype == SubtypePin && r.Pin != nil {
		for _, u := range r.Pin.UUIDs {
			h.pins[u] = true
		}
	}
}

// Byte patterns the scan looks for before decoding a line.
var (
	patSubtype   = []byte(`"subtype":"`)
	patAssistant = []byte(`"assistant"`)
	patStop      = []byte(`"stop_reason":"`)
	patUsage     = []byte(`"usage"`)
	patEscape    = []byte(`\u`)
	patIDValue   = []byte(`id":"`) // the end of "id":" and "uuid":" (and of "parentUuid":", passed over)
)

// scan reads the lines before the cut, last first, and returns how many there are; ok is
// false when the file is to be read whole (a collision, or a read error).
func (h *tailHistory) scan(sc *revLines, ld *lineDecoder, base int64) (lines int, ok bool) {
	for {
		off, line, long, more := sc.prev()
		if !more {
			break
		}
		lines++
		if long {
			continue
		}
		collides, pinned := h.ids(line)
		if collides {
			return 0, false
		}
		if pinned {
			h.pinned(ld, off, base, line, lines)
		}
		// The byte patterns say for sure which lines to pass over, unless a line holds an
		// escape (a key or value the patterns would miss), spaces its members (as some
		// writers do: "key": "value"), or names a decision's subtype, which may be a nested
		// value: such a line is decoded and taken for what it is.
		unsure := bytes.Contains(line, patEscape) || spacedJSON(line)
		decision := false
		if i := bytes.Index(line, patSubtype); i >= 0 && decisionValue(line[i+len(patSubtype):]) {
			decision = true
		}
		if !decision && !unsure {
			if bytes.Contains(line, patAssistant) {
				h.gap = append(h.gap, lineRef{off, len(line), lines})
				h.response(ld, off, base, line, lines, nil)
			}
			continue
		}
		var r Record
		if !decodeLine(ld, off, base, line, &r) {
			continue
		}
		if unsure && (h.tailUUIDs[r.UUID] || r.Message != nil && h.tailMsgs[r.Message.ID]) {
			return 0, false
		}
		if unsure {
			h.keepPinned(off, lines, &r)
		}
		switch {
		case r.Type == TypeSystem:
			if _, listed := subtypeKind(r.Subtype); listed {
				if r.IsCompactBoundary() && !r.IsSidechain {
					h.closeGap(ld, base)
				}
				h.notePin(&r)
				h.keep(off, lines, r)
			}
		case r.Type == TypeAssistant:
			h.gap = append(h.gap, lineRef{off, len(line), lines})
			h.response(ld, off, base, line, lines, &r)
		}
	}
	if sc.err != nil {
		return 0, false
	}
	// The responses before the first boundary count for no thrash run once a walk passes
	// that boundary; a later compaction that cuts inside the tail the boundary kept seals
	// them as the open stretch.
	h.closeGap(ld, base)
	return lines, true
}

// spacedJSON reports whether line, a JSON object, has white space before its first key or
// around that key's colon, as a writer that spaces every member writes it: the scan's byte
// patterns, which look for "key":"value", would miss its members.
func spacedJSON(line []byte) bool {
	t := trimJSONSpace(line)
	if len(t) < 2 || t[0] != '{' {
		return false
	}
	if isJSONSpace(t[1]) {
		return true
	}
	if t[1] != '"' {
		return false
	}
	i := 2
	for i < len(t) && t[i] != '"' {
		if t[i] == '\\' {
			i++
		}
		i++
	}
	i++ // past the key's closing quote
	return i < len(t) && (isJSONSpace(t[i]) || t[i] == ':' && i+1 < len(t) && isJSONSpace(t[i+1]))
}

// response weighs the assistant line at off (back lines before the cut) for the cache TTL,
// and keeps it when it is the latest response of the main thread before the cut, or the
// latest that completed, and the tail has none. r is the line's record when it was decoded,
// else nil.
func (h *tailHistory) response(ld *lineDecoder, off, base int64, line []byte, back int, r *Record) {
	// A response that completed names its stop reason; one cut short, or a record of a
	// message split in several, has it null (or "max_tokens"). Every response with usage is
	// weighed.
	latest := h.needLast || h.needDone && (r != nil || bytes.Contains(line, patStop))
	if r == nil {
		if !latest && !bytes.Contains(line, patUsage) {
			return
		}
		if !latest {
			if w, ok, sure := weighLine(&ld.s, trimJSONSpace(line), h.weighed.lastID()); sure {
				if ok {
					h.weighed.add(w)
				}
				return
			}
		}
		r = new(Record)
		if !decodeLine(ld, off, base, line, r) {
			return
		}
	}
	if w, ok := weighed(r); ok {
		h.weighed.add(threadResponse{weighedResponse: w, thread: uint8(thread(r))})
	}
	if latest && ProviderResponse(r) && !r.IsSidechain {
		done := tailCompleted(r)
		if h.needLast || done && h.needDone {
			h.keep(off, back, *r)
		}
		h.needLast, h.needDone = false, h.needDone && !done
	}
}

// ids reads the "uuid" and "id" string values of line, at any depth: collides is true when
// one is the uuid or the message id of a record after the cut, pinned when a uuid is one a
// pin names.
func (h *tailHistory) ids(line []byte) (collides, pinned bool) {
	for rest, at := line, 0; ; {
		i := bytes.Index(rest, patIDValue)
		if i < 0 {
			return false, pinned
		}
		at += i
		key := line[:at]
		rest = rest[i+len(patIDValue):]
		at += len(patIDValue)
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			return false, pinned
		}
		v := rest[:j]
		rest, at = rest[j:], at+j
		switch {
		case bytes.HasSuffix(key, []byte(`"uu`)):
			if h.tailUUIDs[string(v)] {
				return true, false
			}
			pinned = pinned || h.pins[string(v)]
		case bytes.HasSuffix(key, []byte(`"`)):
			if h.tailMsgs[string(v)] {
				return true, false
			}
		}
	}
}

// decisionValue reports whether a "subtype" value (the bytes after its opening quote) is one
// a tail read keeps: compact_boundary or one of the library's agentctx_ decisions.
func decisionValue(v []byte) bool {
	return bytes.HasPrefix(v, []byte(`compact_boundary"`)) || bytes.HasPrefix(v, []byte(`agentctx_`))
}

// pinned keeps the line's record when it holds a uuid a pin names.
func (h *tailHistory) pinned(ld *lineDecoder, off, base int64, line []byte, back int) {
	var r Record
	if decodeLine(ld, off, base, line, &r) {
		h.keepPinned(off, back, &r)
	}
}

// keepPinned keeps r, the record at off, when a pin names its uuid and no record kept so far
// holds it.
func (h *tailHistory) keepPinned(off int64, back int, r *Record) {
	if h.pins[r.UUID] {
		delete(h.pins, r.UUID)
		h.keep(off, back, *r)
	}
}

// closeGap keeps the first HistoryResponses distinct responses of the main thread of the
// stretch that a compact boundary of the main thread opens (the assistant lines met since the
// previous one, in the scan's order).
func (h *tailHistory) closeGap(ld *lineDecoder, base int64) {
	ids := map[string]bool{}
	var buf []byte
	for i := len(h.gap) - 1; i >= 0 && len(ids) < HistoryResponses; i-- {
		g := h.gap[i]
		if _, ok := h.kept[g.off]; ok {
			if r := &h.found[h.kept[g.off]].rec; ProviderResponse(r) && !r.IsSidechain {
				ids[r.Message.ID] = true
			}
			continue
		}
		buf = slices.Grow(buf[:0], g.n)[:g.n]
		if _, err := h.ra.ReadAt(buf, g.off); err != nil && err != io.EOF {
			continue
		}
		var r Record
		if decodeLine(ld, g.off, base, buf, &r) && ProviderResponse(&r) && !r.IsSidechain {
			ids[r.Message.ID] = true
			h.keep(g.off, g.back, r)
		}
	}
	h.gap = h.gap[:0]
}

// cut returns the cache TTL's weighing of the responses before the cut, for the boundary at
// position at among the records read from the cut on.
func (h *tailHistory) cut(at int) *scannedCut {
	return &scannedCut{tally: h.weighed.tally(), at: at}
}

// keep adds the record at off to the history once.
func (h *tailHistory) keep(off int64, back int, r Record) {
	if _, ok := h.kept[off]; ok {
		return
	}
	h.kept[off] = len(h.found)
	h.found = append(h.found, foundRecord{off, back, r})
}

// settle puts the records kept in file order, with their line numbers (before lines precede
// the cut) and the file's name on the fields they dropped.
func (h *tailHistory) settle(before int, name string) {
	slices.SortFunc(h.found, func(a, b foundRecord) int { return cmp.Compare(a.off, b.off) })
	h.records = make([]Record, len(h.found))
	h.lines = make([]int, len(h.found))
	for i, f := range h.found {
		line := before + 1 - f.back
		f.rec.Line = line
		if dm := f.rec.Damage; dm != nil {
			for _, fe := range dm.Fields {
				fe.File, fe.Line = name, line
			}
		}
		h.records[i], h.lines[i] = f.rec, line
	}
}
