package liveloop

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The generators below write the scripted tools' output: deterministic for a seed, shaped
// like what each tool prints (source code, build logs, search hits, prose), and of a given
// size in bytes. All of the wording is the harness's own.

var (
	identWords = []string{"buffer", "client", "config", "cursor", "decoder", "entry", "event", "handler",
		"index", "ledger", "limit", "loader", "manifest", "offset", "parser", "queue", "reader", "record",
		"request", "result", "router", "scanner", "schema", "session", "shard", "snapshot", "store",
		"stream", "table", "token", "tracker", "window", "worker", "writer"}
	verbWords = []string{"apply", "build", "check", "close", "collect", "decode", "drain", "emit", "encode",
		"fetch", "flush", "load", "merge", "open", "parse", "read", "reset", "resolve", "scan", "send",
		"split", "store", "sync", "trim", "update", "validate", "walk", "write"}
	typeWords = []string{"int", "string", "[]byte", "error", "bool", "time.Duration", "*Config", "[]Entry",
		"map[string]int", "context.Context", "io.Reader", "uint64"}
	proseWords = []string{"the", "a", "service", "returns", "each", "request", "when", "its", "cache",
		"is", "warm", "and", "otherwise", "falls", "back", "to", "reading", "from", "disk", "which",
		"takes", "longer", "on", "first", "start", "configuration", "option", "controls", "how", "many",
		"entries", "are", "kept", "in", "memory", "before", "older", "ones", "evicted", "this", "page",
		"describes", "behaviour", "of", "version", "two", "under", "load", "with", "default", "settings",
		"limits", "apply", "per", "client", "connection", "timeout", "retry", "policy", "documented", "below"}
	logLevels = []string{"INFO", "INFO", "INFO", "DEBUG", "DEBUG", "WARN", "ERROR"}
	pkgDirs   = []string{"internal/store", "internal/queue", "internal/api", "cmd/server", "pkg/client",
		"internal/auth", "internal/index", "pkg/wire", "internal/sched", "web/handlers"}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// fill appends lines from line until b holds n bytes, cutting the last line to fit.
func fill(b *strings.Builder, n int, line func(i int) string) string {
	b.Grow(n)
	for i := 1; b.Len() < n; i++ {
		l := line(i)
		if rest := n - b.Len(); len(l)+1 > rest {
			if rest > 1 {
				b.WriteString(l[:rest-1])
			}
			b.WriteByte('\n')
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// title returns the ASCII word w with its first letter in upper case.
func title(w string) string { return strings.ToUpper(w[:1]) + w[1:] }

// codeLine returns one line of Go-like source code.
func codeLine(r *rand.Rand) string {
	id, verb := pick(r, identWords), pick(r, verbWords)
	switch r.IntN(9) {
	case 0:
		return fmt.Sprintf("func (%c *%s) %s%s(ctx context.Context, n %s) (%s, error) {", id[0], title(id), title(verb), title(pick(r, identWords)), pick(r, typeWords), pick(r, typeWords))
	case 1:
		return fmt.Sprintf("\tif err := %s.%s(%s); err != nil {", id, verb, pick(r, identWords))
	case 2:
		return fmt.Sprintf("\t\treturn nil, fmt.Errorf(\"%s %s: %%w\", err)", verb, id)
	case 3:
		return "\t}"
	case 4:
		return fmt.Sprintf("\t%s := make(map[string]%s, %d)", id, pick(r, typeWords), r.IntN(64))
	case 5:
		return fmt.Sprintf("\tfor i, %s := range %ss {", id, pick(r, identWords))
	case 6:
		return fmt.Sprintf("\t// %s %ss the %s before the %s is %sed.", title(verb), verb, id, pick(r, identWords), pick(r, verbWords))
	case 7:
		return fmt.Sprintf("\t%s.%s = append(%s.%s, %s[i])", id, title(pick(r, identWords)), id, title(pick(r, identWords)), pick(r, identWords))
	default:
		return ""
	}
}

// codeText returns source code of about n bytes.
func codeText(r *rand.Rand, n int) string {
	var b strings.Builder
	return fill(&b, n, func(int) string { return codeLine(r) })
}

// numbered returns text with each line prefixed by its number, as a file viewer prints it.
func numbered(text string) string {
	var b strings.Builder
	b.Grow(len(text) + strings.Count(text, "\n")*8)
	for i, l := range strings.SplitAfter(text, "\n") {
		if l == "" {
			continue
		}
		fmt.Fprintf(&b, "%6d\t%s", i+1, l)
	}
	return b.String()
}

// logText returns a build or test log of about n bytes.
func logText(r *rand.Rand, n int) string {
	var b strings.Builder
	sec := r.IntN(3600)
	return fill(&b, n, func(i int) string {
		sec += r.IntN(3)
		switch r.IntN(6) {
		case 0:
			return fmt.Sprintf("=== RUN   Test%s%s/%s_%d", title(pick(r, verbWords)), title(pick(r, identWords)), pick(r, identWords), r.IntN(40))
		case 1:
			return fmt.Sprintf("--- PASS: Test%s%s (0.%02ds)", title(pick(r, verbWords)), title(pick(r, identWords)), r.IntN(100))
		case 2:
			return fmt.Sprintf("ok  \texample.com/app/%s\t%d.%03ds", pick(r, pkgDirs), r.IntN(9), r.IntN(1000))
		default:
			return fmt.Sprintf("2026-11-30T10:%02d:%02d.%03dZ %s %s: %s %s %s (%d items, %dms)", sec/60%60, sec%60, r.IntN(1000),
				pick(r, logLevels), pick(r, pkgDirs), pick(r, verbWords), pick(r, identWords), pick(r, proseWords), r.IntN(5000), r.IntN(900))
		}
	})
}

// grepText returns search hits of about n bytes: path, line number and the matching line.
func grepText(r *rand.Rand, n int) string {
	var b strings.Builder
	return fill(&b, n, func(int) string {
		return fmt.Sprintf("%s/%s.go:%d:%s", pick(r, pkgDirs), pick(r, identWords), 1+r.IntN(900), codeLine(r))
	})
}

// pathText returns file paths of about n bytes, one a line.
func pathText(r *rand.Rand, n int) string {
	var b strings.Builder
	return fill(&b, n, func(int) string {
		return fmt.Sprintf("%s/%s_%s.go", pick(r, pkgDirs), pick(r, identWords), pick(r, verbWords))
	})
}

// proseText returns paragraphs of about n bytes.
func proseText(r *rand.Rand, n int) string {
	var b strings.Builder
	return fill(&b, n, func(i int) string {
		if i%6 == 0 {
			return ""
		}
		w := make([]string, 8+r.IntN(14))
		for j := range w {
			w[j] = pick(r, proseWords)
		}
		s := strings.Join(w, " ")
		return title(s) + "."
	})
}
