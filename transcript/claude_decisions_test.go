package transcript

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClaudeDecisions reads Claude Code's content-replacement and microcompact_boundary
// records: their entries come back, unreadable entries are left out, the records are listed
// by the scan with the library's own budget and microcompact decisions, and they write back
// byte for byte.
func TestClaudeDecisions(t *testing.T) {
	lines := []string{
		`{"type":"content-replacement","sessionId":"s1","replacements":[{"kind":"tool-result","toolUseId":"toolu_1","replacement":"<persisted-output>\nshort\n</persisted-output>"},{"kind":"image","toolUseId":"toolu_2","replacement":"x"},{"toolUseId":"","replacement":"y"},7]}`,
		`{"type":"system","subtype":"microcompact_boundary","uuid":"b1","parentUuid":"u1","sessionId":"s1","content":"Context microcompacted","level":"info","microcompactMetadata":{"trigger":"auto","preTokens":1600,"tokensSaved":60,"compactedToolIds":["toolu_3"],"clearedAttachmentUUIDs":[],"later":true}}`,
		`{"type":"content-replacement","sessionId":"s1","replacements":{"not":"a list"}}`,
	}
	tr, err := Read(strings.NewReader(strings.Join(lines, "\n")+"\n"), "claude", ReadOptions{Strict: true})
	require.NoError(t, err)
	require.Len(t, tr.Records, 3)

	assert.Equal(t, []ContentReplacement{{Kind: "tool-result", ToolUseID: "toolu_1", Replacement: "<persisted-output>\nshort\n</persisted-output>"}}, tr.Records[0].ContentReplacements())
	assert.Nil(t, tr.Records[0].MicrocompactBoundary())
	assert.Equal(t, &MicrocompactBoundary{Trigger: "auto", PreTokens: 1600, TokensSaved: 60, CompactedToolIDs: []string{"toolu_3"}}, tr.Records[1].MicrocompactBoundary())
	assert.Nil(t, tr.Records[1].ContentReplacements())
	assert.Nil(t, tr.Records[2].ContentReplacements())

	var sc Scan
	sc.update(tr.Records)
	var budget, mc []int
	sc.Each(tr.Records, ScanBudget, func(i int, _ *Record) { budget = append(budget, i) })
	sc.Each(tr.Records, ScanMicrocompact, func(i int, _ *Record) { mc = append(mc, i) })
	assert.Equal(t, []int{0, 2}, budget)
	assert.Equal(t, []int{1}, mc)

	for i, r := range tr.Records {
		var out strings.Builder
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(r))
		assert.Equal(t, lines[i]+"\n", out.String(), "record %d writes back as read", i)
	}
}
