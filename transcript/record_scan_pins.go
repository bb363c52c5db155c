package transcript

import "slices"

// pinList is what a [Scan] lists of the pin decisions: the uuids they name and where the
// records holding them are (see [Scan.Pinned]).
type pinList struct {
	uuids []string
	pos   []int
	// of is how many pin records the list was made from; found is true when every uuid was
	// held. A list with every uuid found stays as it is until more pin records come: later
	// records cannot hold a uuid's first occurrence, and a truncation drops the list.
	of    int
	found bool
}

// Pinned returns the uuids the pin decisions of records name ([SubtypePin] records with a
// [PinDecision], of either thread), in order of first pinning, and the position in records of
// the first record holding each (-1: none; a record without a uuid holds none). It passes
// over every record.
func Pinned(records []Record) (uuids []string, pos []int) {
	uuids = pinnedUUIDs(records, nil)
	if len(uuids) == 0 {
		return nil, nil
	}
	pos = make([]int, len(uuids))
	at := make(map[string]int, len(uuids))
	for k, u := range uuids {
		pos[k], at[u] = -1, k
	}
	for i := range records {
		if k, ok := at[records[i].UUID]; ok && pos[k] < 0 && records[i].UUID != "" {
			pos[k] = i
		}
	}
	return uuids, pos
}

// Pinned is [Pinned] through the index: the list a Pipeline's index keeps, made again only
// when a pin decision is written (a steady turn's cost follows the pins, not the records).
// The caller must not modify the slices. Without an index of records it passes over every
// record.
func (sc *Scan) Pinned(records []Record) (uuids []string, pos []int) {
	if !sc.Covers(records) {
		return Pinned(records)
	}
	return sc.pins.uuids, sc.pins.pos
}

// pinnedUUIDs returns the uuids the pin records among records name, in order of first
// pinning: those at the positions given, or every record's when at is nil.
func pinnedUUIDs(records []Record, at []int) []string {
	var out []string
	add := func(r *Record) {
		if r.Type == TypeSystem && r.Subtype == SubtypePin && r.Pin != nil {
			for _, u := range r.Pin.UUIDs {
				if !slices.Contains(out, u) {
					out = append(out, u)
				}
			}
		}
	}
	if at == nil {
		for i := range records {
			add(&records[i])
		}
	}
	for _, i := range at {
		add(&records[i])
	}
	return out
}

// listPins brings the pin list of ix's scan up to records, the records ix indexes.
func (ix *chainIndex) listPins(records []Record) {
	l, at := &ix.scan.pins, ix.scan.pos[scanPin]
	if len(at) == 0 {
		*l = pinList{}
		return
	}
	if l.of == len(at) && l.found {
		return
	}
	uuids := pinnedUUIDs(records, at)
	var pos []int
	if len(uuids) > 0 {
		pos = make([]int, len(uuids))
	}
	found := true
	for k, u := range uuids {
		p, ok := ix.byUUID[u]
		if !ok {
			p, found = -1, false
		}
		pos[k] = p
	}
	*l = pinList{uuids: uuids, pos: pos, of: len(at), found: found} // new storage: copies keep theirs
}
