package agentctx

import (
	"fmt"
	"strings"

	"github.com/agentctx/agentctx/transcript"
)

// summaryPrompt is the instruction that ends a summary request. The library's own wording.
const summaryPrompt = `Your task now is to write a handoff summary of this conversation so far. The conversation will be replaced by your summary, so whoever continues the work — you, later — must be able to do so from the summary alone.

Answer with text only. Do not call any tool: tool calls are refused, and this is your only turn.

First think it through in private inside <analysis> tags: go through the conversation in order and note, for each part, what the user asked, what was done, what was decided and why, which files and commands were involved, and what went wrong. The analysis is discarded.

Then write the summary inside <summary> tags, with these sections:

1. Intent and constraints: what the user wants overall, and every explicit constraint, preference or rule they stated, quoted.
2. User messages: every message the user wrote (not tool results), in order; verbatim when short, faithfully condensed when long.
3. Decisions: what was decided and why, including approaches that were tried and rejected.
4. Files and code: every file read, created or changed, what changed in it, and the code (signatures, key lines) needed to continue.
5. Errors and fixes: each error met and how it was fixed, or that it is still open.
6. Pending work: tasks that were asked for and are not done yet.
7. Current step: precisely what was being worked on when this summary was requested.
8. Next step: the action that follows directly from the most recent request, quoting that request where the wording matters; leave this out when the work is finished.

Be specific: names, paths, numbers and exact error messages are worth more than generalities.`

// customHeading introduces the caller's and hooks' extra instructions in the summary prompt.
const customHeading = "\n\nAdditional instructions for this summary:\n"

// instructions returns the full summary instruction for the extra instructions custom.
func instructions(custom string) string {
	if strings.TrimSpace(custom) == "" {
		return summaryPrompt
	}
	return summaryPrompt + customHeading + strings.TrimSpace(custom)
}

// The text of the summary message a compaction installs, around the summary itself.
const (
	summaryHead       = "This conversation continues from an earlier part that was compacted to fit the context window. A summary of that part follows."
	summaryHeadKept   = " The most recent messages come after it, unchanged."
	summaryAutoResume = "\n\nContinue the work from where it stopped: do not greet, recap or ask anything first; go straight on with the next step."
)

// summaryTranscript tells the model where the full transcript is, after the summary.
const summaryTranscript = "\n\nThe summary leaves details out. The full transcript of this conversation, every message before the summary included, is kept at %s: read it there when you need something the summary does not say."

// summaryMessage is the text of the installed summary message.
func summaryMessage(summary string, kept bool, trigger string) string {
	return summaryMessageAt(summary, kept, trigger, "")
}

// summaryMessageAt is summaryMessage naming where the full transcript is (see
// [Input.TranscriptPath]); path "": nowhere.
func summaryMessageAt(summary string, kept bool, trigger, path string) string {
	var b strings.Builder
	b.WriteString(summaryHead)
	if kept {
		b.WriteString(summaryHeadKept)
	}
	b.WriteString("\n\n<summary>\n")
	b.WriteString(summary)
	b.WriteString("\n</summary>")
	if path != "" {
		fmt.Fprintf(&b, summaryTranscript, path)
	}
	if trigger == transcript.TriggerAuto {
		b.WriteString(summaryAutoResume)
	}
	return b.String()
}

// omittedText marks, in a summary request, the oldest messages left out to fit.
const omittedText = "[%d earlier messages of this conversation are left out of this summary request to fit the context window; the transcript keeps them.]"

// mediaMarker replaces an image or a document in a summary request.
const mediaMarker = "[%s omitted from the summary request]"
