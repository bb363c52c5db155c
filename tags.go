package agentctx

import (
	"fmt"
	"slices"
	"strings"
)

// Message tags let a model name earlier messages to a snip tool. With
// [SnipConfig.TagMessages], every user message of the view that carries a text prompt gets a
// text block "[id:xxxxxxxx]" placed after its tool_result blocks and before its text. The tag is
// the first 8 hex digits of the record's uuid (dashes removed, lower case), lengthened only when
// another user or assistant record of the transcript shares that prefix (then both grow to
// their shortest distinguishing prefix); it depends on nothing else, so a message keeps its tag
// from turn to turn and the prompt cache keeps hitting.

// minTagLen is the length of a tag in hex digits when no other message shares its prefix.
const minTagLen = 8

// compactUUID returns u in lower case without dashes.
func compactUUID(u string) string {
	return strings.ToLower(strings.ReplaceAll(u, "-", ""))
}

// shortTags returns each uuid's tag: its shortest prefix of at least minTagLen hex digits
// (dashes removed) that no other uuid of the set shares. Equal uuids share one tag.
func shortTags(uuids []string) map[string]string {
	c := make([]string, 0, len(uuids))
	for _, u := range uuids {
		c = append(c, compactUUID(u))
	}
	slices.Sort(c)
	c = slices.Compact(c)
	tags := make(map[string]string, len(c))
	for i, s := range c {
		n := minTagLen
		if i > 0 {
			n = max(n, commonPrefix(s, c[i-1])+1)
		}
		if i+1 < len(c) {
			n = max(n, commonPrefix(s, c[i+1])+1)
		}
		tags[s] = s[:min(n, len(s))]
	}
	out := make(map[string]string, len(uuids))
	for _, u := range uuids {
		out[u] = tags[compactUUID(u)]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// taggable reports whether a view item gets a tag: a user record (not meta, not a compact
// summary, not an interrupt notice) with a non-blank text block.
func taggable(it *item) bool {
	r := it.rec
	if r == nil || it.role != RoleUser || it.meta || r.IsMeta || r.IsCompactSummary || isInterruptNotice(r) {
		return false
	}
	for _, b := range it.blocks {
		if t, ok := b.(*Text); ok && strings.TrimSpace(t.Text) != "" {
			return true
		}
	}
	return false
}

// tagMessages adds the id tags to the view's user prompts. Tag lengths are decided over every
// user and assistant record of the transcript (snipped, pre-boundary and other branches
// included), so that [ResolveTag] finds exactly one record for every tag shown.
func (p *Pipeline) tagMessages(t *turn, rep *StageReport) {
	var uuids []string
	for i := range t.in.Records {
		if r := &t.in.Records[i]; r.IsConversation() {
			uuids = append(uuids, r.UUID)
		}
	}
	tags := shortTags(uuids)
	n, tokens := 0, 0
	for i := range t.items {
		it := &t.items[i]
		if !taggable(it) {
			continue
		}
		tag := tags[it.uuid]
		b := &Text{Text: "[id:" + tag + "]"}
		pos := 0
		for pos < len(it.blocks) && kindOf(it.blocks[pos]) == KindToolResult {
			pos++
		}
		it.blocks = slices.Insert(slices.Clip(it.blocks), pos, Block(b))
		it.owned = true
		n++
		tokens += p.counter.Block(b)
	}
	if n > 0 {
		rep.add(Action{Kind: ActionTagged, Detail: fmt.Sprintf("%d user messages tagged with [id:…]", n), Tokens: tokens})
	}
}

// ResolveTag returns the uuid of the user or assistant record of records that tag names. tag
// is a tag as [SnipConfig.TagMessages] shows it ("[id:1a2b3c4d]"), the same without brackets
// ("id:1a2b3c4d"), its bare hex digits, or a full uuid; at least 8 hex digits are required.
// When several records match, the ones on the active conversation chain are preferred; a tag
// that still matches more than one record, or none, is an error. records are not modified;
// ResolveTag is safe for concurrent use.
func ResolveTag(records []Record, tag string) (string, error) {
	hex, ok := parseTag(tag)
	if !ok {
		return "", fmt.Errorf("agentctx: %q is not a message tag (want [id:<at least %d hex digits>])", tag, minTagLen)
	}
	var cands []string
	for i := range records {
		r := &records[i]
		if r.IsConversation() && strings.HasPrefix(compactUUID(r.UUID), hex) && !slices.Contains(cands, r.UUID) {
			cands = append(cands, r.UUID)
		}
	}
	if len(cands) > 1 {
		if chain, err := BuildChain(records, ChainOptions{}); err == nil {
			var on []string
			for _, r := range chain.Messages() {
				if slices.Contains(cands, r.UUID) && !slices.Contains(on, r.UUID) {
					on = append(on, r.UUID)
				}
			}
			if len(on) > 0 {
				cands = on
			}
		}
	}
	switch len(cands) {
	case 0:
		return "", fmt.Errorf("agentctx: no message has tag %q", tag)
	case 1:
		return cands[0], nil
	}
	return "", fmt.Errorf("agentctx: tag %q is ambiguous: it matches %s", tag, strings.Join(cands, ", "))
}

// parseTag extracts the lower-case hex digits of a tag.
func parseTag(tag string) (string, bool) {
	s := strings.TrimSpace(tag)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	s = strings.TrimPrefix(s, "id:")
	s = compactUUID(strings.TrimSpace(s))
	if len(s) < minTagLen || len(s) > 32 {
		return "", false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", false
		}
	}
	return s, true
}
