package agentctx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// cancelAfter is a context cancelled (Done closed, Err Canceled) on its n-th Err call, as a
// caller's cancel from another goroutine can land at any point.
type cancelAfter struct {
	n    int64
	once sync.Once
	done chan struct{}
}

func (c *cancelAfter) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *cancelAfter) Value(any) any               { return nil }
func (c *cancelAfter) Done() <-chan struct{}       { return c.done }
func (c *cancelAfter) Err() error {
	if atomic.AddInt64(&c.n, -1) < 0 {
		c.once.Do(func() { close(c.done) })
		return context.Canceled
	}
	return nil
}
