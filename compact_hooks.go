package agentctx

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// CompactHooks are called around a compaction, in order (each list in its order, Pre before
// SessionStart before Post), with Prepare's (or Compact's) ctx. As in net/http/httptrace, a
// hook is a func and any of them may be nil: a nil hook is skipped. A hook's error is reported and
// otherwise ignored: hooks cannot fail a compaction, only a pre-compact hook's veto stops one.
// Hooks must be safe for concurrent use when one Pipeline serves several conversations.
type CompactHooks struct {
	// Pre run before the summary is written; they may add instructions or veto. Each sees
	// the instructions so far (the caller's, then earlier hooks') in e.Instructions; a veto
	// stops the compaction before the next hook runs.
	Pre []func(ctx context.Context, e CompactEvent) (PreCompactResult, error)
	// SessionStart run once the summary is written, as a new session starts from it; the
	// context they return is appended after the summary (and the kept tail) as records of
	// their own.
	SessionStart []func(ctx context.Context, e CompactEvent) ([]ContextSection, error)
	// Post observe the installed compaction.
	Post []func(ctx context.Context, e PostCompactEvent) error
}

// CompactEvent describes a compaction to its hooks.
type CompactEvent struct {
	// Trigger is "auto" or "manual".
	Trigger string
	// SessionID is the conversation's session id.
	SessionID string
	// PreTokens is the pressure figure that led to the compaction.
	PreTokens int
	// Instructions are the extra summary instructions so far (the caller's, then earlier
	// hooks').
	Instructions string
}

// PreCompactResult is a pre-compact hook's answer.
type PreCompactResult struct {
	// Instructions are appended to the summary's extra instructions.
	Instructions string
	// Veto stops the compaction; Reason says why (it reaches the Report, and the error of
	// [Pipeline.Compact]).
	Veto   bool
	Reason string
}

// PostCompactEvent describes an installed compaction to a post-compact hook.
type PostCompactEvent struct {
	CompactEvent
	// Summary is the installed summary (without its tags and wrapper).
	Summary string
	// BoundaryUUID names the compaction's boundary record.
	BoundaryUUID string
	// PostTokens is the pressure figure of the request built after it.
	PostTokens int
}

// preCompact runs the pre-compact hooks and returns the merged instructions, or a veto reason.
func (co *compactor) preCompact(ctx context.Context, t *turn, st *StageReport, trigger, custom string) (string, string) {
	for i, h := range co.cfg.Hooks.Pre {
		if h == nil {
			continue
		}
		e := CompactEvent{Trigger: trigger, SessionID: t.sessionID, PreTokens: t.report.Pressure.Tokens, Instructions: custom}
		r, err := h(ctx, e)
		if err != nil {
			st.add(Action{Kind: ActionSkipped, Detail: fmt.Sprintf("pre-compact hook %d failed, ignored: %v", i, err)})
			continue
		}
		if r.Veto {
			reason := strings.TrimSpace(r.Reason)
			if reason == "" {
				reason = "no reason given"
			}
			return custom, fmt.Sprintf("pre-compact hook %d vetoed the compaction: %s", i, reason)
		}
		if in := strings.TrimSpace(r.Instructions); in != "" {
			if custom = strings.TrimSpace(custom); custom != "" {
				custom += "\n\n"
			}
			custom += in
			st.add(Action{Kind: ActionInjected, Detail: fmt.Sprintf("pre-compact hook %d added summary instructions", i)})
		}
	}
	return custom, ""
}

// sessionStart runs the session-start hooks and returns their context as attachments.
func (co *compactor) sessionStart(ctx context.Context, t *turn, trigger string) []attachment {
	var out []attachment
	for i, h := range co.cfg.Hooks.SessionStart {
		if h == nil {
			continue
		}
		sections, err := h(ctx, CompactEvent{Trigger: trigger, SessionID: t.sessionID, PreTokens: t.report.Pressure.Tokens})
		if err != nil {
			t.report.stage("compact").add(Action{Kind: ActionSkipped, Detail: fmt.Sprintf("session-start hook %d failed, ignored: %v", i, err)})
			continue
		}
		if text, n := renderSections(sections); n > 0 {
			out = append(out, attachment{kind: transcript.RehydrateHook, skill: fmt.Sprintf("session-start-%d", i),
				text: "<system-reminder>\n" + hookHead + text + "\n</system-reminder>"})
		}
	}
	return out
}

// hookHead introduces what a session-start hook returned after a compaction.
const hookHead = "Context a session-start hook provided after the conversation was compacted:\n"

// postCompact runs the post-compact hooks.
func (co *compactor) postCompact(ctx context.Context, post *turn, rep *CompactReport, sum *summary) {
	for i, h := range co.cfg.Hooks.Post {
		if h == nil {
			continue
		}
		e := PostCompactEvent{
			CompactEvent: CompactEvent{Trigger: rep.Trigger, SessionID: post.sessionID, PreTokens: rep.PreTokens},
			Summary:      sum.text, BoundaryUUID: rep.BoundaryUUID, PostTokens: rep.PostTokens,
		}
		if err := h(ctx, e); err != nil {
			post.report.stage("compact").add(Action{Kind: ActionSkipped, Detail: fmt.Sprintf("post-compact hook %d failed, ignored: %v", i, err)})
		}
	}
}
