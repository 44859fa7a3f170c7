package daemon

import (
	"context"
	"time"
)

// How often the listen buffer's size is looked at (an in-memory count), and
// the least time between two statuses asked for because it changed: a burst
// of notes gives a status now and one with the final count after the burst,
// not one per note.
const (
	bufferPoll  = 250 * time.Millisecond
	statusEvery = time.Second
)

// watchBuffer asks the uplink for a fresh retained status when the listen
// buffer's size differs from the one the last status reported, whatever
// changed it (a note, a flush, agoractl buffer clear, a backend command).
// Comparing with what was reported, not with the last count seen, and
// asking only when the difference outlasts one poll, keeps a mode change
// (which publishes its own status, the flushed buffer's count in it) from
// causing a second, identical status.
func (rep *status) watchBuffer(ctx context.Context) {
	t := time.NewTicker(bufferPoll)
	defer t.Stop()
	var asked time.Time
	seen := false // the count differed from the reported one at the last poll
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := rep.store.ListenCount()
		if err != nil || int64(n) == rep.reported.Load() {
			seen = false
			continue
		}
		if !seen || time.Since(asked) < statusEvery {
			seen = true
			continue
		}
		seen = false
		asked = time.Now()
		rep.up.PublishStatus()
	}
}
