package simulate_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/simulate"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fidelityTolerance bounds how far, in total, the replayed provider input of a session may be
// from the input its usage records, over the turns the file can tell (see TestReplayFidelity).
// The calibration fits one line — provider tokens = fixed part + ratio × counted tokens — on
// a session's first 32 responses, while the provider's tokenizer counts code and prose at
// different ratios to the library's (a two-ratio fit on the corpus finds about 1.1 for tool
// results against 1.4–2.7 for the rest): a session whose mix of the two drifts after those
// responses drifts from the line. On the corpus the drift in scope is at most 3.3 %
// (37f83ec9: 73 turns after the fit, whose own slope is 1.42 against the fit's 1.55); 2.4 %
// the next (fa812bfe, 94 turns after). 4 % holds it with room for the rounding of a new
// session of the kind; the sessions of up to 32 responses match by construction.
const fidelityTolerance = 0.04

// readTolerance is how far the replay's cache-read share over the turns in scope may fall
// below the real one: what is left once the replay holds the client's fixed prefix warm where
// the file's first response of each model read it is rounding and the client's own
// breakpoints placed a block apart from the library's (1.5 points at most on the corpus).
const readTolerance = 0.03

// TestReplayFidelity replays every Claude Code session of the corpus that carries usage the
// way it really ran — --replay file, the file's own compactions followed, no decision the
// file did not make (no tool-result budget, no microcompact, no auto-compact), the session's
// thinking, each turn at its response's model, the system prompt marked for the cache as
// Claude Code marks it, the fixed prefix estimated and the figures in provider tokens as
// `agentctx simulate` does by default — and compares each turn's provider input (input +
// cache read + cache write) with the usage the file records.
//
// Asserted, for each session the file can tell: over its turns up to the first where the file
// and the request really sent part ways for a reason the file shows — the file's own
// compaction (the client then sends a summary and re-attached files the file does not hold in
// full) or a reported prompt smaller than the previous one of the same model (the client
// cleared something the file keeps) — the replayed input is within fidelityTolerance of the
// real one in total, and the part of it read from the cache is at least the real part less
// readTolerance (the simulated cache reads what the provider's did; it reads more where the
// client broke its own prefix, which the library does not). A session the file cannot tell is reported, not asserted: its usage does
// not fit a line (the calibration's slope is outside 0.5–2 and falls back to a ratio of 1: its
// prompts grew by more than twice the counted requests, so the client sent what the file does
// not hold), or the file
// leaves out what the requests carried — thinking blocks whose text the file omits, tool
// definitions loaded by reference (tool_reference), images, whose tokens the library
// estimates. Up to the calibration's 32 responses the total matches by construction (the
// fit's intercept is the fixed prefix): the assertion bites on the turns after them, and the
// per-turn error (the worst is logged) shows how well one line follows the session.
//
// It skips without ../shared/corpus.
func TestReplayFidelity(t *testing.T) {
	var asserted, reported int
	for _, f := range corpusFiles(t, 1) {
		if !strings.Contains(f, "claude-code") {
			continue
		}
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		require.NoError(t, err)
		cfg := agentctx.Config{Model: sessionModel(tr.Records)}
		cfg.Budget.Disable, cfg.Microcompact.Disable, cfg.Compact.DisableAuto = true, true, true
		cfg.Cache.SystemMarker = true
		sim, err := simulate.Run(t.Context(), tr.Records, cfg, simulate.Options{Replay: simulate.ReplayFile,
			EstimatePrefix: true, Calibrate: true, SessionThinking: true, ResponseModels: true})
		require.NoError(t, err, f)
		assert.Zero(t, sim.Totals.Unexplained, "%s: no prefix break goes unexplained", f)
		if sim.Real == nil {
			continue
		}
		fid := measureFidelity(tr.Records, sim)
		if fid.turns == 0 {
			continue
		}
		why := fid.untold
		if u := sim.Calibration.Unfit; why == "" && strings.HasPrefix(u, "the slope") {
			why = "calibration not fitted: " + u
		}
		name := filepath.Base(f)
		t.Logf("%-44.44s %4d turns  real %9d  replay %9d  ×%.3f | in scope %4d turns ×%.3f, worst turn %+.3f, read share %.3f/%.3f | calibration %.4f/%d %s",
			name, fid.turns, fid.real, fid.replay, ratio(fid.replay, fid.real), fid.scoped, ratio(fid.scopedReplay, fid.scopedReal),
			fid.worst, ratio(fid.readReplay, fid.scopedReplay), ratio(fid.readReal, fid.scopedReal), sim.Calibration.Ratio, sim.Calibration.Responses, why)
		if why != "" {
			reported++
			continue
		}
		asserted++
		assert.InDelta(t, 1, ratio(fid.scopedReplay, fid.scopedReal), fidelityTolerance,
			"%s: the replayed input over the %d turns in scope is within %.0f %% of the real one", name, fid.scoped, 100*fidelityTolerance)
		assert.GreaterOrEqual(t, ratio(fid.readReplay, fid.scopedReplay), ratio(fid.readReal, fid.scopedReal)-readTolerance,
			"%s: the replay reads from the cache what the provider read", name)
	}
	if asserted+reported == 0 {
		t.Skip("no corpus session carries usage")
	}
	t.Logf("%d sessions asserted, %d reported only", asserted, reported)
}

// fidelity is what TestReplayFidelity measures of one session: over the turns with usage that
// were sent, the real and replayed provider input, in all and over the turns in scope, and
// the worst error of a turn in scope; untold says why the file cannot tell the session's
// requests (empty when it can).
type fidelity struct {
	turns, real, replay              int
	scoped, scopedReal, scopedReplay int
	readReal, readReplay             int // cache reads over the turns in scope
	worst                            float64
	untold                           string
}

// measureFidelity compares sim's turns with the usage of records (see TestReplayFidelity).
func measureFidelity(records []transcript.Record, sim *simulate.Result) fidelity {
	var fid fidelity
	model := map[string]string{} // response uuid → model
	boundary := -1               // the line of the file's first compact boundary
	var thinking, references, images int
	for i := range records {
		r := &records[i]
		if r.IsCompactBoundary() && boundary < 0 {
			boundary = r.Line
		}
		if r.Message == nil {
			continue
		}
		model[r.UUID] = r.Message.Model
		for _, b := range r.Message.Content {
			switch b := b.(type) {
			case *transcript.Thinking:
				if b.Thinking == "" {
					thinking++
				}
			case *transcript.Image:
				images++
			case *transcript.ToolResult:
				for _, c := range b.Content {
					switch c.(type) {
					case *transcript.ToolReference:
						references++
					case *transcript.Image:
						images++
					}
				}
			}
		}
	}
	var untold []string
	for _, u := range []struct {
		n    int
		what string
	}{{thinking, "thinking blocks without their text"}, {references, "tools loaded by reference"}, {images, "images"}} {
		if u.n > 0 {
			untold = append(untold, fmt.Sprintf("%d %s", u.n, u.what))
		}
	}
	fid.untold = strings.Join(untold, ", ")
	last := map[string]int{} // each model's last real input
	inScope := true
	for _, tu := range sim.Turns {
		if tu.Real == nil || tu.Error != "" {
			continue
		}
		real, replay, m := tu.Real.Input(), tu.Input(), model[tu.UUID]
		if boundary >= 0 && tu.Line > boundary || real < last[m] {
			inScope = false
		}
		last[m] = real
		fid.turns++
		fid.real += real
		fid.replay += replay
		if !inScope {
			continue
		}
		fid.scoped++
		fid.scopedReal += real
		fid.scopedReplay += replay
		fid.readReal += tu.Real.CacheRead
		fid.readReplay += tu.CacheRead
		if e := ratio(replay, real) - 1; e*e > fid.worst*fid.worst {
			fid.worst = e
		}
	}
	return fid
}

// ratio is a / b, 0 when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
