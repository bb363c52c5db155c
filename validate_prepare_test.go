package agentctx

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentctx/agentctx/provider"

	"github.com/agentctx/agentctx/transcript"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrepareValidate runs Prepare with Config.Validate on inputs that give a request the
// provider would reject (the caller's tools and system prompt, an input over the window) and
// requires an error naming each violation, where without the switch Prepare returns the
// request; a valid request is the same with the switch as without. An input over the window
// never reaches the check: with or without the switch, Prepare answers *PromptTooLongError.
// valReadTool is a Read tool definition the provider accepts.
var valReadTool = provider.Tool{Name: "Read", Definition: json.RawMessage(`{"name":"Read","description":"read","input_schema":{"type":"object"}}`)}

func TestPrepareValidate(t *testing.T) {
	k := newTK()
	k.user("q")
	k.assistant(text("a"), toolUse("t1", "Read"))
	k.results(result("t1", "r"))
	tool := func(def string) provider.Tool {
		var d struct{ Name string }
		require.NoError(t, json.Unmarshal([]byte(def), &d))
		return provider.Tool{Name: d.Name, Definition: json.RawMessage(def)}
	}
	grep := tool(`{"name":"Grep","input_schema":{"type":"object"}}`)
	tests := []struct {
		name    string
		in      Input
		window  int
		want    []provider.Violation // Rule and Path only
		tooLong bool
	}{
		{name: "valid", in: Input{Tools: []provider.Tool{valReadTool, grep}}},
		{name: "undeclared history tools are stubbed, not violations", in: Input{Tools: []provider.Tool{grep}}},
		{name: "duplicate tool", in: Input{Tools: []provider.Tool{valReadTool, grep, valReadTool}},
			want: []provider.Violation{{Rule: "2.9", Path: "tools[2]"}}},
		{name: "tool without a schema", in: Input{Tools: []provider.Tool{valReadTool, tool(`{"name":"Grep","description":"search"}`)}},
			want: []provider.Violation{{Rule: "2.9", Path: "tools[1]"}}},
		{name: "tool with a schema that is not an object", in: Input{Tools: []provider.Tool{tool(`{"name":"Grep","input_schema":{"type":"string"}}`), valReadTool}},
			want: []provider.Violation{{Rule: "2.9", Path: "tools[0]"}}},
		{name: "tool whose name differs from its definition", in: Input{Tools: []provider.Tool{valReadTool, {Name: "Grep", Definition: json.RawMessage(`{"name":"grep","input_schema":{"type":"object"}}`)}}},
			want: []provider.Violation{{Rule: "2.9", Path: "tools[1]"}}},
		{name: "blank system block", in: Input{Tools: []provider.Tool{valReadTool}, System: []*transcript.Text{text("be brief"), text(" \n")}},
			want: []provider.Violation{{Rule: "1.5", Path: "system[1]"}}},
		{name: "input over the window", in: Input{Tools: []provider.Tool{valReadTool}, System: []*transcript.Text{text(strings.Repeat("rules ", 1000))}}, window: 1000,
			tooLong: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Records = k.recs
			cfg := normConfig()
			if tt.window > 0 {
				cfg.ContextWindow = tt.window
			}
			off, err := newTestPipeline(t, cfg, normNow).Prepare(t.Context(), in)
			if tt.tooLong {
				require.ErrorIs(t, err, provider.ErrPromptTooLong)
				cfg.Validate = true
				_, err = newTestPipeline(t, cfg, normNow).Prepare(t.Context(), in)
				require.ErrorIs(t, err, provider.ErrPromptTooLong, "the pressure check comes before validation")
				_, isStage := errors.AsType[*StageError](err)
				assert.False(t, isStage, "%v", err)
				return
			}
			require.NoError(t, err, "without Config.Validate the request is returned")
			cfg.Validate = true
			on, err := newTestPipeline(t, cfg, normNow).Prepare(t.Context(), in)
			assert.Equal(t, requestBytes(t, off.Request), requestBytes(t, on.Request), "the switch does not change the request")
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			se, ok := errors.AsType[*StageError](err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, "validate", se.Stage)
			v, ok := errors.AsType[*provider.Violation](err)
			require.True(t, ok)
			assert.Equal(t, tt.want[0].Rule, v.Rule, "%v", err)
			var got []provider.Violation
			for _, e := range se.Err.(interface{ Unwrap() []error }).Unwrap() {
				v := e.(*provider.Violation)
				got = append(got, provider.Violation{Rule: v.Rule, Path: v.Path})
			}
			assert.Equal(t, tt.want, got, "%v", err)
			assert.NotEmpty(t, on.Report.Stages, "the Result is filled in for inspection")
		})
	}
}
