package buffer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
func storeWithRecords(t *testing.T, dir string, n int) (*Store, []Record) {
	t.Helper()
	s, err := Open(dir, Options{Logger: quiet()})
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
	}{
		{
			name:  "directory removed",
			fault: func(t *testing.T, s *Store) { _ = os.RemoveAll(s.dir) },
			cause: syscall.ENOENT,
			limit: 5 * time.Second,
		},
		{
			name: "close blocks past its limit",
			fault: func(t *testing.T, s *Store) {
				release := make(chan struct{})
				s.testHookFlushHazard = func() error { <-release; return nil }
				t.Cleanup(func() { close(release); _ = s.Close() }) // waits for the first Close
			},
			limit: 300 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := storeWithRecords(t, filepath.Join(t.TempDir(), "store"), 20)
			tt.fault(t, s)
			took, err := closeTimed(s, tt.limit)
			if !errors.Is(err, ErrCloseFailed) || (tt.cause != nil && !errors.Is(err, tt.cause)) {
				t.Fatalf("CloseWithin: %v; want ErrCloseFailed (cause %v)", err, tt.cause)
			}
			if took > tt.limit+time.Second {
				t.Fatalf("CloseWithin(%v) took %v", tt.limit, took)
			}
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
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
	s, acked := storeWithRecords(t, filepath.Join(e.Dir, "store"), 25)
	e.RemountReadOnly(t)
	took, err := closeTimed(s, 5*time.Second)
	if !errors.Is(err, ErrCloseFailed) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("CloseWithin on a read-only remount: %v; want ErrCloseFailed wrapping EROFS", err)
	}
	if took > 2*time.Second {
		t.Fatalf("CloseWithin took %v on a read-only file system", took)
	}
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
	s, acked := storeWithRecords(t, filepath.Join(dir, "store"), 200)
	ballast := filepath.Join(dir, "ballast")
	fsfault.Fill(t, ballast)
	took, err := closeTimed(s, 5*time.Second)
	if !errors.Is(err, ErrCloseFailed) || !errors.Is(err, ErrDiskFull) {
		t.Fatalf("CloseWithin on a full disk: %v; want ErrCloseFailed wrapping ErrDiskFull", err)
	}
	t.Logf("%v after %v", err, took.Round(time.Millisecond))
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	s2 := openT(t, copyDir(t, filepath.Join(dir, "store")), Options{})
	checkListen(t, s2, acked)
}
