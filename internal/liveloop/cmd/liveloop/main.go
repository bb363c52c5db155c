// Command liveloop runs the closed-loop agent benchmark: an agent loop on agentctx's
// defaults against a fake provider, for as many turns as asked, and prints what it measured
// as a markdown table row.
//
//	go run ./internal/liveloop/cmd/liveloop -adapter anthropic -window 60000 -turns 1000 -summarizer extractive
//	go run ./internal/liveloop/cmd/liveloop -newcomer -turns 1000
//	go run ./internal/liveloop/cmd/liveloop -all -turns 1000
//	go run ./internal/liveloop/cmd/liveloop -producers -turns 1000 -summarizer extractive
//
// One run is one process, whose peak resident set (VmHWM) the row reports. -all runs every
// cell of the matrix (liveloop.Matrix), each in a child process of its own, and prints the
// table. -producers runs the comparison of the collapse producer and session memory
// (liveloop.Producers: 32,000 and 60,000 windows, facts planted, neither, each and both on)
// and prints its table of compactions, folds, extractions and planted facts kept.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/agentctx/agentctx/internal/liveloop"
)

func main() {
	adapter := flag.String("adapter", liveloop.AdapterAnthropic, "the adapter: anthropic or openai")
	window := flag.Int("window", 200_000, "the context window, in tokens")
	turns := flag.Int("turns", 1000, "the model answers to run")
	summarizer := flag.String("summarizer", liveloop.SummarizerExtractive, "the summarizer: extractive or model")
	newcomer := flag.Bool("newcomer", false, "run the newcomer's trial scenario (60k window, Read/Bash/Grep of 2-40 KB, 300 KB in 4 % of calls, three screenshots) instead")
	persist := flag.Bool("persist", false, "write the session to a JSONL file through an Appender and replaced results to a FileStore, in a temporary directory")
	all := flag.Bool("all", false, "run every cell of the matrix, each in its own process, and print the table")
	producers := flag.Bool("producers", false, "compare runs without and with the collapse producer and session memory, facts planted, at the 32k and 60k windows with -summarizer, and print the table")
	noHeader := flag.Bool("noheader", false, "print the row without the table's header")
	verbose := flag.Bool("v", false, "print the run's failures below the row")
	trace := flag.Bool("trace", false, "write a line for each Prepare, request and Recover to standard error")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *all {
		if err := runAll(ctx, *turns, *persist); err != nil {
			fmt.Fprintln(os.Stderr, "liveloop:", err)
			os.Exit(1)
		}
		return
	}
	if *producers {
		if err := runProducers(ctx, *summarizer, *turns); err != nil {
			fmt.Fprintln(os.Stderr, "liveloop:", err)
			os.Exit(1)
		}
		return
	}
	sc := liveloop.Scenario{}
	if *newcomer {
		sc = liveloop.Newcomer(*turns)
	} else {
		sc = cell(*adapter, *window, *summarizer, *turns)
	}
	sc.Persist = *persist
	if *trace {
		sc.Trace = os.Stderr
	}
	m, err := liveloop.Run(ctx, sc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "liveloop:", err)
		os.Exit(1)
	}
	m.PeakRSS = peakRSS()
	if !*noHeader {
		fmt.Println(liveloop.TableHeader())
	}
	fmt.Println(m.Row())
	if *verbose {
		for _, f := range m.Failures() {
			fmt.Println("  - " + f)
		}
	}
}

// cell returns the matrix's scenario for the flags.
func cell(adapter string, window int, summarizer string, turns int) liveloop.Scenario {
	for _, sc := range liveloop.Matrix(turns) {
		if sc.Name == "" && sc.Adapter == adapter && sc.Window == window && sc.Summarizer == summarizer {
			return sc
		}
	}
	// A window outside the matrix: the matrix's script at that window.
	sc := liveloop.Matrix(turns)[0]
	sc.Adapter, sc.Window, sc.Summarizer = adapter, window, summarizer
	return sc
}

// runAll runs every cell in a child process and prints the table.
func runAll(ctx context.Context, turns int, persist bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Println(liveloop.TableHeader())
	began := time.Now()
	for _, sc := range liveloop.Matrix(turns) {
		args := []string{"-noheader", "-turns", strconv.Itoa(turns), "-persist=" + strconv.FormatBool(persist)}
		if sc.Name == "newcomer" {
			args = append(args, "-newcomer")
		} else {
			args = append(args, "-adapter", sc.Adapter, "-window", strconv.Itoa(sc.Window), "-summarizer", sc.Summarizer)
		}
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %d %s: %w: %s", sc.Adapter, sc.Window, sc.Summarizer, err, errOut.String())
		}
		fmt.Print(out.String())
	}
	fmt.Fprintf(os.Stderr, "the matrix took %s\n", time.Since(began).Round(time.Second))
	return nil
}

// runProducers runs the comparison of the collapse producer and session memory one run after
// the other and prints its table.
func runProducers(ctx context.Context, summarizer string, turns int) error {
	fmt.Println(liveloop.ProducersHeader())
	for _, sc := range liveloop.Producers(summarizer, turns) {
		m, err := liveloop.Run(ctx, sc)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Name, err)
		}
		fmt.Println(m.ProducersRow())
		for _, f := range m.Failures() {
			fmt.Println("  - " + f)
		}
	}
	return nil
}

// peakRSS returns the process's peak resident set size (VmHWM), in bytes; 0 where
// /proc/self/status does not say.
func peakRSS() uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
