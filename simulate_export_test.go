package agentctx

import "testing"

// RaceDetector exports raceEnabled to the external tests (package agentctx_test).
const RaceDetector = raceEnabled

// CorpusFiles and CodexCorpusFiles export the corpus lists every whole-corpus test walks to
// the external tests.
var (
	CorpusFiles      func(testing.TB) []string = corpusFiles
	CodexCorpusFiles func(testing.TB) []string = codexCorpusFiles
)
