package agentctx_test

import (
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/stretchr/testify/require"
)

// BenchmarkTokenCount compares the counter with tiktoken-go (the reference, which CountTokens
// ran before) on the texts of the generated 2,000-turn session and on a 3 MB corpus mix, for
// both encodings. Both give the same tokens/op.
func BenchmarkTokenCount(b *testing.B) {
	var generated []string
	for _, r := range testkit.Generate(2000, testkit.Options{Seed: 1}) {
		if r.Message == nil {
			continue
		}
		for _, bl := range r.Message.Content {
			agentctx.WalkTexts(bl, func(s string) {
				if s != "" {
					generated = append(generated, s)
				}
			})
		}
	}
	sets := []struct {
		name  string
		texts []string
	}{{"generated", generated}}
	if texts, source := agentctx.CorpusTexts(b, 3<<20); source == "corpus" {
		sets = append(sets, struct {
			name  string
			texts []string
		}{"corpus", texts})
	}
	cl, err := agentctx.NewTiktokenCounter(agentctx.EncodingCL100K)
	require.NoError(b, err)
	o, err := agentctx.NewTiktokenCounter(agentctx.EncodingO200K)
	require.NoError(b, err)
	for _, set := range sets {
		size := 0
		for _, s := range set.texts {
			size += len(s)
		}
		for _, enc := range []*agentctx.TiktokenCounter{cl, o} {
			for _, mode := range []struct {
				name  string
				count func(string) int
			}{
				{"new", enc.CountTokens},
				{"reference", func(s string) int { return agentctx.CountReference(b, enc, s) }},
			} {
				b.Run(set.name+"/"+enc.Encoding()+"/"+mode.name, func(b *testing.B) {
					b.ReportAllocs()
					b.SetBytes(int64(size))
					tokens := 0
					for b.Loop() {
						tokens = 0
						for _, s := range set.texts {
							tokens += mode.count(s)
						}
					}
					b.ReportMetric(float64(tokens), "tokens/op")
				})
			}
		}
	}
}
