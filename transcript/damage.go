package transcript

// Damage is what reading one record of a transcript could not take as written. The [Decoder]
// sets it on the record ([Record.Damage]); [github.com/agentctx/agentctx.Pipeline.Prepare] reports it ([github.com/agentctx/agentctx.Report.Damage]) and
// [BuildChain] bridges the parent links it breaks (see [ChainOptions.NoBridge]).
//
// The transcript file is never changed: a record with unreadable fields writes back as it was
// read, and skipped lines stay where they are.
type Damage struct {
	// Fields lists the record's fields that could not be read, in the order met; each
	// [LineError.Field] is a JSON path ("message.usage.input_tokens", "timestamp",
	// "message.content[2]"). Each such field is absent from the record, as if the line did not
	// have it; a content block that could not be read at all is an [*UnknownBlock].
	Fields []*LineError
	// Skipped lists the lines between the previous record and this one that were no record at
	// all (invalid JSON, not an object, over the line cap, torn), in file order.
	Skipped []*LineError
	// Trailing lists, on the last record of a [Transcript], the lines after it that were no
	// record, the torn last line included. A [Decoder] never sets it: it has returned the
	// record before it reads on.
	Trailing []*LineError
}

// Damage returns the damage of records, in file order; sc, when it covers records, lists the
// damaged ones (nil, or a scan of other records: every record is read). The last record is
// read whatever sc says: its Damage.Trailing may be new (see [Scan]).
func (sc *Scan) Damage(records []Record) []*LineError {
	var out []*LineError
	last := len(records) - 1
	sc.Each(records, ScanDamaged, func(i int, r *Record) {
		if i != last {
			out = append(out, r.Damage.all()...)
		}
	})
	if last >= 0 {
		out = append(out, records[last].Damage.all()...)
	}
	return out
}

// all returns the damage in file order: the skipped lines before the record, its fields, the
// lines after it.
func (d *Damage) all() []*LineError {
	if d == nil {
		return nil
	}
	out := make([]*LineError, 0, len(d.Skipped)+len(d.Fields)+len(d.Trailing))
	out = append(out, d.Skipped...)
	out = append(out, d.Fields...)
	return append(out, d.Trailing...)
}

// field returns the error of the record's field at path, or nil when it was read.
func (d *Damage) field(path string) *LineError {
	if d == nil {
		return nil
	}
	for _, e := range d.Fields {
		if e.Field == path {
			return e
		}
	}
	return nil
}
