package agentctx

// RaceDetector exports raceEnabled to the external tests (package agentctx_test).
const RaceDetector = raceEnabled
