package liveloop

import (
	"bytes"
	"fmt"
	"go/format"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// Quantiles are the cumulative probabilities a [Dist] gives sizes at.
var Quantiles = [...]float64{0, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99, 1}

// Dist is the size distribution of one tool's results as a small quantile table: Sizes[i] is
// the size, in bytes, at cumulative probability Quantiles[i]. For text tools the size is the
// bytes of the result's text; for [ImageTool] it is the bytes of an image's base64 data.
type Dist struct {
	// Tool is the tool's name as its tool_use blocks carry it, or [ImageTool].
	Tool string
	// Calls is the number of results measured; the scripted model picks tools in proportion.
	Calls int
	// Sizes holds the sizes at [Quantiles], in bytes, non-decreasing.
	Sizes [len(Quantiles)]int
}

// ImageTool is the name of the scripted tool that returns a PNG screenshot, and the [Dist]
// of image sizes.
const ImageTool = "Screenshot"

// MeasuredTools lists the tools [MeasureCorpus] measures, in the order of the table.
var MeasuredTools = []string{"Read", "Bash", "Grep", "Edit", "Write", "WebFetch", "Task", "Glob", ImageTool}

// toolAliases maps a tool name of the corpus onto the measured tool it stands for: Claude
// Code renamed its subagent tool from Task to Agent.
var toolAliases = map[string]string{"Agent": "Task"}

// Sample draws a size from d with r: a uniform draw is mapped through the quantile table,
// interpolated geometrically between neighbouring quantiles (sizes of tool output spread
// over orders of magnitude).
func (d Dist) Sample(r *rand.Rand) int {
	u := r.Float64()
	for i := 1; i < len(Quantiles); i++ {
		if u > Quantiles[i] && i < len(Quantiles)-1 {
			continue
		}
		if d.Sizes[i] == 0 {
			return 0 // an empty result, as a command that prints nothing gives
		}
		lo, hi := float64(max(1, d.Sizes[i-1])), float64(d.Sizes[i])
		f := (u - Quantiles[i-1]) / (Quantiles[i] - Quantiles[i-1])
		return int(math.Round(lo * math.Pow(hi/lo, f)))
	}
	return d.Sizes[len(d.Sizes)-1]
}

// MeasureCorpus reads every Claude Code session (*.jsonl) under dir with
// [transcript.ReadFile] and returns the size distribution of the tool results of each tool of
// [MeasuredTools]: tool names come from the tool_use blocks of the assistant records, sizes
// from the tool_result blocks of the user records (the bytes of their text blocks). The
// [ImageTool] entry measures every PNG image block of the sessions, in a tool result or
// pasted by the user (the corpus holds too few screenshots returned by tools to measure
// alone). Files that hold no records are skipped; damaged lines are skipped as the reader
// skips them.
func MeasureCorpus(dir string) ([]Dist, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("liveloop: no *.jsonl session under %s", dir)
	}
	slices.Sort(files)
	sizes := map[string][]int{}
	for _, f := range files {
		tr, err := transcript.ReadFile(f, transcript.ReadOptions{})
		if err != nil {
			return nil, err
		}
		measureSession(tr.Records, sizes)
	}
	out := make([]Dist, 0, len(MeasuredTools))
	for _, tool := range MeasuredTools {
		s := sizes[tool]
		if len(s) == 0 {
			return nil, fmt.Errorf("liveloop: the corpus under %s holds no result of %s", dir, tool)
		}
		out = append(out, quantiles(tool, s))
	}
	return out, nil
}

// measureSession adds the result sizes of one session's records to sizes, by tool.
func measureSession(records []transcript.Record, sizes map[string][]int) {
	names := map[string]string{}
	for _, r := range records {
		if r.Type != transcript.TypeAssistant || r.Message == nil {
			continue
		}
		for _, b := range r.Message.Content {
			if tu, ok := b.(*transcript.ToolUse); ok {
				name := tu.Name
				if a, ok := toolAliases[name]; ok {
					name = a
				}
				names[tu.ID] = name
			}
		}
	}
	for _, r := range records {
		if r.Type != transcript.TypeUser || r.Message == nil {
			continue
		}
		for _, b := range r.Message.Content {
			switch b := b.(type) {
			case *transcript.Image:
				addImage(b, sizes)
			case *transcript.ToolResult:
				n := 0
				for _, cb := range b.Content {
					switch cb := cb.(type) {
					case *transcript.Text:
						n += len(cb.Text)
					case *transcript.Image:
						addImage(cb, sizes)
					}
				}
				if tool, ok := names[b.ToolUseID]; ok {
					sizes[tool] = append(sizes[tool], n)
				}
			}
		}
	}
}

func addImage(img *transcript.Image, sizes map[string][]int) {
	if img.Source.Type == "base64" && img.Source.MediaType == "image/png" {
		sizes[ImageTool] = append(sizes[ImageTool], len(img.Source.Data))
	}
}

// quantiles returns the table of sizes s (nearest rank).
func quantiles(tool string, s []int) Dist {
	s = slices.Clone(s)
	slices.Sort(s)
	d := Dist{Tool: tool, Calls: len(s)}
	for i, q := range Quantiles {
		k := int(math.Ceil(q*float64(len(s)))) - 1
		d.Sizes[i] = s[min(max(k, 0), len(s)-1)]
	}
	return d
}

// WriteDistTable writes the Go source of the file holding [CorpusDists]: dists as a
// package-level table, with the command that regenerates it.
func WriteDistTable(w io.Writer, dists []Dist) error {
	var b bytes.Buffer
	b.WriteString("// Code generated by go test -run TestCorpusDists -update; DO NOT EDIT.\n\n")
	b.WriteString("package liveloop\n\n")
	b.WriteString("// CorpusDists are the size distributions of the tool results of the shared corpus's Claude\n")
	b.WriteString("// Code sessions, measured by [MeasureCorpus] (bytes at [Quantiles]).\n")
	b.WriteString("var CorpusDists = []Dist{\n")
	for _, d := range dists {
		fmt.Fprintf(&b, "\t{Tool: %q, Calls: %d, Sizes: [len(Quantiles)]int{", d.Tool, d.Calls)
		for i, s := range d.Sizes {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprint(&b, s)
		}
		b.WriteString("}},\n")
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(src)
	return err
}

// distOf returns the distribution of tool in dists.
func distOf(dists []Dist, tool string) (Dist, bool) {
	for _, d := range dists {
		if d.Tool == tool {
			return d, true
		}
	}
	return Dist{}, false
}
