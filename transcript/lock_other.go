//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package transcript

import "os"

// On this platform there is no inter-process lock: syscall.Flock is unavailable (Windows,
// Solaris, illumos, AIX, Plan 9, js, wasip1). An Appender still serialises its own goroutines
// with its mutex and writes each batch with one write to a file opened O_APPEND, but batches
// of several Appenders or processes on the same file may interleave, and two of them may both
// see a torn last line and each prefix a "\n" (which only adds a blank line), and the check
// that the file at the path is still the one opened is not atomic with other writers. Use
// one Appender per file per process there.

// interProcessLock reports whether lockFile excludes other processes: it does not here.
const interProcessLock = false

func lockFile(*os.File) error { return nil }

func lockFileShared(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }
