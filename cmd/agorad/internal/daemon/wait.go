package daemon

import (
	"context"
	"time"
)

// waitWithin runs wait and reports whether it returned within limit. On a
// timeout wait's goroutine is left behind: the process is about to exit.
func waitWithin(wait func() error, limit time.Duration) (returned bool, err error) {
	done := make(chan error, 1)
	go func() { done <- wait() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return true, err
	case <-t.C:
		return false, nil
	}
}

// waitDrained waits until the outbox is empty, or timeout, or ctx ends.
func (d *Daemon) waitDrained(ctx context.Context, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if n, err := d.store.OutboxCount(); err == nil && n == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}
