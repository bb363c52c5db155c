package anthropic

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/tidwall/sjson"
)

// compactionDeltas collects the compaction_delta events of a streamed answer, by block
// index: the summary and encrypted content of a server-side compaction block arrive as one
// delta, which the SDK's accumulator of non-beta messages does not apply.
type compactionDeltas map[int64]map[string]json.RawMessage

// take keeps the fields of ev when it is a compaction delta; the last one of a block wins,
// as the SDK's beta accumulator has it.
func (c *compactionDeltas) take(ev sdk.MessageStreamEventUnion) {
	if ev.Type != "content_block_delta" || ev.Delta.Type != "compaction_delta" {
		return
	}
	var e struct {
		Delta map[string]json.RawMessage `json:"delta"`
	}
	if json.Unmarshal([]byte(ev.RawJSON()), &e) != nil {
		return
	}
	fields := e.Delta
	if *c == nil {
		*c = compactionDeltas{}
	}
	(*c)[ev.Index] = fields
}

// apply writes the deltas' content and encrypted_content into the accumulated message's
// blocks, over the values of their content_block_start and in their place, so the block
// keeps its keys in the order the server sent them. A null or missing value (a failed
// compaction) leaves the block's own.
func (c compactionDeltas) apply(raw []byte) ([]byte, error) {
	for _, i := range slices.Sorted(maps.Keys(c)) {
		for _, key := range []string{"content", "encrypted_content"} {
			v := c[i][key]
			if len(v) == 0 || string(v) == "null" {
				continue
			}
			var err error
			if raw, err = sjson.SetRawBytes(raw, fmt.Sprintf("content.%d.%s", i, key), v); err != nil {
				return nil, fmt.Errorf("compaction delta of block %d: %w", i, err)
			}
		}
	}
	return raw, nil
}
