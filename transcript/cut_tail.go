package transcript

// CutTail returns the records a read stopping at a new compact boundary's cut holds (see
// [ReadOptions.TailMinBytes] and [History]), the transcript being records then appended,
// whose first record is the boundary with its history ([CutHistory]): the records the
// history carries, then records from the cut on (from, the kept head's position;
// len(records) when the compaction kept nothing), then appended. It copies the tail, not the
// records before it, which a long session holds by the hundred thousand, so that building
// the view a compaction leaves costs the tail as the next read of the transcript does. The
// boundary in the tail is marked [Record.Cut], as the read marks it, so that what reads the
// transcript through the history ([Record.CutHistory]) does here too. It returns false when
// the tail does not stand for the whole transcript as such a read would find it, by the
// checks the read makes: the boundary carries no history, or one that does not check
// ([History.Check]) or carries a record the tail holds too, or leaf's chain in the tail (leaf
// "": the last record's) does not reach the boundary cleanly.
func CutTail(records, appended []Record, from int, leaf string) ([]Record, bool) {
	if len(appended) == 0 || !appended[0].IsCompactBoundary() || appended[0].History == nil || from < 0 || from > len(records) {
		return nil, false
	}
	bd := &appended[0]
	n := len(bd.History.Records) // the carried records go first, once decoded
	tail := make([]Record, n, n+len(records)-from+len(appended))
	tail = append(append(tail, records[from:]...), appended...)
	carried, at, err := checkHistory(bd, tail[n:])
	if err != nil || len(carried) != n {
		return nil, false
	}
	copy(tail, carried)
	if !cleanTail(tail, leaf, bd.UUID, from < len(records)) {
		return nil, false
	}
	tail[n+at].Cut = true // as a read stopping at the cut marks it
	return tail, true
}

// cleanTail reports whether the chain of records to leaf ("": the default leaf) is the main
// thread's, reaches the compact boundary bd without a problem and, when seg is true (the
// compaction kept a tail), relinks its preserved segment: then records, a tail read from bd's
// cut on, stand for the whole transcript.
func cleanTail(records []Record, leaf, bd string, seg bool) bool {
	c, err := BuildChain(records, ChainOptions{Leaf: leaf})
	return err == nil && c.Leaf != nil && !c.Leaf.IsSidechain && c.Boundary != nil && c.Boundary.UUID == bd &&
		len(c.Problems) == 0 && c.SegmentProblem == "" && (!seg || c.Preserved != nil)
}
