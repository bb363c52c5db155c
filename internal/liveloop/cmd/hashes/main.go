// Command hashes prints one line per corpus session, window and body: the SHA-256 of the
// request body Prepare builds (extractive summaries, a map result store, a fixed clock) at the
// model's window and at 40,000 tokens, and of the Anthropic params and the OpenAI chat and
// responses params the adapters convert it to. A change that must keep the requests' bytes is
// checked by diffing the list before and after it:
//
//	go run ./internal/liveloop/cmd/hashes > before.txt
//	(make the change)
//	go run ./internal/liveloop/cmd/hashes > after.txt && diff before.txt after.txt
//
// -corpus names the sessions' directory (default ../shared/corpus/claude-code).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/openai"
	"github.com/agentctx/agentctx/summarize"
)

var corpus = flag.String("corpus", filepath.Join("..", "shared", "corpus", "claude-code"), "the `dir` of the sessions")

func main() {
	flag.Parse()
	root := *corpus
	var files []string
	if err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	}); err != nil {
		fmt.Fprintln(os.Stderr, "hashes:", err)
		os.Exit(1)
	}
	sort.Strings(files)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	counter := agentctx.DefaultTokenCounter()
	for _, f := range files {
		recs, model := read(f)
		rel, _ := filepath.Rel(root, f)
		for _, window := range []int{0, 40_000} {
			p, err := agentctx.New(agentctx.Config{Model: model, ContextWindow: window, Tokens: counter,
				Budget: agentctx.BudgetConfig{Store: &agentctx.MapStore{}}, Compact: agentctx.CompactConfig{Summarizer: summarize.Extractive{}},
				Now: func() time.Time { return now }})
			if err != nil {
				fmt.Fprintln(os.Stderr, "hashes:", err)
				os.Exit(1)
			}
			res, err := p.Prepare(context.Background(), agentctx.Input{Records: recs})
			switch {
			case errors.Is(err, agentctx.ErrNoMessages):
				fmt.Printf("%s@%d no messages\n", rel, window)
				continue
			case err != nil:
				fmt.Printf("%s@%d error %s\n", rel, window, err)
				continue
			}
			body, err := res.Request.MarshalJSON()
			line(rel, window, "body", body, err)
			ap, err := anthropic.Params(res.Request, anthropic.Options{})
			line(rel, window, "anthropic", js(ap), err)
			cp, drops, err := openai.ChatParams(res.Request, openai.Options{})
			line(rel, window, "chat", append(js(cp), js(drops)...), err)
			rp, drops, err := openai.ResponsesParams(res.Request, openai.Options{})
			line(rel, window, "responses", append(js(rp), js(drops)...), err)
		}
	}
}

// js is v as encoding/json writes it, or the marshal error as text.
func js(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte("marshal error: " + err.Error())
	}
	return b
}

// line prints the hash of b, or err, for one session, window and body kind.
func line(rel string, window int, kind string, b []byte, err error) {
	if err != nil {
		fmt.Printf("%s@%d %s error %s\n", rel, window, kind, err)
		return
	}
	fmt.Printf("%s@%d %s %x\n", rel, window, kind, sha256.Sum256(b))
}
