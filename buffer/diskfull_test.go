package buffer

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mountTmpfs mounts a tmpfs of size (e.g. "4m") on a fresh directory and
// unmounts it at cleanup (registered first, so it runs after the store's
// Close).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("full-disk test needs to mount a tmpfs (root or CAP_SYS_ADMIN): mount -t tmpfs -o size=%s tmpfs %s: %v: %s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// smallDevice is a Badger configuration that fits a 6 MiB file system.
func smallDevice() Options {
	return Options{
		MemTableSize:     256 << 10,
		ValueLogFileSize: 1 << 20,
		BlockCacheSize:   1 << 20,
		IndexCacheSize:   1 << 20,
		// Two compactors writing 1 MiB tables at once, a memtable flush and
		// slack: with 1.5 MiB a compaction's mmap write on the full tmpfs
		// died of SIGBUS on a loaded machine (make test-fresh).
		ReserveBytes: 3 << 20,
		Logger:       quiet(),
	}
}

// TestDiskFull fills a 6 MiB tmpfs through AppendListen until the store
// reports ErrDiskFull, checks that everything acknowledged is readable, frees
// space and checks that appends resume, then that all of it survives a
// reopen.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := mountTmpfs(t, "6m")
	// Ballast taking the space we will "free" later.
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openT(t, dir, smallDevice())
	var acked []Record
	var err error
	text := strings.Repeat("lasnaad gecontroleerd, geen afwijkingen. ", 10)
	for len(acked) < 100000 {
		var r Record
		if r, err = s.AppendListen(rec(text)); err != nil {
			break
		}
		acked = append(acked, r)
	}
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("after %d appends: %v; want ErrDiskFull naming %s", len(acked), err, dir)
	}
	t.Logf("disk full after %d records: %v", len(acked), err)
	// Other writes are refused the same way, reads keep working. A
	// compaction finishing meanwhile may free a little space (CI saw a
	// journal write fit right after the refusal): writes fit until it is
	// used up, then are refused, and what fitted is kept.
	var journaled []string
	for err = nil; err == nil && len(journaled) < 1000; {
		var id string
		if id, err = s.JournalAudio(make([]float32, 16000), rec("").StartedAt); err == nil {
			journaled = append(journaled, id)
		}
	}
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("journal on a full disk, after %d more fitted: %v", len(journaled), err)
	}
	if len(journaled) > 0 {
		t.Logf("%d journal writes fitted in space a compaction freed", len(journaled))
	}
	if pending, err := s.PendingAudio(); err != nil || len(pending) != len(journaled) {
		t.Fatalf("%d journaled audio readable (%v), %d acknowledged", len(pending), err, len(journaled))
	}
	checkListen(t, s, acked)
	if st, _ := s.Stats(); !strings.Contains(st.LastError, "disk full") {
		t.Errorf("Stats.LastError = %q", st.LastError)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		r, err := s.AppendListen(rec(text))
		if err != nil {
			t.Fatalf("append after space came back: %v", err)
		}
		acked = append(acked, r)
	}
	checkListen(t, s, acked)
	s = reopen(t, s)
	checkListen(t, s, acked)
	// A flush needs room for the batch (here a 1 MiB value-log file each):
	// it either fits or is refused whole, losing nothing.
	for {
		e, n, err := s.FlushListen(false)
		if errors.Is(err, ErrDiskFull) {
			t.Logf("flush refused on the nearly full disk: %v", err)
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		b := decodeBatch(t, e)
		if b.Count != n {
			t.Fatalf("FlushListen said %d records, the batch holds %d", n, b.Count)
		}
		t.Logf("flushed a batch of %d", b.Count)
		acked = acked[b.Count:]
	}
	checkListen(t, s, acked)
}

func checkListen(t *testing.T, s *Store, acked []Record) {
	t.Helper()
	list, err := s.ListListen(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(acked) {
		t.Fatalf("%d records readable, %d acknowledged", len(list), len(acked))
	}
	for i := range acked {
		if list[i].ID != acked[i].ID || list[i].Text != acked[i].Text {
			t.Fatalf("record %d = %s, want %s", i, list[i].ID, acked[i].ID)
		}
	}
}
