package transcript

import (
	"fmt"
	"slices"
	"strings"
)

// Message tags let a model name earlier messages to a snip tool. With
// [github.com/agentctx/agentctx.SnipConfig.TagMessages], every user message of the view that carries a text prompt gets a
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

// Tags returns each uuid's message tag, as [ResolveTag] reads it back: its shortest prefix of
// at least 8 hex digits (dashes removed, lower case) that no other uuid of the set shares.
// Equal uuids share one tag. Given the uuids of every user and assistant record of a
// transcript, each tag names exactly one of them.
func Tags(uuids []string) map[string]string {
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

// ResolveTag returns the uuid of the user or assistant record of records that tag names. tag
// is a tag as [github.com/agentctx/agentctx.SnipConfig.TagMessages] shows it ("[id:1a2b3c4d]"), the same without brackets
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
