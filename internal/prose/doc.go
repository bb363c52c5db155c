// Package prose is the text machinery of the extractive summary: cutting a text to a budget
// (at its end, or in its middle with the head and tail kept), dividing a budget among
// sections by need, quoting and numbering user messages within their parts, and reading the
// wording of a message sentence by sentence for the cues of a decision, of work put off, and
// of work done. It knows nothing of records or requests; the root's Extractive and the report
// page's compaction check use it.
package prose
