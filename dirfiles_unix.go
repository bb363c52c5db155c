//go:build unix

package agentctx

import "syscall"

// openFlags are the flags [DirFiles] opens a file with besides O_RDONLY: O_NONBLOCK, so that
// opening a named pipe returns at once instead of waiting for a writer (a regular file reads
// the same either way), and O_NOCTTY, so that opening a terminal does not make it the
// process's controlling terminal.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
