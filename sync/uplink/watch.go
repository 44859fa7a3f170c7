package uplink

import (
	"context"
	"time"
)

// watch keeps the unconfirmed and stuck-queue figures current and logs each
// episode once: when it starts (a warning with a hint) and when it ends.
func (c *Client) watch(ctx context.Context) {
	every := min(c.opts.AckTimeout, c.opts.StuckAfter) / 4
	every = min(max(every, 20*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	var (
		unconfirmedEp, stuckEp bool
		headID                 string
		headSince              time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		n := c.unconfirmedAt(now)
		c.unconfirmed.Store(int64(n))
		switch {
		case n > 0 && !unconfirmedEp:
			unconfirmedEp = true
			c.log.Warn("outbox entries not confirmed by the backend", "unconfirmed", n, "ack_timeout", c.opts.AckTimeout,
				"hint", unconfirmedHint)
		case n == 0 && unconfirmedEp:
			unconfirmedEp = false
			c.log.Info("the backend confirms outbox entries again")
		}

		// The head of the queue (control lane first, as drained) waiting
		// StuckAfter while online: nothing moves, whatever the reason.
		var stuck time.Duration
		if c.Online() {
			// Entries the backend parked stay by design: not stuck.
			head := ""
			if es, err := c.outbox.Pending(1 + c.parkedCount()); err == nil {
				for _, e := range es {
					if !c.isParkedID(e.ID) {
						head = e.ID
						break
					}
				}
			}
			if head != "" {
				if head != headID {
					headID, headSince = head, now
				}
				stuck = now.Sub(headSince)
			} else {
				headID = ""
			}
		} else {
			headID = "" // the wait counts while online only
		}
		if stuck < c.opts.StuckAfter {
			c.stuckFor.Store(0)
		} else {
			c.stuckFor.Store(int64(stuck))
		}
		switch {
		case stuck >= c.opts.StuckAfter && !stuckEp:
			stuckEp = true
			c.log.Warn("outbox stuck: its oldest entry has not been delivered while online", "id", headID,
				"waiting", stuck.Round(time.Second), "threshold", c.opts.StuckAfter)
		case stuck < c.opts.StuckAfter && stuckEp:
			stuckEp = false
			c.log.Info("outbox moving again")
		}
	}
}
