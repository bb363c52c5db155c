// Package htmlreport draws a recorded session, replayed under a policy, as one self-contained
// HTML page: what the model saw on every turn, and why.
//
// [Build] replays the session with [simulate.Run] and keeps, through [simulate.Options.Observe],
// what each turn's request held: its tokens by category ([agentctx.Pipeline.Breakdown]), the
// prompt cache's reads and writes and the cost beside the provider's reported usage, what each
// stage did, the request's messages with where each block came from (the transcript as
// written, a budget preview, a cleared result, a compaction or collapse summary, a re-read
// file, pinned content), and for each compaction its summary beside the request it replaced,
// with a check of what the summary kept by name: the user's prompts, the files, the errors and
// the commands of the replaced messages. [Page.WriteTo] writes the page.
//
// The page needs no server and no network: its styles, its script and its charts (inline SVG)
// are in the file, and it loads nothing. It is built with html/template, and the session's
// text reaches it only as escaped JSON that the script puts into the page as text, never as
// markup, so a transcript holding markup or script stays text; control characters are shown
// as their visible symbols (U+2400 and on).
//
// A long session stays light: each distinct message is written once and each turn names its
// messages as a change of the turn before (the messages it keeps, the ones it adds), the
// timeline is drawn at most one point per pixel column, and only the turn opened is put into
// the page's document. Texts longer than [Options.MaxText] keep their head and tail.
package htmlreport
