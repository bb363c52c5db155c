package liveloop

import (
	"sync"
	"time"
)

// start is the clock's first reading in every run.
var start = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// clock is the run's injected clock: the session's timestamps, the pipeline's Now and the
// fake provider's cache read it; the loop moves it on. Safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d.Truncate(time.Millisecond))
}
