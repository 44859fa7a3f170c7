// Package sdnotify tells systemd about the daemon's state (Type=notify):
// READY=1 once it serves, STATUS= lines for `systemctl status`, WATCHDOG=1
// pings while it is healthy, RELOADING=1 around SIGHUP and STOPPING=1 on
// shutdown. It wraps go-systemd's sd_notify implementation; outside systemd
// (no NOTIFY_SOCKET) every call is a no-op.
package sdnotify

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

func notify(state string) error {
	// unsetEnvironment=false: the watchdog goroutine and later calls still
	// need NOTIFY_SOCKET; agorad starts no children that could misuse it.
	if _, err := daemon.SdNotify(false, state); err != nil {
		return fmt.Errorf("sd_notify %q: %w", state, err)
	}
	return nil
}

// Ready reports that start-up finished (store open, model loaded, socket
// listening). status, when not empty, is sent along as STATUS=.
func Ready(status string) error {
	s := daemon.SdNotifyReady
	if status != "" {
		s += "\nSTATUS=" + oneLine(status)
	}
	return notify(s)
}

// Status sets the one-line status shown by `systemctl status`.
func Status(status string) error { return notify("STATUS=" + oneLine(status)) }

// oneLine keeps a status from smuggling other assignments (a transcript or
// an error text may contain "\nREADY=1").
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// Reloading reports that a configuration reload (SIGHUP) started; call
// Ready when it is done.
func Reloading() error {
	return notify(daemon.SdNotifyReloading + "\n" + strings.TrimSpace(daemon.SdNotifyMonotonicUsec()))
}

// Stopping reports that shutdown started, so systemd waits (up to
// TimeoutStopSec) instead of assuming a crash.
func Stopping() error { return notify(daemon.SdNotifyStopping) }

// Watchdog pings systemd at half of WATCHDOG_USEC until ctx ends. healthy is
// asked before each ping; while it returns an error no ping is sent (so a
// hung pipeline gets the service restarted) and the reason goes to STATUS.
// Without a watchdog configured for this process it returns nil at once.
func Watchdog(ctx context.Context, healthy func() error, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return fmt.Errorf("read systemd watchdog settings: %w", err)
	}
	if interval <= 0 {
		return nil
	}
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	wasBad := false
	for {
		bad := error(nil)
		if healthy != nil {
			bad = healthy()
		}
		switch {
		case bad != nil:
			noteUnhealthy(bad)
			if !wasBad {
				logger.Error("unhealthy: withholding watchdog pings", "err", bad)
				if err := Status("unhealthy: " + bad.Error()); err != nil {
					logger.Warn("sd_notify", "err", err)
				}
			}
		default:
			if wasBad {
				logger.Info("healthy again: watchdog pings resume")
			}
			if err := notify(daemon.SdNotifyWatchdog); err != nil {
				logger.Warn("sd_notify", "err", err)
			} else {
				notePing()
			}
		}
		wasBad = bad != nil
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
