package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// HistoryVersion is the version of [History] this package writes and reads.
const HistoryVersion = 2

// HistoryResponses is how many distinct responses of a stretch between two compact
// boundaries a [History] counts, and how many of a tail read's history scan keeps: the thrash
// guard reads at most ThrashTurns+1 of them, so both serve a ThrashTurns up to 7 (default 3).
const HistoryResponses = 8

// History is what a compact boundary the library writes says of the transcript before its
// cut (the kept head of its preserved segment, or the boundary itself when it kept none), so
// that a read can stop at the cut (see [ReadOptions.TailMinBytes]) and still give the
// requests a whole read gives. It is written on the boundary as "agentctxHistory"; boundaries
// without it (Claude Code's, older ones) are read by scanning the bytes before the cut.
//
// It holds the compaction state of the boundary's thread (the circuit breaker's failures and
// the thrash guard's counts of responses between boundaries), the state of the cache TTL's
// weighing of its responses, and the few records from before the cut that later turns still
// read: the pin decisions and the records they name, the recovery decisions, the latest cache
// TTL decision of the main thread, the latest response of the main thread and the latest that
// completed, the late usage of those and the snips naming the pinned records. The other
// decisions there name only records before the cut, which no later view holds.
type History struct {
	// Version is [HistoryVersion].
	Version int `json:"version"`
	// Compactions counts the thread's compact boundaries before the cut.
	Compactions int `json:"compactions"`
	// Failures counts the failed auto attempts of the primary summarizer since its last
	// success or the last manual compaction, at the cut.
	Failures int `json:"failures,omitempty"`
	// Runs are the counts of distinct responses (at most [HistoryResponses]) of the trailing
	// stretches between two auto compactions, oldest first: the thrash guard's refills for any
	// ThrashTurns up to 7 are the trailing counts of at most ThrashTurns.
	Runs []int `json:"runs,omitempty"`
	// Open are the message ids of the responses of the thread after its last boundary before
	// the cut (at most [HistoryResponses], in file order).
	Open []string `json:"open,omitempty"`
	// CacheTTL is where the cache TTL's weighing of the thread's responses stood at the cut
	// (see [CacheTTLTally]); nil when no response before the cut counted.
	CacheTTL *CacheTTLTally `json:"cacheTtl,omitempty"`
	// Records are the records carried over from before the cut, in file order, as written.
	Records []json.RawMessage `json:"records,omitempty"`
	// Sum is the first 16 bytes of the SHA-256 of the history written with Sum empty, in hex:
	// a read that finds another value scans the bytes before the cut instead.
	Sum string `json:"sum"`
}

// Seal sets h.Sum.
func (h *History) Seal() error {
	s, err := h.sum()
	h.Sum = s
	return err
}

// sum returns what Sum must hold.
func (h History) sum() (string, error) {
	h.Sum = ""
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16]), nil
}

// Check reports what is wrong with h, if anything: another version, a sum that does not
// match, counts out of range, records that cannot be read.
func (h *History) Check() error {
	if h.Version != HistoryVersion {
		return fmt.Errorf("version %d, not %d", h.Version, HistoryVersion)
	}
	if s, err := h.sum(); err != nil || s != h.Sum {
		return errors.New("its sum does not match its content")
	}
	if h.Compactions < 0 || h.Failures < 0 || len(h.Runs) > max(0, h.Compactions-1) || len(h.Open) > HistoryResponses {
		return errors.New("its counts are out of range")
	}
	for _, n := range h.Runs {
		if n < 0 || n > HistoryResponses {
			return errors.New("a run is out of range")
		}
	}
	return h.CacheTTL.check()
}

// Carried decodes the records h carries, in order; each must read whole.
func (h *History) Carried() ([]Record, error) {
	out := make([]Record, len(h.Records))
	var ld lineDecoder
	for i, raw := range h.Records {
		if err := out[i].decode(&ld, bytes.TrimSpace(raw)); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		if out[i].Damage != nil || out[i].UUID == "" {
			return nil, fmt.Errorf("record %d cannot be read whole", i)
		}
	}
	return out, nil
}

// CutHistory returns r's History when a read stopped at r's cut (see [Record.Cut]) and r is
// a compact boundary: the compaction state and records of the transcript before the cut that
// the read left out; nil otherwise.
func (r *Record) CutHistory() *History {
	if !r.Cut || r.History == nil || !r.IsCompactBoundary() {
		return nil
	}
	return r.History
}
