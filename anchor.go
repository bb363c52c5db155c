package agentctx

import "github.com/agentctx/agentctx/transcript"

// Totals is the size of a conversation chain, in tokens. The zero value is the size of an
// empty chain.
type Totals struct {
	// Anchored is the best estimate of the chain's size: the anchor's reported usage (input +
	// cache creation + cache read + output tokens) plus AfterAnchor. Without an anchor it
	// equals Counted.
	Anchored int
	// Counted is the sum of [Counter.Record] over every record of the chain.
	Counted int
	// AnchorUUID is the uuid of the anchor record: the last record of the last provider
	// response on the chain that reports usage. Empty when there is none.
	AnchorUUID string
	// AnchorUsage is the anchor's usage; nil without an anchor. It is the record's own value,
	// not a copy: do not modify it.
	AnchorUsage *transcript.Usage
	// AfterAnchor is the counted size of the records the anchor's usage does not cover: every
	// record after the first record of the anchor's response, except the records of that
	// response itself. With an anchor, Anchored = AnchorUsage.Total() + AfterAnchor.
	AfterAnchor int
}

// Totals measures chain (records in conversation order, e.g. [transcript.Chain.Records]), anchored on the
// provider's last reported usage, as Claude Code does.
//
// The anchor is the last assistant record with a message whose usage is non-zero, skipping
// synthetic records ([transcript.Record.IsAPIErrorMessage] or model [transcript.SyntheticModel]). Claude Code writes
// one record per content block of a response, all sharing message.id and carrying a snapshot
// of the usage in which output_tokens is a running count, so the last record of the group
// holds the response's final usage; it is the anchor. That usage covers the prompt the
// response was generated from and the whole response, so the records of the response are
// not counted again, wherever they sit. Records interleaved with the response's records (tool
// results written while the response was still streaming) and everything after it are
// counted and added.
//
// Only user and assistant records with a message count (see [Counter.Record]).
func (c *Counter) Totals(chain []*transcript.Record) Totals {
	var t Totals
	anchor := -1
	for i := len(chain) - 1; i >= 0; i-- {
		if isAnchor(chain[i]) {
			anchor = i
			break
		}
	}
	first := anchor
	var msgID string
	if anchor >= 0 {
		a := chain[anchor]
		t.AnchorUUID, t.AnchorUsage = a.UUID, a.Message.Usage
		msgID = a.Message.ID
		for j := anchor - 1; j >= 0 && msgID != ""; j-- {
			r := chain[j]
			if r == nil || r.Type != transcript.TypeAssistant || r.Message == nil {
				continue // tool results and progress interleaved with the response
			}
			if r.Message.ID != msgID {
				break // the previous response
			}
			first = j
		}
	}
	for i, r := range chain {
		n := c.Record(r)
		t.Counted += n
		if anchor < 0 || i <= first || i == anchor || msgID != "" && sameResponse(r, msgID) {
			continue
		}
		t.AfterAnchor += n
	}
	t.Anchored = t.Counted
	if anchor >= 0 {
		t.Anchored = t.AnchorUsage.Total() + t.AfterAnchor
	}
	return t
}

func isAnchor(r *transcript.Record) bool {
	return r != nil && r.Type == transcript.TypeAssistant && r.Message != nil && r.Message.Usage.Total() > 0 &&
		!r.IsAPIErrorMessage && r.Message.Model != transcript.SyntheticModel
}

func sameResponse(r *transcript.Record, msgID string) bool {
	return r != nil && r.Type == transcript.TypeAssistant && r.Message != nil && r.Message.ID == msgID
}
