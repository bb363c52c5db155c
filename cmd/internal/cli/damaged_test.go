package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keptTailBridge is a small session with a record whose message cannot be read (line 11) and
// a torn line (45) inside the tail a compaction keeps.
var keptTailBridge = filepath.Join(repo, "testdata", "damaged", "kept-tail-bridge.jsonl")

// TestRequestPrintsDegradations: request says on stderr what the turn did short of the policy
// (Report.Degradations), as inspect shows it, besides the damage and the chain's breaks.
func TestRequestPrintsDegradations(t *testing.T) {
	code, body, errOut := runCmd(t, "request", now, "--window=2000", "--store="+t.TempDir(), keptTailBridge)
	require.Equal(t, 0, code, errOut)
	require.NotEmpty(t, body)
	for _, want := range []string{
		"kept-tail-bridge.jsonl:11: field message",
		"kept-tail-bridge.jsonl:45: torn line",
		"kept-tail-bridge.jsonl:45: unreadable line, most likely the missing parent",
		"agentctx: degraded: summary_cut: ",
		"agentctx: degraded: compact_rung: the compaction went down its ladder to rung smaller_tail",
	} {
		assert.Contains(t, errOut, want)
	}
	code, out, inspectErr := runCmd(t, "inspect", now, "--window=2000", "--store="+t.TempDir(), keptTailBridge)
	require.Equal(t, 0, code, inspectErr)
	require.Contains(t, out, "degraded: ")
	for line := range strings.SplitSeq(out, "\n") {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "degraded: "); ok {
			assert.Contains(t, errOut, "agentctx: degraded: "+d, "request prints what inspect shows")
		}
	}
}

// TestRequestDamagedCorpusKeptTail: a corpus session with a torn line inside the tail a
// compaction keeps (line 219) and a message that cannot be read (line 113) keeps its tail,
// reported as bridged, as the undamaged session does, instead of going down to the latest
// input alone. Skipped without ../shared/corpus.
func TestRequestDamagedCorpusKeptTail(t *testing.T) {
	src := filepath.Join(repo, "..", "shared", "corpus", "claude-code", "codemie-code", "session-624a4a58.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Skip("../shared/corpus not found; the damaged corpus session is skipped")
	}
	lines := strings.Split(string(data), "\n")
	require.Greater(t, len(lines), 219)
	lines[112] = strings.Replace(lines[112], `"message":{`, `"message":42,"was":{`, 1)
	lines[218] = lines[218][:len(lines[218])/2]
	damaged := filepath.Join(t.TempDir(), "session-624a4a58.jsonl")
	require.NoError(t, os.WriteFile(damaged, []byte(strings.Join(lines, "\n")), 0o644))

	for _, tc := range []struct{ name, file, want string }{
		{"undamaged", src, "records kept verbatim"},
		{"damaged", damaged, "the kept tail is bridged over line 219 (unreadable)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{now, "--window=40000", "--max-tokens=4096", "--store=" + t.TempDir(), tc.file}
			code, out, errOut := runCmd(t, append([]string{"inspect"}, args...)...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "rung tail;")
			assert.Contains(t, out, tc.want)
			assert.NotContains(t, out, "not installed")
			code, body, errOut := runCmd(t, append([]string{"request"}, args...)...)
			require.Equal(t, 0, code, errOut)
			assert.NotContains(t, errOut, "compact_rung")
			assert.Contains(t, body, "The most recent messages come after it, unchanged.")
			if tc.name == "damaged" {
				assert.Contains(t, errOut, "session-624a4a58.jsonl:113: field message")
				assert.Contains(t, errOut, "session-624a4a58.jsonl:219: unreadable line")
			}
		})
	}
}
