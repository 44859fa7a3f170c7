package daemon

import "time"

// The stop of a daemon is bounded stage by stage so that SIGTERM always ends
// the process inside the unit's TimeoutStopSec, even on a failed disk (a
// service stuck in a store call, Badger's close retrying its memtable flush
// forever): systemd never has to SIGKILL a stopping daemon, and the stop is
// logged.
const (
	// UnitStopLimit is TimeoutStopSec of systemd/agorad.service (a test
	// checks that they agree).
	UnitStopLimit = 30 * time.Second
	// StopBudget is what a whole stop may take: the unit's limit less a
	// margin for logging and the process exit.
	StopBudget = UnitStopLimit - 2*time.Second
	// ServicesStopLimit bounds the services' stop after the speech path
	// (the uplink's goodbye takes up to 2.25 s).
	ServicesStopLimit = 4 * time.Second
	// StoreCloseLimit is the least time the store's close gets; it gets
	// what is left of StopBudget when that is more (a healthy close on a
	// slow card flushes a memtable and waits for a running compaction).
	StoreCloseLimit = 4 * time.Second
)

// storeCloseLimit is the time the store's close may take when the stop
// began at began (zero: not stopping, e.g. a failed start).
func storeCloseLimit(began time.Time) time.Duration {
	if began.IsZero() {
		return StoreCloseLimit
	}
	return max(StoreCloseLimit, StopBudget-time.Since(began))
}
