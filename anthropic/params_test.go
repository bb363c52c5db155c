package anthropic_test

import (
	"encoding/json"
	"testing"

	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/internal/providertest"
	"github.com/agentctx/agentctx/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkSameJSON asserts that the SDK's params for req marshal to the JSON of
// req.MarshalJSON.
func checkSameJSON(t *testing.T, name string, req provider.Request) {
	t.Helper()
	want, err := req.MarshalJSON()
	require.NoError(t, err, name)
	p, err := anthropic.Params(req, anthropic.Options{})
	require.NoError(t, err, name)
	got, err := json.Marshal(p)
	require.NoError(t, err, name)
	assert.Empty(t, providertest.JSONDiff(want, got), "%s: the SDK params marshal to other JSON than the request", name)
}

func TestParamsGolden(t *testing.T) {
	for _, c := range providertest.Goldens(t, "../testdata/cases") {
		checkSameJSON(t, c.Name, c.Request)
	}
}

func TestParamsCorpus(t *testing.T) {
	cases := providertest.Corpus(t, "..")
	edits := 0
	for _, c := range cases {
		checkSameJSON(t, c.Name, c.Request)
		if len(c.Request.Betas) > 0 {
			edits++
		}
	}
	t.Logf("%d corpus requests, %d with cache edits", len(cases), edits)
	assert.Positive(t, edits, "the cached configuration makes cache_edits somewhere in the corpus")
}
