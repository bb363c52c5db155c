package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/anthropic"
	"github.com/agentctx/agentctx/provider"
	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// screenshot is the base64 PNG the conversation's tool result carries.
const screenshot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// recoverSession is a conversation of two rounds whose first tool result holds an image: the
// request Prepare builds from it has the image at messages.2.content.0.content.1.
func recoverSession(t *testing.T) (*session.Session, *agentctx.Pipeline) {
	t.Helper()
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p, err := agentctx.New(agentctx.Config{Model: "claude-sonnet-4-5", MaxOutputTokens: 16_000, Tokens: agentctx.EstimateCounter{},
		Now: func() time.Time { return clock }})
	require.NoError(t, err)
	n := 0
	sess := session.New(session.Options{ID: "s-recover", Now: func() time.Time { return clock },
		NewUUID: func() string { n++; return "rec-" + string(rune('a'+n)) }})
	answer := func(id string, blocks ...transcript.Block) {
		_, err := sess.Assistant(&transcript.Message{ID: id, Type: "message", Role: transcript.RoleAssistant, Model: "claude-sonnet-4-5",
			Content: blocks, StopReason: "end_turn", Usage: &transcript.Usage{InputTokens: 400, OutputTokens: 20}})
		require.NoError(t, err)
	}
	_, err = sess.User("Take a screenshot of the settings page. " + strings.Repeat("It must show the form. ", 40))
	require.NoError(t, err)
	answer("msg_01", &transcript.ToolUse{ID: "toolu_01", Name: "Screenshot", Input: json.RawMessage(`{}`)})
	_, err = sess.ToolResults(&transcript.ToolResult{ToolUseID: "toolu_01", Content: []transcript.Block{&transcript.Text{Text: "taken"},
		&transcript.Image{Source: transcript.MediaSource{Type: "base64", MediaType: "image/png", Data: screenshot}}}})
	require.NoError(t, err)
	answer("msg_02", &transcript.Text{Text: "The form is in two columns. " + strings.Repeat("Each field has a label. ", 40)})
	_, err = sess.User("Make it one column on narrow screens.")
	require.NoError(t, err)
	return sess, p
}

// TestRecoverProviderErrors sends a turn to a fake Messages API that answers with the
// provider's real error bodies, classifies the failure through the adapter, and checks the
// rung Session.Recover climbs: its records, its outcome, and the request it sends next.
func TestRecoverProviderErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		rung    string
		outcome agentctx.RecoveryOutcome
		check   func(t *testing.T, res agentctx.Result, next map[string]any)
	}{
		{
			name: "400 prompt too long", status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CTest"}`,
			rung: transcript.RungPromptTooLong, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, res agentctx.Result, _ map[string]any) {
				d := res.Append[0].Recovery
				assert.Equal(t, 208310, d.Tokens)
				assert.Equal(t, 200000, d.Limit)
				require.NotNil(t, res.Report.Compaction)
				assert.Equal(t, agentctx.CompactCompacted, res.Report.Compaction.Outcome, res.Report.Compaction.Reason)
				assert.Equal(t, transcript.SubtypeCompactBoundary, res.Append[1].Subtype)
			},
		},
		{
			name: "400 input and max_tokens over the window", status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 188959 + 16000 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`,
			rung: transcript.RungPromptTooLong, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, res agentctx.Result, _ map[string]any) {
				assert.Equal(t, 184000, res.Append[0].Recovery.Limit)
				assert.Equal(t, 200000, res.Append[0].Recovery.Window)
			},
		},
		{
			name: "413 request too large", status: 413,
			body: `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`,
			rung: transcript.RungRequestTooLarge, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, res agentctx.Result, _ map[string]any) {
				assert.Positive(t, res.Append[0].Recovery.Bytes)
				assert.Equal(t, agentctx.CompactCompacted, res.Report.Compaction.Outcome, res.Report.Compaction.Reason)
			},
		},
		{
			name: "an image over 5 MB inside a tool result", status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"messages.2.content.0.tool_result.content.1.image.source.base64: image exceeds 5 MB maximum: 5649924 bytes > 5242880 bytes"}}`,
			rung: transcript.RungMediaRejected, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, res agentctx.Result, next map[string]any) {
				require.Len(t, res.Append[0].Recovery.Media, 1)
				assert.Equal(t, "messages.2.content.0.content.1", res.Append[0].Recovery.Media[0].Path)
				body, _ := json.Marshal(next)
				assert.NotContains(t, string(body), screenshot, "the refused image is not sent again")
				assert.Contains(t, string(body), "image removed")
			},
		},
		{
			name: "image dimensions, with the paths in the details", status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"One or more images exceed the maximum side length.","details":{"error_code":"image_dimensions_too_large","max_side_length_pixels":8000,"paths":["messages.2.content.0.content.1"]}}}`,
			rung: transcript.RungMediaRejected, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, _ agentctx.Result, next map[string]any) {
				body, _ := json.Marshal(next)
				assert.NotContains(t, string(body), screenshot)
			},
		},
		{
			name: "many-image dimension limit with a single image: no block to strip", status: 400,
			body:    `{"type":"error","error":{"type":"invalid_request_error","message":"At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels"}}`,
			rung:    transcript.RungMediaRejected,
			outcome: agentctx.RecoveryTerminal,
		},
		{
			name: "an invalid image with no path", status: 400,
			body: `{"type":"error","error":{"type":"invalid_request_error","message":"Could not process image"}}`,
			rung: transcript.RungMediaRejected, outcome: agentctx.RecoveryRecovered,
			check: func(t *testing.T, res agentctx.Result, next map[string]any) {
				assert.Contains(t, res.Report.Recovery.Reason, "the media of the latest message that holds any")
				body, _ := json.Marshal(next)
				assert.NotContains(t, string(body), screenshot)
			},
		},
		{name: "429 rate limited", status: 429, body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, outcome: agentctx.RecoveryPassed},
		{name: "529 overloaded", status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, outcome: agentctx.RecoveryPassed},
		{name: "500 api error", status: 500, body: `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, outcome: agentctx.RecoveryPassed},
		{name: "401 authentication", status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, outcome: agentctx.RecoveryPassed},
		{name: "400 another invalid request", status: 400, body: `{"type":"error","error":{"type":"invalid_request_error","message":"system.0: text blocks must be non-empty"}}`, outcome: agentctx.RecoveryPassed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, n int) {
				if n == 0 {
					writeJSON(w, tt.status, tt.body)
					return
				}
				writeJSON(w, 200, answer)
			})
			c := f.client()
			sess, p := recoverSession(t)
			ctx := t.Context()
			res, err := sess.Prepare(ctx, p, agentctx.Input{})
			require.NoError(t, err)
			_, sendErr := c.Send(ctx, res.Request, anthropic.Options{})
			require.Error(t, sendErr)
			before := len(sess.Records())

			rres, rerr := sess.Recover(ctx, p, agentctx.Input{}, sendErr)
			require.NotNil(t, rres.Report.Recovery)
			rc := rres.Report.Recovery
			assert.Equal(t, tt.rung, rc.Rung, rc.Reason)
			assert.Equal(t, tt.outcome, rc.Outcome, rc.Reason)
			assert.Equal(t, provider.ClassOf(sendErr), rc.Class)
			switch tt.outcome {
			case agentctx.RecoveryPassed:
				assert.Same(t, sendErr, rerr, "the error goes back as it is, for the caller's retry policy")
				assert.Len(t, sess.Records(), before, "nothing is recorded")
				return
			case agentctx.RecoveryTerminal:
				require.Error(t, rerr)
				assert.Len(t, sess.Records(), before)
				return
			}
			require.NoError(t, rerr)
			require.NotEmpty(t, rres.Append)
			assert.Equal(t, transcript.SubtypeRecovery, rres.Append[0].Subtype)
			assert.Len(t, sess.Records(), before+len(rres.Append), "the session appended the rung's records")
			_, err = c.Send(ctx, rres.Request, anthropic.Options{})
			require.NoError(t, err, "the recovered request is accepted")
			require.Equal(t, 2, f.requests())
			if tt.check != nil {
				f.mu.Lock()
				next := f.bodies[1]
				f.mu.Unlock()
				tt.check(t, rres, next)
			}
		})
	}
}

// TestRecoverMaxTokens plays a turn the model cuts at max_tokens through the adapter: the
// output cap is raised once, then continuation turns follow, at most three, then Recover
// gives up.
func TestRecoverMaxTokens(t *testing.T) {
	f := newFakeAPI(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		id := fmt.Sprintf("msg_cut_%d", n)
		sse(w,
			"message_start", `{"type":"message_start","message":{"id":"`+id+`","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":400,"output_tokens":1}}}`,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The guide, part `+fmt.Sprint(n)+`: "}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":16000}}`,
			"message_stop", `{"type":"message_stop"}`)
	})
	c := f.client()
	sess, p := recoverSession(t)
	ctx := t.Context()
	res, err := sess.Prepare(ctx, p, agentctx.Input{})
	require.NoError(t, err)
	assert.Equal(t, 16_000, res.Request.MaxTokens)
	var rungs []string
	for range 6 {
		rec, err := c.Turn(ctx, sess, res.Request, anthropic.Options{Stream: true})
		require.NoError(t, err)
		require.True(t, rec.Message.Truncated())
		res, err = sess.Recover(ctx, p, agentctx.Input{}, provider.ErrOutputTruncated)
		rungs = append(rungs, res.Report.Recovery.Rung+" "+string(res.Report.Recovery.Outcome))
		if err != nil {
			var ote *provider.OutputTruncatedError
			require.ErrorAs(t, err, &ote)
			assert.Equal(t, 3, ote.Continuations)
			break
		}
		assert.Equal(t, 64_000, res.Request.MaxTokens, "the raised cap holds on every later request")
	}
	assert.Equal(t, []string{"output_cap recovered", "continue recovered", "continue recovered", "continue recovered", "continue terminal"}, rungs)
}
