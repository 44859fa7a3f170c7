package daemon

import (
	"context"

	"github.com/agora/agorad/sync/netwatch"
)

// watchNetwork tells the uplink when a link, address or route changed, so a
// reconnect is tried at once rather than after the backoff. Without
// rtnetlink (not Linux, a seccomp filter) the backoff alone remains: a
// warning, never a stop.
func (d *Daemon) watchNetwork(ctx context.Context, changed chan<- struct{}) {
	w, err := netwatch.Open()
	if err != nil {
		d.log.Warn("network changes not watched: reconnects follow the backoff only", "err", err)
		return
	}
	if err := w.Run(ctx, changed); err != nil {
		d.log.Warn("network changes no longer watched: reconnects follow the backoff only", "err", err)
	}
}
