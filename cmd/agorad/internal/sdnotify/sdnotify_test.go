package sdnotify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/agorad/internal/sdnotify/sdnotifytest"
	"github.com/agora/agorad/cmd/internal/testrun"
)

func recv(t *testing.T, msgs <-chan string) string {
	t.Helper()
	select {
	case m := <-msgs:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
	return ""
}

func TestNotifications(t *testing.T) {
	msgs := sdnotifytest.Socket(t)
	tests := []struct {
		name string
		call func() error
		want []string // lines expected in the datagram
	}{
		{"ready", func() error { return Ready("") }, []string{"READY=1"}},
		{"ready with status", func() error { return Ready("listening, 3 buffered") }, []string{"READY=1", "STATUS=listening, 3 buffered"}},
		{"status", func() error { return Status("offline: outbox 12") }, []string{"STATUS=offline: outbox 12"}},
		{"reloading", Reloading, []string{"RELOADING=1", "MONOTONIC_USEC="}},
		{"stopping", Stopping, []string{"STOPPING=1"}},
		{"status newline", func() error { return Status("bad\nWATCHDOG=1") }, []string{"STATUS=bad WATCHDOG=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err != nil {
				t.Fatal(err)
			}
			got := recv(t, msgs)
			lines := strings.Split(got, "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("got %q, want lines %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Fatalf("line %d %q, want prefix %q", i, lines[i], w)
				}
			}
		})
	}
}

func TestNoSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	os.Unsetenv("NOTIFY_SOCKET")
	if err := Ready("x"); err != nil {
		t.Fatalf("outside systemd: %v", err)
	}
	if err := Watchdog(context.Background(), nil, nil); err != nil {
		t.Fatalf("watchdog without WATCHDOG_USEC: %v", err)
	}
}

func TestNotifySocketMissing(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "gone"))
	if err := Stopping(); err == nil || !strings.Contains(err.Error(), "STOPPING=1") {
		t.Fatalf("err = %v", err)
	}
}

func TestWatchdog(t *testing.T) {
	msgs := sdnotifytest.Socket(t)
	t.Setenv("WATCHDOG_USEC", "100000") // 100 ms: pings every 50 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	var healthy atomic.Bool
	healthy.Store(true)
	start := time.Now()
	run := testrun.Start(t, "Watchdog", func(ctx context.Context) error {
		return Watchdog(ctx, func() error {
			if healthy.Load() {
				return nil
			}
			return errors.New("capture stalled")
		}, nil)
	})
	for i := 0; i < 3; i++ {
		if m := recv(t, msgs); m != "WATCHDOG=1" {
			t.Fatalf("ping %d: %q", i, m)
		}
	}
	// Three pings, the first immediate: at least two intervals of 50 ms.
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("3 pings in %v: interval is not half of WATCHDOG_USEC", el)
	}
	healthy.Store(false)
	// Drain pings sent before the switch was seen, then expect the status.
	for {
		m := recv(t, msgs)
		if m == "WATCHDOG=1" {
			continue
		}
		if m != "STATUS=unhealthy: capture stalled" {
			t.Fatalf("got %q", m)
		}
		break
	}
	// While unhealthy: no pings at all.
	select {
	case m := <-msgs:
		t.Fatalf("sent %q while unhealthy", m)
	case <-time.After(250 * time.Millisecond):
	}
	healthy.Store(true)
	if m := recv(t, msgs); m != "WATCHDOG=1" {
		t.Fatalf("after recovery: %q", m)
	}
	if err := run.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestWatchdogOtherPID(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "100000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	if err := Watchdog(ctx, nil, nil); err != nil || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("watchdog for another pid: %v after %v", err, time.Since(start))
	}
}
