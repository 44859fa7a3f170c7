package sdnotify

import (
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// ExitWatchdogAbort is the exit code after a watchdog abort (128+SIGABRT,
// what a shell shows for a process killed by it).
const ExitWatchdogAbort = 134

// Last watchdog state, for the abort line: when the last WATCHDOG=1 went
// out and why pings were withheld (empty while healthy).
var (
	lastPing      atomic.Int64 // unix nanoseconds
	lastUnhealthy atomic.Pointer[string]
)

func notePing()               { lastPing.Store(time.Now().UnixNano()); lastUnhealthy.Store(nil) }
func noteUnhealthy(err error) { s := err.Error(); lastUnhealthy.Store(&s) }

// HandleWatchdogAbort decides what a watchdog abort leaves in the journal.
// systemd sends SIGABRT (WatchdogSignal=) when no WATCHDOG=1 arrived within
// WatchdogSec; Go's default is to dump every goroutine (~100 lines). Instead
// the daemon logs one structured line — how long ago the last ping went out
// and the health check's reason for withholding pings, if any — and exits
// with ExitWatchdogAbort. systemd has already recorded "watchdog" as the
// result and restarts it (Restart=on-failure); set GOTRACEBACK=all in the
// unit's environment and remove this handler's call to get the full dump. A process that cannot run this
// handler (stopped, or the runtime wedged) is SIGKILLed by systemd after
// TimeoutAbortSec, and the journal has systemd's own "Watchdog timeout" line.
// The returned function stops handling.
func HandleWatchdogAbort(logger *slog.Logger) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGABRT)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
		case <-done:
			return
		}
		attrs := []any{"goroutines", runtime.NumGoroutine()}
		if ns := lastPing.Load(); ns != 0 {
			attrs = append(attrs, "last_watchdog_ping_ago", time.Since(time.Unix(0, ns)).Round(time.Millisecond).String())
		} else {
			attrs = append(attrs, "last_watchdog_ping_ago", "never")
		}
		stage := "no ping sent although healthy: the watchdog goroutine itself did not run (process starved or stopped)"
		if s := lastUnhealthy.Load(); s != nil {
			stage = "unhealthy: " + *s
		}
		attrs = append(attrs, "stuck", stage)
		logger.Error("watchdog abort (SIGABRT): exiting without a goroutine dump", attrs...)
		os.Exit(ExitWatchdogAbort)
	}()
	return func() { signal.Stop(ch); close(done) }
}
