package agentctx

import (
	"testing"
)

func TestNormProbeOne(t *testing.T) {
	tr, _ := ReadFile("../shared/corpus/claude-code/spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", ReadOptions{})
	p, _ := New(normConfig())
	res, _ := p.Prepare(t.Context(), Input{Records: tr.Records})
	s := normSketch(res.Request.Messages)
	if len(s) > 3000 { s = s[:3000] }
	t.Log(s)
	st := res.Report.Stage("normalize")
	for _, a := range st.Actions { t.Log(a) }
}
