// Package session is the turn loop over an agentctx Pipeline for a runtime that keeps its
// transcript as agentctx's records: a [Session] holds the conversation's records and its
// leaf, writes every record it adds (a prompt, a response, tool results, the decisions a
// turn makes) through a [RecordWriter] such as a [transcript.Appender] before it counts it,
// and runs Prepare, Recover and Compact on them, moving the leaf as they do. It checks that
// tool results answer the calls of the latest response, so a transcript it writes is one
// the provider accepts.
//
// A runtime with its own message store uses the Pipeline directly instead.
package session
