package buffer

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/buffer/fsfault"
)

// copyDir copies a store directory as it is now: Badger's directory lock
// keeps a store left open (as a dead process would not) from being
// reopened in place by this process.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("copy %s: %v: %s", from, err, out)
	}
	return to
}

// storeWithRecords opens a store in dir and appends n records (left in
// Badger's memtable and write-ahead log: far below a memtable).
func storeWithRecords(t *testing.T, dir string, n int, log *logLines) (*Store, []Record) {
	t.Helper()
	s, err := Open(dir, Options{Logger: slog.New(slog.NewJSONHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var acked []Record
	for i := range n {
		r, err := s.AppendListen(rec("note " + strconv.Itoa(i) + ": vochtplek in de kelder"))
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, r)
	}
	return s, acked
}

// closeTimed runs CloseWithin(limit) and returns its error and duration.
func closeTimed(s *Store, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	err := s.CloseWithin(limit)
	return time.Since(start), err
}

// TestCloseWithinFailedDirectory: whatever happened to the state directory,
// CloseWithin returns within its limit with ErrCloseFailed naming the cause
// (without the bound, Badger's flush into a removed directory retries once a
// second forever).
func TestCloseWithinFailedDirectory(t *testing.T) {
	tests := []struct {
		name  string
		fault func(t *testing.T, s *Store) // applied after the writes
		cause error                        // wrapped in the close error
		limit time.Duration
		where string // in the log line's "where"
	}{
		{
			name:  "directory removed",
			fault: func(t *testing.T, s *Store) { _ = os.RemoveAll(s.dir) },
			cause: syscall.ENOENT,
			limit: 5 * time.Second,
			where: "the state directory is gone",
		},
		{
			name: "close blocks past its limit",
			fault: func(t *testing.T, s *Store) {
				release := make(chan struct{})
				s.testHookFlushHazard = func() error { <-release; return nil }
				t.Cleanup(func() { close(release); _ = s.Close() }) // waits for the first Close
			},
			limit: 300 * time.Millisecond,
			where: ".mem (",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log logLines
			s, _ := storeWithRecords(t, filepath.Join(t.TempDir(), "store"), 20, &log)
			tt.fault(t, s)
			took, err := closeTimed(s, tt.limit)
			if !errors.Is(err, ErrCloseFailed) || (tt.cause != nil && !errors.Is(err, tt.cause)) {
				t.Fatalf("CloseWithin: %v; want ErrCloseFailed (cause %v)", err, tt.cause)
			}
			if took > tt.limit+time.Second {
				t.Fatalf("CloseWithin(%v) took %v", tt.limit, took)
			}
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
			log.wantLeft(t, 20, tt.where)
		})
	}
}

// TestCloseWithinReadOnlyRemount: an ext4 error remounts the state
// directory read-only under an open store. The close is not attempted (its
// flush would retry forever), and after e2fsck every acknowledged record is
// read back from Badger's write-ahead log.
func TestCloseWithinReadOnlyRemount(t *testing.T) {
	if testing.Short() {
		t.Skip("loop-mounted ext4")
	}
	e := fsfault.MountExt4(t, 64)
	var log logLines
	s, acked := storeWithRecords(t, filepath.Join(e.Dir, "store"), 25, &log)
	e.RemountReadOnly(t)
	took, err := closeTimed(s, 5*time.Second)
	if !errors.Is(err, ErrCloseFailed) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("CloseWithin on a read-only remount: %v; want ErrCloseFailed wrapping EROFS", err)
	}
	if took > 2*time.Second {
		t.Fatalf("CloseWithin took %v on a read-only file system", took)
	}
	log.wantLeft(t, 25, "the file system is read-only")
	s2 := openT(t, filepath.Join(e.CrashCopy(t), "store"), Options{})
	checkListen(t, s2, acked)
}

// TestCloseWithinDiskFull: with the file system filled to the last block
// after the writes, the close does not run Badger's memtable flush (which
// would write into an mmap of a sparse table file: SIGBUS), returns
// ErrDiskFull, and once space returns every record is read back.
func TestCloseWithinDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := fsfault.MountTmpfs(t, "32m")
	var log logLines
	s, acked := storeWithRecords(t, filepath.Join(dir, "store"), 200, &log)
	ballast := filepath.Join(dir, "ballast")
	fsfault.Fill(t, ballast)
	took, err := closeTimed(s, 5*time.Second)
	if !errors.Is(err, ErrCloseFailed) || !errors.Is(err, ErrDiskFull) {
		t.Fatalf("CloseWithin on a full disk: %v; want ErrCloseFailed wrapping ErrDiskFull", err)
	}
	t.Logf("%v after %v", err, took.Round(time.Millisecond))
	log.wantLeft(t, 200, "write-ahead log (0")
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, copyDir(t, filepath.Join(dir, "store")), Options{})
	checkListen(t, s2, acked)
}

// wantLeft checks the one line an unclean close logs: the records it
// holds, and where they are.
func (l *logLines) wantLeft(t *testing.T, listen int, where string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var found []map[string]any
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "store not closed cleanly: what was accepted stays where Badger left it" {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d unclean-close lines, want 1:\n%s", len(found), l.buf.String())
	}
	m := found[0]
	if got, _ := m["listen"].(float64); int(got) != listen || !strings.Contains(fmt.Sprint(m["where"]), where) {
		t.Fatalf("unclean close logged listen %v, where %q; want %d and %q", m["listen"], m["where"], listen, where)
	}
}
