package daemon

import (
	"fmt"
	"time"
)

// noteLink records a link change for offlineTooLong.
func (rep *status) noteLink(up bool, at time.Time) {
	if up {
		rep.everOnline.Store(true)
		rep.offlineSince.Store(0)
		return
	}
	rep.offlineSince.Store(at.UnixNano())
}

// offlineTooLong says why /healthz is not ok when the link has been down
// longer than mqtt.offline_unhealthy_after with outbox entries waiting, ""
// otherwise. A short outage is store-and-forward doing its job; a device
// that has not reached the backend for that long, with something to send,
// needs a person (a monitor sees 503, not ok: true).
func (rep *status) offlineTooLong(now time.Time) string {
	limit := rep.cfg.MQTT.OfflineUnhealthyAfter.D()
	if limit <= 0 || rep.cfg.MQTT.Broker == "" || rep.up.Online() {
		return ""
	}
	since := rep.started
	if ns := rep.offlineSince.Load(); ns != 0 {
		since = time.Unix(0, ns)
	}
	down := now.Sub(since)
	if down < limit {
		return ""
	}
	n, err := rep.store.OutboxCount()
	if err != nil || n == 0 {
		return ""
	}
	what := "backend link down"
	if !rep.everOnline.Load() {
		what = "backend never reached since start"
	}
	return fmt.Sprintf("%s for %s (mqtt.offline_unhealthy_after %s) with %d outbox entries waiting", what, down.Round(time.Second), limit, n)
}
