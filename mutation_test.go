package agentctx

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	mutation     = flag.Bool("mutation", false, "run TestMutation: apply each deliberate bug of mutants to a copy of the tree and run the tests")
	mutationRev  = flag.String("mutation.rev", "", "TestMutation: mutate this git revision instead of the working tree")
	mutationOnly = flag.String("mutation.only", "", "TestMutation: only the mutants whose name matches this regexp")
	mutationRun  = flag.String("mutation.run", "", "TestMutation: the tests to run against each mutant (go test -run); empty: all of them")
)

// mutant is one deliberate bug: the source text from, found exactly once in file, becomes to.
type mutant struct {
	name, file, from, to, bug string
}

// mutants are the bugs TestMutation plants. Each must be caught by at least one test; a mutant
// whose text is no longer in its file fails the check, so keep them in step with the code.
var mutants = []mutant{
	{"recover-continuations-unbounded", "recovery.go",
		"if n >= maxContinuations {",
		"if n >= maxContinuations+1 {",
		"Recover allows a fourth continuation turn after responses cut at max_tokens"},
	{"recover-ptl-twice", "recovery.go",
		"if d := st.ptl; d != nil && st.ptlPos > st.responsePos {",
		"if d := st.ptl; d != nil && false {",
		"Recover compacts again on a second prompt-too-long with no response since the first"},
	{"recover-media-forgotten", "recovery.go",
		"rec, ok := t.recovery.stripped[transcript.MediaHash(src)]",
		"rec, ok := t.recovery.stripped[transcript.MediaHash(src)+\"x\"]",
		"a refused media block is sent again on the turns after the decision that strips it"},
	{"chain-split-records", "transcript/chain.go",
		"if m, ok := prevM, prevOK; ok && !OtherThread(r, c.Leaf) && !b.dup(i) {",
		"if m, ok := prevM, prevOK; false && ok && !OtherThread(r, c.Leaf) && !b.dup(i) {",
		"the chain no longer re-attaches the other records of a split assistant response"},
	{"snip-tool-pairs", "snip.go",
		"if !seen[v] {",
		"if !seen[v] && false {",
		"snip no longer removes whole tool pairs (only the records it names)"},
	{"validate-server-ids", "provider/validate_messages.go",
		"if c.srvIDs[b.ID] {",
		"if false && c.srvIDs[b.ID] {",
		"Validate no longer checks that server_tool_use ids are unique"},
	{"validate-thinking-type", "provider/validate.go",
		`c.add("4.8", "thinking", "thinking type %q is not enabled, disabled or adaptive", th.Type)`,
		"_ = th.Type",
		"Validate no longer reports an unknown thinking type"},
	{"chain-sidechains", "transcript/chain.go",
		"return leaf != nil && r.IsSidechain != leaf.IsSidechain",
		"return false",
		"the chain no longer separates sidechain (subagent) records from the main conversation"},
	{"budget-cap-off-by-one", "budget.go",
		"} else if e.size <= limit && total <= maxMsg {",
		"} else if e.size <= limit+1 && total <= maxMsg {",
		"the budget keeps a result one character over the per-result cap"},
	{"budget-message-cap", "budget.go",
		"} else if e.size <= limit && total <= maxMsg {",
		"} else if e.size <= limit {",
		"the budget ignores the per-message cap"},
	{"microcompact-keeps-oldest", "microcompact.go",
		"for _, id := range ids[len(ids)-k:] {",
		"for _, id := range ids[:k] {",
		"microcompact keeps the oldest compactable results instead of the newest"},
	{"cache-marker-per-message", "cache.go",
		"break place",
		"continue place",
		"the cache stage puts a marker on every message instead of one"},
	{"normalize-misplaced-results", "normalize_pairing.go",
		"case candidates[id] > 1:",
		"case candidates[id] > 0:",
		"normalize drops every tool_result away from its tool_use instead of moving it"},
	{"normalize-silent-drop", "normalize_messages.go",
		`n.drop(nb, fmt.Sprintf("%s block not accepted in a %s message", nb.b.Kind(), m.role))`,
		"// dropped without a report",
		"normalize drops an unsupported block without reporting it"},
	{"collapse-span-pairs", "collapse.go",
		"for changed := true; changed; {",
		"for changed := false; changed; {",
		"collapse no longer widens a span over tool pairs and split responses"},
	{"chain-interrupt-notices", "transcript/chain.go",
		"if p := parentOf(r, b.relink); p != \"\" && r.IsInterruptNotice() && !b.dup(i) {",
		"if p := parentOf(r, b.relink); p != \"\" && r.IsInterruptNotice() && false && !b.dup(i) {",
		"the chain no longer attaches interrupt notices written under tool results"},
	{"compact-tail-splits-pairs", "compact_view.go",
		"for pl.minCut > pl.lowest && !ok[pl.minCut] {",
		"for false && pl.minCut > pl.lowest && !ok[pl.minCut] {",
		"compaction may start its kept tail between a tool_use and its result"},
	{"compact-no-verify-drop", "compact.go",
		"case done.under():",
		"case true:",
		"compaction installs its first rung without checking that the request came under the threshold"},
	{"compact-threshold-off-by-one", "compact.go",
		"if pr.Tokens < pr.Levels.Threshold && !tooSmall && !tooBig && !failed {",
		"if pr.Tokens <= pr.Levels.Threshold && !tooSmall && !tooBig && !failed {",
		"auto-compact waits for the pressure to pass the threshold instead of reaching it"},
	{"compact-ptl-extra-retry", "compact_view.go",
		"if calls > maxPTLRetries {",
		"if calls > maxPTLRetries+1 {",
		"a summary the provider finds too long is retried a fourth time"},
	{"pressure-nan-ratio", "pressure.go",
		"f.v > maxRatio || math.IsNaN(f.v))",
		"f.v > maxRatio)",
		"New accepts a NaN calibration ratio"},
	{"pin-budget-plus-one", "pin.go",
		"; total > limit {",
		"; total > limit+1 {",
		"pinning may pass its budget by one token"},
	{"pin-budget-double", "pin.go",
		"; total > limit {",
		"; total > limit*2 {",
		"pinning may take twice its budget"},
	{"rehydrate-file-room-double", "rehydrate.go",
		"head := fmt.Sprintf(fileHead, path)\n\t\troom := min(each, total-used)",
		"head := fmt.Sprintf(fileHead, path)\n\t\troom := 2 * min(each, total-used)",
		"a re-read file may take twice its room"},
	{"simcache-min-prefix-edge", "simulate/simcache.go",
		"if ttl == 0 || pos[m].tokens < pc.minTokens {",
		"if ttl == 0 || pos[m].tokens <= pc.minTokens {",
		"the simulated cache refuses a prefix of exactly the minimum cacheable size"},
	{"compact-thrash-window-edge", "transcript/history_walk.go",
		"if manual || !w.seen || len(w.Open) >= w.limit {",
		"if manual || !w.seen || len(w.Open) >= w.limit-1 {",
		"a compaction exactly ThrashTurns responses after the one before no longer counts as a refill"},
	{"compact-breaker-never-opens", "compact.go",
		"if h.failures >= c.maxFailures() {",
		"if false && h.failures >= c.maxFailures() {",
		"auto-compact keeps calling a failing summarizer: the circuit breaker never opens"},
}

// TestMutation measures the suite's strength (run it with -mutation; see README,
// "Contributing"): it copies the tree (the working tree, or -mutation.rev) to a temporary
// directory, checks that the copy's tests pass, then applies each mutant alone and runs the
// tests again, printing for each whether it was caught and by which tests. The tree itself is
// never modified. It fails when a mutant survives.
func TestMutation(t *testing.T) {
	if !*mutation {
		t.Skip("mutation check: run with -mutation (takes about ten minutes)")
	}
	only, err := regexp.Compile(*mutationOnly)
	if err != nil {
		t.Fatalf("-mutation.only: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "agentctx")
	if err := copyTree(dir, *mutationRev); err != nil {
		t.Fatal(err)
	}
	// The copy reaches the shared corpus as ../shared, as the tree does.
	if shared, err := filepath.Abs(filepath.Join("..", "shared")); err == nil {
		if _, err := os.Stat(shared); err == nil {
			if err := os.Symlink(shared, filepath.Join(filepath.Dir(dir), "shared")); err != nil {
				t.Fatal(err)
			}
		}
	}
	what := "the working tree"
	if *mutationRev != "" {
		what = "revision " + *mutationRev
	}
	var pkgs []string // the packages of the mutants' files
	for _, m := range mutants {
		if !only.MatchString(m.name) {
			continue
		}
		for _, pkg := range mutantPackage(m) {
			if !slices.Contains(pkgs, pkg) {
				pkgs = append(pkgs, pkg)
			}
		}
	}
	report := t.Logf
	start := time.Now()
	if failed, out, err := runMutantTests(dir, pkgs...); err != nil || len(failed) > 0 {
		t.Fatalf("the tests of %s fail before any mutation (%v, %v):\n%s", what, failed, err, out)
	}
	report("mutation check of %s: unmutated tests pass (%s)", what, time.Since(start).Round(time.Second))
	caught, ran := 0, 0
	for _, m := range mutants {
		if !only.MatchString(m.name) {
			continue
		}
		ran++
		path := filepath.Join(dir, m.file)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(orig, []byte(m.from)); n != 1 {
			t.Errorf("mutant %s: %q occurs %d times in %s, want once: update the mutant", m.name, m.from, n, m.file)
			continue
		}
		if err := os.WriteFile(path, bytes.Replace(orig, []byte(m.from), []byte(m.to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		failed, out, err := runMutantTests(dir, mutantPackage(m)...)
		if werr := os.WriteFile(path, orig, 0o644); werr != nil {
			t.Fatal(werr)
		}
		took := time.Since(start).Round(time.Second)
		switch {
		case len(failed) > 0:
			caught++
			report("CAUGHT    %-28s %s (%s)\n          by %s", m.name, m.bug, took, strings.Join(failed, ", "))
		case err != nil:
			t.Errorf("mutant %s: the tests did not run: %v\n%s", m.name, err, out)
		default:
			report("SURVIVED  %-28s %s (%s)", m.name, m.bug, took)
			t.Errorf("mutant %s survived: no test catches that %s", m.name, m.bug)
		}
	}
	report("mutation score of %s: %d of %d mutants caught", what, caught, ran)
}

// mutantPackage is the package of m's file, as go test names it from the tree's root. The
// root package's tests exercise the packages below it too (a chain mutant is caught by the
// Pipeline's tests as well as the chain's), so a mutant of another package runs both.
func mutantPackage(m mutant) []string {
	if dir := path.Dir(m.file); dir != "." {
		return []string{".", "./" + dir}
	}
	return []string{"."}
}

// runMutantTests runs the tests of the packages pkgs of the tree in dir and returns the
// top-level tests that failed. err is set when go test failed without a failing test (a build
// error, a timeout).
func runMutantTests(dir string, pkgs ...string) (failed []string, out []byte, err error) {
	args := []string{"test", "-count=1", "-timeout=20m"}
	if *mutationRun != "" {
		args = append(args, "-run", *mutationRun)
	}
	cmd := exec.Command("go", append(args, pkgs...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mutantEnv+"=1") // TestMutantsApply stands aside
	out, err = cmd.CombinedOutput()
	for line := range strings.Lines(string(out)) {
		if name, ok := strings.CutPrefix(line, "--- FAIL: "); ok {
			name, _, _ = strings.Cut(name, " ")
			if !slices.Contains(failed, name) {
				failed = append(failed, name)
			}
		}
	}
	if len(failed) > 0 {
		return failed, out, nil
	}
	return nil, out, err
}

// copyTree writes the package's files into dir: the files git knows in the working tree
// (tracked, and untracked but not ignored), or those of revision rev.
func copyTree(dir, rev string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if rev != "" {
		cmd := exec.Command("git", "archive", "--format=tar", rev)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		archive, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("git archive %s: %v: %s", rev, err, stderr.String())
		}
		return untar(dir, bytes.NewReader(archive))
	}
	list, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %v", err)
	}
	for name := range strings.SplitSeq(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		data, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	return nil
}

func untar(dir string, r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(h.Name)), data); err != nil {
			return err
		}
	}
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// mutantEnv is set in the environment of the tests TestMutation runs on a mutated copy.
const mutantEnv = "AGENTCTX_MUTANT"

// TestMutantsApply keeps mutants in step with the code on every run, not only under
// -mutation: each mutant's text is found exactly once in its file. On a mutated copy it
// stands aside, since it would catch every mutant by its text alone.
func TestMutantsApply(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Skip("a mutated copy: TestMutation measures the other tests")
	}
	for _, m := range mutants {
		src, err := os.ReadFile(m.file)
		require.NoError(t, err, m.name)
		assert.Equal(t, 1, strings.Count(string(src), m.from), "%s: %q must occur once in %s", m.name, m.from, m.file)
	}
}
