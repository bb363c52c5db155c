//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package transcript

import (
	"os"
	"syscall"
)

// interProcessLock reports whether lockFile excludes other processes: flock does here.
const interProcessLock = true

// lockFile takes an exclusive advisory lock on f (flock LOCK_EX), waiting for other holders.
// flock locks belong to the open file description, so two Appenders on the same file exclude
// each other even within one process.
func lockFile(f *os.File) error { return flock(f, syscall.LOCK_EX) }

// lockFileShared takes a shared advisory lock on f (flock LOCK_SH): readers holding it
// exclude a writer's lockFile, so that they never see half of a batch.
func lockFileShared(f *os.File) error { return flock(f, syscall.LOCK_SH) }

// unlockFile releases the lock taken by lockFile.
func unlockFile(f *os.File) error { return flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: ferr}
	}
	return nil
}
