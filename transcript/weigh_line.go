package transcript

import (
	"bytes"
	"time"

	"github.com/agentctx/agentctx/internal/jsonobj"
)

// The keys weighLine reads, per object, and the bit each sets once read.
var (
	weighRecordKeys  = []string{"type", "isSidechain", "isApiErrorMessage", "timestamp", "message"}
	weighMessageKeys = []string{"id", "model", "usage"}
	weighUsageKeys   = []string{"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"}
)

// weighLine reads, from a transcript line, what the cache TTL's weighing reads of a response
// (see weighed), as a full decode of the line would give it: the record's type, thread, API
// error flag and time, its message's id and model, and its usage's input counts. It skips
// every other value unread. ok is false when the line is no response with usage. sure is
// false when a full decode might read the line otherwise: one of those keys given twice, a key
// that only case-folds to one, a null or a value of another type for one, invalid JSON. The
// caller then decodes the line whole. prevID is returned as the id when the message id equals
// it, so that the records of a response split in several share one string.
func weighLine(s *jsonobj.Scanner, line []byte, prevID string) (w threadResponse, ok, sure bool) {
	var (
		assistant, apiError, message, usage, synthetic bool
		seen                                           uint16
	)
	// key returns the position of k in keys, -1 when it is none of them, and sure false when
	// it case-folds to one without being it, or was read before (bit is where keys' bits
	// start in seen).
	key := func(k []byte, keys []string, bit int) (int, bool) {
		for i, want := range keys {
			if string(k) == want {
				if seen&(1<<(bit+i)) != 0 {
					return i, false
				}
				seen |= 1 << (bit + i)
				return i, true
			}
			if len(k) == len(want) && bytes.EqualFold(k, []byte(want)) {
				return i, false
			}
		}
		return -1, true
	}
	readUsage := func(k []byte) bool {
		i, ok := key(k, weighUsageKeys, len(weighRecordKeys)+len(weighMessageKeys))
		if !ok {
			return false
		}
		if i < 0 {
			_, ok = s.Raw()
			return ok
		}
		n, ok := s.Int()
		w.size += n
		return ok
	}
	readMessage := func(k []byte) bool {
		i, ok := key(k, weighMessageKeys, len(weighRecordKeys))
		switch {
		case !ok:
			return false
		case i == 0:
			b, ok := s.StringBytes()
			if w.id = prevID; string(b) != prevID {
				w.id = string(b)
			}
			return ok
		case i == 1:
			b, ok := s.StringBytes()
			synthetic = string(b) == SyntheticModel
			return ok
		case i == 2:
			usage = true
			return s.Object(readUsage)
		}
		_, ok = s.Raw()
		return ok
	}
	readRecord := func(k []byte) bool {
		i, ok := key(k, weighRecordKeys, 0)
		switch {
		case !ok:
			return false
		case i == 0:
			b, ok := s.StringBytes()
			assistant = string(b) == string(TypeAssistant)
			return ok
		case i == 1:
			v, ok := s.Bool()
			if v {
				w.thread = 1
			}
			return ok
		case i == 2:
			apiError, ok = s.Bool()
			return ok
		case i == 3:
			b, ok := s.StringBytes()
			w.at, _ = time.Parse(time.RFC3339Nano, string(b))
			return ok
		case i == 4:
			message = true
			return s.Object(readMessage)
		}
		_, ok = s.Raw()
		return ok
	}
	s.Reset(line)
	if !s.Object(readRecord) || !s.End() {
		return w, false, false
	}
	return w, assistant && message && usage && !apiError && !synthetic, true
}
