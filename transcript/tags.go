package transcript

import (
	"fmt"
	"slices"
	"strings"
)

// Message tags let a model name earlier messages to a snip tool. With
// [github.com/agentctx/agentctx.SnipConfig.TagMessages], every user message of the view that carries a text prompt gets a
// text block "[id:xxxxxxxx]" placed after its tool_result blocks and before its text; with the
// snip tool offered ([github.com/agentctx/agentctx.SnipTool]), so does every user message of
// tool results. The tag is
// the first 8 hex digits of the record's uuid (dashes removed, lower case), lengthened only when
// an earlier user or assistant record of the transcript shares that prefix (the later record's
// tag grows to its shortest prefix no earlier one shares). A record written later never
// changes an earlier tag, so a message keeps its tag from turn to turn and the prompt cache
// keeps hitting.

// minTagLen is the length of a tag in hex digits when no other message shares its prefix.
const minTagLen = 8

// compactUUID returns u in lower case without dashes.
func compactUUID(u string) string {
	return strings.ToLower(strings.ReplaceAll(u, "-", ""))
}

// Tags returns each uuid's message tag, as [ResolveTag] reads it back: its shortest prefix of
// at least 8 hex digits (dashes removed, lower case) that no uuid before it in uuids shares.
// Equal uuids share one tag. Given the uuids of every user and assistant record of a
// transcript in file order, each tag names exactly one of them, and appending uuids changes
// none of the earlier tags.
func Tags(uuids []string) map[string]string {
	type entry struct {
		c  string
		at int // order of first appearance
	}
	seen := make(map[string]bool, len(uuids))
	var es []entry
	for _, u := range uuids {
		if c := compactUUID(u); !seen[c] {
			seen[c] = true
			es = append(es, entry{c, len(es)})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.c, b.c) })
	// In sorted order, the common prefix with another uuid shrinks with the distance to it: the
	// longest one a uuid shares with an earlier uuid is with the nearest earlier uuid on either
	// side, found with a stack of earlier-and-earlier uuids (the previous smaller element).
	need := make([]int, len(es))
	for _, dir := range []int{1, -1} {
		var stack []int
		for k := range es {
			p := k
			if dir < 0 {
				p = len(es) - 1 - k
			}
			for len(stack) > 0 && es[stack[len(stack)-1]].at > es[p].at {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 {
				need[p] = max(need[p], commonPrefix(es[p].c, es[stack[len(stack)-1]].c)+1)
			}
			stack = append(stack, p)
		}
	}
	tags := make(map[string]string, len(es))
	for p, e := range es {
		tags[e.c] = e.c[:min(max(minTagLen, need[p]), len(e.c))]
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

// ResolveTag returns the uuid of the user or assistant record of records that tag names. tag
// is a tag as [github.com/agentctx/agentctx.SnipConfig.TagMessages] shows it ("[id:1a2b3c4d]"), the same without brackets
// ("id:1a2b3c4d"), its bare hex digits, or a full uuid; at least 8 hex digits are required.
// When several records match, the one whose tag it is (see [Tags]) is chosen, else the ones
// on the active conversation chain are preferred; a tag that still matches more than one
// record, or none, is an error. records are not modified;
// ResolveTag is safe for concurrent use.
func ResolveTag(records []Record, tag string) (string, error) {
	hex, ok := parseTag(tag)
	if !ok {
		return "", fmt.Errorf("agentctx: %q is not a message tag (want [id:<at least %d hex digits>])", tag, minTagLen)
	}
	var cands, uuids []string
	for i := range records {
		r := &records[i]
		if !r.IsConversation() {
			continue
		}
		uuids = append(uuids, r.UUID)
		if strings.HasPrefix(compactUUID(r.UUID), hex) && !slices.Contains(cands, r.UUID) {
			cands = append(cands, r.UUID)
		}
	}
	if len(cands) > 1 {
		// The record whose tag it is: an earlier record's short tag is a prefix of the later
		// records that share it, whose own tags are longer.
		for u, tag := range Tags(uuids) {
			if tag == hex && slices.Contains(cands, u) {
				return u, nil
			}
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
