//go:build !unix

package agentctx

// openFlags are the flags [DirFiles] opens a file with besides O_RDONLY: none here, where
// opening a file does not wait for a writer.
const openFlags = 0
