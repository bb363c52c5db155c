package transcript

import (
	"math"
	"time"
)

// ChooseCacheTTL weighs the prompt cache's two times to live on the session's responses
// (those of leaf's thread, with usage, in file order), at the cache's prices relative to the
// base input price (read, and a write under each TTL): each gap between consecutive responses of 5 to 60 minutes
// costs the 5-minute TTL a rewrite of the previous request's prompt at the write price
// instead of a read; the 1-hour TTL costs its write premium on every token written — each
// response's growth, or its whole prompt after a drop (a compaction) or a gap past the hour.
// It picks "1h" when the rewrites cost more, else "5m".
func ChooseCacheTTL(records []Record, leaf *Record, read, write5m, write1h float64) CacheTTLDecision {
	var d CacheTTLDecision
	var prev time.Time
	prevSize, written := 0, 0
	seen := map[string]bool{}
	for i := range records {
		r := &records[i]
		if !ProviderResponse(r) || r.Message.Usage == nil || OtherThread(r, leaf) {
			continue
		}
		if id := r.Message.ID; id != "" {
			if seen[id] {
				continue
			}
			seen[id] = true
		}
		u := r.Message.Usage
		size := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
		at := r.Time()
		gap := time.Duration(0)
		if !prev.IsZero() && !at.IsZero() {
			gap = at.Sub(prev)
		}
		switch {
		case gap > 5*time.Minute && gap <= time.Hour:
			d.Gaps++
			d.Rewrites5m += float64(prevSize) * max(0, write5m-read)
			written += max(0, size-prevSize)
		case gap > time.Hour || size < prevSize:
			written += size
		default:
			written += max(0, size-prevSize)
		}
		prev, prevSize = at, size
	}
	d.Premium1h = float64(written) * max(0, write1h-write5m)
	d.Rewrites5m, d.Premium1h = math.Round(d.Rewrites5m), math.Round(d.Premium1h)
	d.TTL = "5m"
	if d.Rewrites5m > d.Premium1h {
		d.TTL = "1h"
	}
	return d
}
