package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRequestProvider: on every bundled session, --provider anthropic prints the SDK's
// parameters, which are the same JSON as the default body; the two OpenAI bodies carry the
// conversation's messages, and what they leave out is listed on stderr, naming where it was.
func TestRequestProvider(t *testing.T) {
	store := "--store=" + t.TempDir()
	files := sessions(t)
	if raceEnabled {
		files = files[:1] // the plain run covers every bundled session; one is enough to look for races
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, def, errOut := runCmd(t, "request", now, store, f)
			require.Equal(t, 0, code, errOut)
			code, sdk, errOut := runCmd(t, "request", "--provider=anthropic", now, store, f)
			require.Equal(t, 0, code, errOut)
			assert.JSONEq(t, def, sdk, "the SDK's parameters marshal to the library's body")

			var body struct {
				Messages []json.RawMessage `json:"messages"`
			}
			require.NoError(t, json.Unmarshal([]byte(def), &body))
			for _, tc := range []struct {
				provider, list string
			}{
				{"openai-chat", "messages"},
				{"openai-responses", "input"},
			} {
				code, out, errOut := runCmd(t, "request", "--provider="+tc.provider, now, store, f)
				require.Equal(t, 0, code, errOut)
				var got map[string]json.RawMessage
				require.NoError(t, json.Unmarshal([]byte(out), &got), tc.provider)
				var items []json.RawMessage
				require.NoError(t, json.Unmarshal(got[tc.list], &items), tc.provider)
				assert.GreaterOrEqual(t, len(items), len(body.Messages), "%s: every message is carried (tool calls and results may take items of their own)", tc.provider)
				for l := range strings.SplitSeq(strings.TrimSpace(errOut), "\n") {
					if l != "" {
						assert.Regexp(t, `^agentctx: (messages\.\d+\.content\.\d+(\.\d+)?|tools\.\d+|thinking): dropped \S+: .+`, l, tc.provider)
					}
				}
			}
			code, ind, errOut := runCmd(t, "request", "--provider=openai-chat", "--indent", now, store, f)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, ind, "\n  \"messages\": [")
		})
	}
	code, _, errOut := runCmd(t, "request", "--provider=gemini", now, store, sessions(t)[0])
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--provider "gemini": want anthropic, openai-chat or openai-responses`)
}

// fakeAPI is an httptest server answering every POST with answer, keeping the bodies and
// headers it was sent.
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	paths   []string
	bodies  []map[string]any
	headers []http.Header
}

func newFakeAPI(t *testing.T, answer string) *fakeAPI {
	f := &fakeAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(data, &body)
		f.mu.Lock()
		f.paths, f.bodies, f.headers = append(f.paths, r.URL.Path), append(f.bodies, body), append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(f.Close)
	return f
}

// TestCompactSummarizer: --summarizer anthropic and openai send the summary request to the
// base URL of the environment with the key of the environment, and install the answer's
// summary; a missing key is a clear error before anything is sent; a wrong name is a usage
// error.
func TestCompactSummarizer(t *testing.T) {
	src := worktrees
	const summary = "The user is moving the project to git worktrees; the scripts are written."
	anth := newFakeAPI(t, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929",`+
		`"content":[{"type":"text","text":"<summary>`+summary+`</summary>"}],"stop_reason":"end_turn","stop_sequence":null,`+
		`"usage":{"input_tokens":40,"cache_read_input_tokens":9000,"output_tokens":25}}`)
	oai := newFakeAPI(t, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen3:8b",`+
		`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"<summary>`+summary+`</summary>"}}],`+
		`"usage":{"prompt_tokens":9040,"completion_tokens":25,"total_tokens":9065}}`)

	for _, tc := range []struct {
		name, env, key string
		api            *fakeAPI
		flags          []string
		path, by       string
	}{
		{"anthropic", "ANTHROPIC", "sk-ant-test", anth, []string{"--summarizer=anthropic"}, "/v1/messages", "claude-sonnet-4-5-20250929"},
		{"openai", "OPENAI", "sk-test", oai, []string{"--summarizer=openai", "--summary-model=qwen3:8b"}, "/chat/completions", "qwen3:8b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
			t.Setenv(tc.env+"_API_KEY", tc.key)
			t.Setenv(tc.env+"_BASE_URL", tc.api.URL)
			dir := t.TempDir()
			out := filepath.Join(dir, "compacted.jsonl")
			args := append([]string{"compact", now, "--window=40000", "--store=" + dir, "--out=" + out}, tc.flags...)
			code, stdout, errOut := runCmd(t, append(args, src)...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, stdout, "summary by "+tc.by)
			require.Len(t, tc.api.paths, 1, "one summary request")
			assert.True(t, strings.HasSuffix(tc.api.paths[0], tc.path), tc.api.paths[0])
			h := tc.api.headers[0]
			assert.Contains(t, h.Get("X-Api-Key")+h.Get("Authorization"), tc.key, "the key comes from the environment")
			assert.NotEmpty(t, tc.api.bodies[0]["messages"])
			written, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Contains(t, string(written), summary, "the model's summary is installed")

			t.Setenv(tc.env+"_API_KEY", "")
			code, _, errOut = runCmd(t, append(args, "--out="+filepath.Join(dir, "again.jsonl"), src)...)
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut, "agentctx: --summarizer "+tc.name+": "+tc.env+"_API_KEY is not set")
			assert.Len(t, tc.api.paths, 1, "nothing is sent without a key")
		})
	}

	t.Setenv("OPENAI_API_KEY", "sk-test")
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--summarizer=gemini"}, `--summarizer "gemini": want one of extractive, anthropic, openai`},
		{[]string{"--summarizer=openai"}, "--summarizer openai needs --summary-model"},
		{[]string{"--summary-model=x"}, "--summary-model needs --summarizer anthropic or openai"},
	} {
		code, _, errOut := runCmd(t, append(append([]string{"compact", now}, tc.flags...), src)...)
		assert.Equal(t, 2, code, tc.want)
		assert.Contains(t, errOut, tc.want)
	}
}
