package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/buffer/fsfault"
	"github.com/agora/agorad/cmd/agorad/internal/daemon"
	"github.com/agora/agorad/cmd/internal/control"
)

// TestStopLimitsFitTheUnit: the stages of a stop fit the unit's
// TimeoutStopSec, and daemon.UnitStopLimit is that value.
func TestStopLimitsFitTheUnit(t *testing.T) {
	f, err := os.Open("../../systemd/agorad.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var unit time.Duration
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), "TimeoutStopSec="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("TimeoutStopSec=%q: %v", v, err)
			}
			unit = time.Duration(n) * time.Second
		}
	}
	if unit != daemon.UnitStopLimit {
		t.Fatalf("agorad.service TimeoutStopSec is %v, daemon.UnitStopLimit %v", unit, daemon.UnitStopLimit)
	}
	if sum := daemon.StopLimit + daemon.ServicesStopLimit + daemon.StoreCloseLimit; sum > daemon.StopBudget || daemon.StopBudget >= unit {
		t.Fatalf("speech %v + services %v + store %v = %v; budget %v; unit %v", daemon.StopLimit,
			daemon.ServicesStopLimit, daemon.StoreCloseLimit, sum, daemon.StopBudget, unit)
	}
}

// TestRunStopsOnFailedDisk (issue 23): `agorad run` with notes accepted,
// then its state directory removed, remounted read-only by an ext4 error,
// or its file system (ext4, tmpfs) filled to the last block. SIGTERM ends the real
// process within the unit's stop limit with exit 5 (store failed: no
// SIGBUS, no endless memtable-flush retry), the log says what was left
// where, and where the directory is readable again every accepted note is
// in the store the next start opens.
func TestRunStopsOnFailedDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agorad; mounts file systems")
	}
	bin := agoradBinary(t)
	tests := []struct {
		name string
		// prepare returns the parent of the state directory, the fault
		// (run with notes accepted) and, run after the exit, the parent of
		// the state directory the next start would open ("" if none).
		prepare func(t *testing.T) (parent string, fault func(), next func() string)
	}{
		{"directory removed", func(t *testing.T) (string, func(), func() string) {
			parent := t.TempDir()
			return parent, func() {
				if err := os.RemoveAll(filepath.Join(parent, "state")); err != nil {
					t.Error(err)
				}
			}, func() string { return "" }
		}},
		{"ext4 remounted read-only", func(t *testing.T) (string, func(), func() string) {
			e := fsfault.MountExt4(t, 96)
			return e.Dir, func() { e.RemountReadOnly(t) }, func() string { return e.CrashCopy(t) }
		}},
		{"ext4 full", func(t *testing.T) (string, func(), func() string) {
			e := fsfault.MountExt4(t, 96)
			ballast := filepath.Join(e.Dir, "ballast")
			return e.Dir, func() { fsfault.Fill(t, ballast) }, func() string {
				if err := os.Remove(ballast); err != nil {
					t.Fatal(err)
				}
				return e.Dir
			}
		}},
		{"disk full", func(t *testing.T) (string, func(), func() string) {
			parent := fsfault.MountTmpfs(t, "96m")
			ballast := filepath.Join(parent, "ballast")
			return parent, func() { fsfault.Fill(t, ballast) }, func() string {
				if err := os.Remove(ballast); err != nil {
					t.Fatal(err)
				}
				return parent
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, fault, next := tt.prepare(t)
			cfg := baseConfig(t, "tcp://127.0.0.1:1")
			cfg.StateDir = filepath.Join(parent, "state")
			cfgPath := writeConfig(t, cfg)
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "run", "-c", cfgPath)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					cmd.Process.Kill()
					<-done
				}
			})
			waitSocket(t, cfg.Control.Socket, done, &stderr)
			notes := []string{"kelder: vochtplek achter de trap", "zolder: isolatie ontbreekt", "gevel: scheur boven het raam"}
			for _, n := range notes {
				if out, code := agoractl(t, cfg.Control.Socket, "say", n); code != 0 {
					t.Fatalf("say %q: exit %d: %s", n, code, out)
				}
			}
			fault()

			stopAt := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(daemon.UnitStopLimit):
				cmd.Process.Kill()
				<-done
				t.Fatalf("still running %v after SIGTERM (systemd would SIGKILL it):\n%s", daemon.UnitStopLimit, stderr.String())
			}
			took := time.Since(stopAt)
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			t.Logf("%v %v after SIGTERM", cmd.ProcessState, took.Round(time.Millisecond))
			if ws.Signaled() || cmd.ProcessState.ExitCode() != exitStoreFailed {
				t.Fatalf("exit %d (signaled %v: %v), want %d (store failed):\n%s", cmd.ProcessState.ExitCode(), ws.Signaled(), ws.Signal(), exitStoreFailed, stderr.String())
			}
			log := stderr.String()
			if !strings.Contains(log, "store not closed cleanly") || !strings.Contains(log, "last_committed_seq") {
				t.Errorf("the log does not say what was left where:\n%s", log)
			}

			again := next()
			if again == "" {
				return
			}
			s, err := buffer.Open(filepath.Join(again, "state", "store"), buffer.Options{})
			if err != nil {
				t.Fatalf("the next start's store: %v", err)
			}
			defer s.Close()
			recs, err := s.ListListen(0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.Text)
			}
			if strings.Join(got, "|") != strings.Join(notes, "|") {
				t.Fatalf("the next start finds %q, want %q", got, notes)
			}
		})
	}
}

// waitSocket waits until a daemon's control socket answers.
func waitSocket(t *testing.T, socket string, done <-chan error, stderr *bytes.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := control.Dial(socket); err == nil {
			c.Close()
			return
		}
		select {
		case err := <-done:
			t.Fatalf("agorad run ended (%v) before its socket answered:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("agorad never answered on %s:\n%s", socket, stderr.String())
		}
	}
}

// TestRunOnSmallStateDir (issue 23): on a 20 MiB state directory every
// note was refused (the store's reserve alone was 24 MiB). Now notes are
// kept and the daemon stops cleanly.
func TestRunOnSmallStateDir(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	cfg := baseConfig(t, "tcp://127.0.0.1:1")
	cfg.StateDir = filepath.Join(fsfault.MountTmpfs(t, "20m"), "state")
	d := startDaemon(t, writeConfig(t, cfg), cfg.Control.Socket)
	for _, n := range []string{"badkamer: kitten gescheurd", "meterkast: aarding ontbreekt"} {
		if out, code := agoractl(t, d.socket, "say", n); code != 0 {
			t.Fatalf("say %q on a 20 MiB state directory: exit %d: %s", n, code, out)
		}
	}
	if s := status(t, d.socket); s.Buffered != 2 {
		t.Fatalf("buffered %d, want 2", s.Buffered)
	}
	if code := d.stop(t); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, d.log.String())
	}
}

// TestStoreCheckZeroFilledTable (issue 23): the SIGBUS of a memtable flush
// on a full disk left a zero-filled table the MANIFEST does not name, and
// `agorad store check` and `salvage` both panicked on it (index out of
// range in Badger's initIndex). They now report it and salvage every note.
func TestStoreCheckZeroFilledTable(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: agoractl build, real Badger files")
	}
	cfg := baseConfig(t, "tcp://127.0.0.1:1")
	path := writeConfig(t, cfg)
	d := startDaemon(t, path, cfg.Control.Socket)
	for _, n := range []string{"trapleuning los", "rookmelder ontbreekt", "scheur in de vloer"} {
		if out, code := agoractl(t, d.socket, "say", n); code != 0 {
			t.Fatalf("say: %d %s", code, out)
		}
	}
	if code := d.stop(t); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	store := filepath.Join(cfg.StateDir, "store")
	tables, _ := filepath.Glob(filepath.Join(store, "*.sst"))
	zero := filepath.Join(store, fmt.Sprintf("%06d.sst", len(tables)+1))
	if err := os.WriteFile(zero, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runOnce(t, "store", "check", "-c", path)
	if code != exitFailed || !strings.Contains(out, filepath.Base(zero)) || !strings.Contains(out, "3 listen") {
		t.Fatalf("check with a zero-filled unregistered table: exit %d, want %d naming %s with 3 notes:\n%s%s",
			code, exitFailed, filepath.Base(zero), out, errs)
	}
	to := filepath.Join(t.TempDir(), "salvaged")
	code, out, errs = runOnce(t, "store", "salvage", "-c", path, "--to", to)
	if code == exitUsage || code == exitStore || !strings.Contains(out, "salvaged:") || !strings.Contains(out, "3 listen") {
		t.Fatalf("salvage: exit %d\n%s%s", code, out, errs)
	}
}
