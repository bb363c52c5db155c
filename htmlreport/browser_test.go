package htmlreport

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/internal/testkit"
	"github.com/agentctx/agentctx/transcript"
)

var updateScreenshot = flag.Bool("update", false, "rewrite docs/report.png, the README's screenshot, from TestBrowserScreenshot")

// chromiumPath is where Debian's chromium package puts the browser.
const chromiumPath = "/usr/bin/chromium"

// chromium runs headless Chromium with args on a fresh profile, with its own background
// traffic off, and returns what it printed on stdout and how long it took. It skips the test
// when Chromium is not installed.
func chromium(t *testing.T, args ...string) ([]byte, time.Duration) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no Chromium at %s: install Debian's chromium package (apt-get install -y chromium) to run the browser tests", chromiumPath)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, chromiumPath, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	require.NoError(t, err, "chromium %s:\n%s", strings.Join(args, " "), stderr.String())
	return stdout.Bytes(), took
}

// writePage builds the page of records and writes it to a file, returning its file:// URL.
func writePage(t *testing.T, records []transcript.Record, cfg agentctx.Config, title string) (string, int64) {
	t.Helper()
	p, err := Build(t.Context(), records, cfg, Options{Title: title})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	require.NoError(t, err)
	n, err := p.WriteTo(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return "file://" + path, n
}

// bundled reads a bundled session.
func bundled(t *testing.T, name string) []transcript.Record {
	t.Helper()
	tr, err := transcript.ReadFile(filepath.Join("..", "testdata", "sessions", name), transcript.ReadOptions{})
	require.NoError(t, err)
	return tr.Records
}

// TestBrowserScreenshot opens the page of a bundled session that compacts in headless
// Chromium: the screenshot has the window's size and is mostly drawn, and the script built
// the detail of the turn it opens first (the compaction). With -update it rewrites
// docs/report.png.
func TestBrowserScreenshot(t *testing.T) {
	name := "codemie-code/compacted-624a4a58.jsonl"
	url, _ := writePage(t, bundled(t, name), agentctx.Config{Model: "claude-sonnet-4-5", ContextWindow: 40_000}, "testdata/sessions/"+name)
	shot := filepath.Join(t.TempDir(), "shot.png")
	const w, h = 1400, 1700
	_, took := chromium(t, "--screenshot="+shot, "--window-size=1400,1700", "--virtual-time-budget=5000", url)
	t.Logf("screenshot in %v", took)
	f, err := os.Open(shot)
	require.NoError(t, err)
	img, err := png.Decode(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, w, h), img.Bounds())
	drawn, colours := inked(img)
	t.Logf("%.1f%% of the pixels drawn, %d colours", 100*drawn, colours)
	assert.Greater(t, drawn, 0.05, "the page is drawn, not blank")
	assert.Greater(t, colours, 20, "the charts' colours are there")

	dom, _ := chromium(t, "--dump-dom", "--virtual-time-budget=5000", url)
	for _, want := range []string{"What the model saw", "Compaction: compacted", "What the summary kept by name", "The window by part", "messages</h3>"} {
		assert.Contains(t, string(dom), want, "the script built the turn's detail")
	}
	if *updateScreenshot {
		out := filepath.Join("..", "docs", "report.png")
		var b bytes.Buffer
		require.NoError(t, (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, img))
		require.NoError(t, os.WriteFile(out, b.Bytes(), 0o644))
		t.Logf("updated %s (%d bytes)", out, b.Len())
	}
}

// inked returns the share of img's pixels that are not the page's white background, and how
// many distinct colours it has (up to 1,000).
func inked(img image.Image) (float64, int) {
	b := img.Bounds()
	white := color.RGBAModel.Convert(color.White)
	n, seen := 0, map[color.Color]bool{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y))
			if c != white {
				n++
			}
			if len(seen) < 1000 {
				seen[c] = true
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy()), len(seen)
}

// TestBrowserLong opens the page of a 5,000-turn session: Chromium loads it, the script
// builds the last turn's detail and the page is drawn within seconds.
func TestBrowserLong(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("replays 5,000 turns; the race detector has nothing concurrent to find in a replay, and the plain run opens the page")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no Chromium at %s: install Debian's chromium package (apt-get install -y chromium) to run the browser tests", chromiumPath)
	}
	url, n := writePage(t, testkit.Generate(5000, testkit.Options{Seed: 1}), agentctx.Config{Model: "claude-sonnet-4-5"}, "generated")
	shot := filepath.Join(t.TempDir(), "shot.png")
	plain := filepath.Join(t.TempDir(), "plain.html")
	require.NoError(t, os.WriteFile(plain, []byte("<!DOCTYPE html><title>plain</title><p>plain"), 0o644))
	_, start := chromium(t, "--screenshot="+shot, "--window-size=1400,1700", "file://"+plain)
	_, took := chromium(t, "--screenshot="+shot, "--window-size=1400,1700", url+"#turn-5000")
	t.Logf("5,000 turns: a page of %d bytes loaded, turn 5,000 opened and drawn in %v; a plain page in %v (Chromium's start)", n, took, start)
	assert.Less(t, took-start, 30*time.Second)
	f, err := os.Open(shot)
	require.NoError(t, err)
	img, err := png.Decode(f)
	require.NoError(t, f.Close())
	require.NoError(t, err)
	// Below the timeline is the turn's detail, which the script draws.
	detail, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	require.True(t, ok)
	drawn, _ := inked(detail.SubImage(image.Rect(0, 1300, 1400, 1700)))
	assert.Greater(t, drawn, 0.02, "the script drew the turn's detail")
}

// TestBrowserOffline opens the page of a session whose text holds markup, script and event
// handlers with every request sent to a proxy that counts them: the page sends none, runs no
// script of the session's and shows its text as text. A control page that loads an image does
// reach the proxy, so the count can see a request.
func TestBrowserOffline(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("no Chromium at %s: install Debian's chromium package (apt-get install -y chromium) to run the browser tests", chromiumPath)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	// Chromium itself calls Google's update, time and account hosts whatever the page and
	// the flags (seen with Chromium 156): those are left out; anything else is the page's.
	var (
		mu    sync.Mutex
		hosts []string
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			host := "(unread)"
			if f := strings.Fields(line); len(f) >= 2 {
				host = f[1]
				if u, err := url.Parse(f[1]); err == nil && u.Host != "" {
					host = u.Host
				}
			}
			mu.Lock()
			hosts = append(hosts, host)
			mu.Unlock()
		}
	}()
	pageRequests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, h := range hosts {
			name, _, _ := strings.Cut(h, ":")
			if !strings.HasSuffix(name, ".google.com") && !strings.HasSuffix(name, ".googleapis.com") && !strings.HasSuffix(name, ".gstatic.com") {
				out = append(out, h)
			}
		}
		return out
	}
	proxy := []string{"--proxy-server=http://" + ln.Addr().String(), "--proxy-bypass-list=<-loopback>", "--virtual-time-budget=3000", "--dump-dom"}

	control := filepath.Join(t.TempDir(), "control.html")
	require.NoError(t, os.WriteFile(control, []byte(`<!DOCTYPE html><title>control</title><img src="http://agentctx.invalid/x.png">`), 0o644))
	chromium(t, append(proxy, "file://"+control)...)
	require.Eventually(t, func() bool { return slices.Contains(pageRequests(), "agentctx.invalid") }, 5*time.Second, 50*time.Millisecond,
		"the control page's image reaches the proxy: the check can see a request (%v)", pageRequests())

	mu.Lock()
	hosts = nil
	mu.Unlock()
	page, _ := writePage(t, hostileSession(t), agentctx.Config{Model: "claude-sonnet-4-5"}, "evil</title><script>document.title='pwned'</script>")
	dom, _ := chromium(t, append(proxy, page)...)
	time.Sleep(200 * time.Millisecond)
	assert.Empty(t, pageRequests(), "no request leaves the page")
	assert.NotContains(t, string(dom), "<title>pwned", "no script of the session's ran")
	assert.NotContains(t, string(dom), "<img", "no element of the session's")
	assert.Contains(t, string(dom), "&lt;img src=http://agentctx.invalid/y.png onerror=", "the session's markup is text")
	assert.Contains(t, string(dom), "Turn 2", "the page's own script ran")
}

// hostileSession is a session whose prompt and tool output hold markup, script, event
// handlers and control characters.
func hostileSession(t *testing.T) []transcript.Record {
	t.Helper()
	const evil = `</script><img src=http://agentctx.invalid/y.png onerror=\"document.title='pwned'\"><script>document.title='pwned'</script> \u0000\u0007\u001b[31m`
	session := `{"type":"user","uuid":"u1","parentUuid":null,"timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"` + evil + `"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-03-01T10:00:02Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"cat evil.html"}}]}}
{"type":"user","uuid":"u2","parentUuid":"a1","timestamp":"2026-03-01T10:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + evil + `"}]}}
{"type":"assistant","uuid":"a2","parentUuid":"u2","timestamp":"2026-03-01T10:00:05Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"done"}]}}
`
	tr, err := transcript.Read(strings.NewReader(session), "evil.jsonl", transcript.ReadOptions{})
	require.NoError(t, err)
	return tr.Records
}
