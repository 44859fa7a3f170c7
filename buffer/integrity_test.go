package buffer

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSeqAfterStops: after a clean Close the counter continues without a
// gap; after an unclean stop (the files as kill -9 leaves them) it resumes
// above the lease, so no seq is handed out twice even if the last writes
// were lost without a trace.
func TestSeqAfterStops(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "store")
	s, err := Open(dir, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for range 3 {
		r, err := s.AppendListen(rec("x"))
		if err != nil {
			t.Fatal(err)
		}
		last = r.Seq
	}
	crashed := filepath.Join(root, "crashed")
	copyStore(t, dir, crashed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, dir, Options{Logger: quiet()})
	if r, err := s.AppendListen(rec("y")); err != nil || r.Seq != last+1 {
		t.Errorf("after a clean stop: seq %d (%v), want %d", r.Seq, err, last+1)
	}
	c := openT(t, crashed, Options{Logger: quiet()})
	r, err := c.AppendListen(rec("z"))
	// The first write took the lease to 1+leaseBlock.
	if err != nil || r.Seq != 1+leaseBlock+1 {
		t.Errorf("after an unclean stop: seq %d (%v), want %d (above the lease)", r.Seq, err, 1+leaseBlock+1)
	}
	if s.StoreID() == "" || s.StoreID() != c.StoreID() {
		t.Errorf("store ids %q and %q: a copy is the same store", s.StoreID(), c.StoreID())
	}
}

func TestIdentityRefusals(t *testing.T) {
	mk := func(t *testing.T, dir string, n int) {
		s, err := Open(dir, Options{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := s.AppendListen(rec("x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("replaced by another store", func(t *testing.T) {
		root := t.TempDir()
		a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
		mk(t, a, 3)
		mk(t, b, 5) // more data, higher seq: only the id tells them apart
		if err := os.RemoveAll(a); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(b, a); err != nil {
			t.Fatal(err)
		}
		_, err := Open(a, Options{Logger: quiet()})
		if !errors.Is(err, ErrRolledBack) || !strings.Contains(err.Error(), "replaced") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("identity file damaged", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "s")
		mk(t, dir, 2)
		b, _ := os.ReadFile(identityPath(dir))
		b[len(b)/2] ^= 0x20
		if err := os.WriteFile(identityPath(dir), b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, Options{Logger: quiet()})
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "identity") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("identity file missing is recreated", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "s")
		mk(t, dir, 2)
		s := openT(t, dir, Options{Logger: quiet()})
		id := s.StoreID()
		s.Close()
		if err := os.Remove(identityPath(dir)); err != nil {
			t.Fatal(err)
		}
		s = openT(t, dir, Options{Logger: quiet()})
		if s.StoreID() != id {
			t.Errorf("store id %q after recreating the identity, want %q", s.StoreID(), id)
		}
		if _, err := os.Stat(identityPath(dir)); err != nil {
			t.Error(err)
		}
	})
}

func TestCountsNeverNegative(t *testing.T) {
	s := openT(t, "", Options{Logger: quiet()})
	s.mu.Lock()
	s.acct.add(areaData, -2, -100) // an accounting slip, as a scan that stopped early made
	s.acct.add(areaListen, -1, -10)
	s.mu.Unlock()
	n, err := s.OutboxCount()
	if err != nil || n != 0 {
		t.Errorf("outbox count %d (%v), want 0", n, err)
	}
	st, err := s.Stats()
	if err != nil || st.OutboxData != 0 || st.Listen != 0 || st.StoredBytes < 0 {
		t.Errorf("stats %+v (%v)", st, err)
	}
}

// BenchmarkIdentityAdvance is the per-write cost of the high-water mark
// under sync "always" (one pwrite, no fsync), to set against the fsync of
// the write itself (hundreds of µs, docs/storage.md).
func BenchmarkIdentityAdvance(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "s")
	id, err := createIdentity(dir, "01a2061c-d327-7595-b098-28e6ab60af1e", 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := id.open(); err != nil {
		b.Fatal(err)
	}
	defer id.close(id.Seq, id.Seq)
	for i := 0; b.Loop(); i++ {
		if err := id.advance(uint64(i + 1)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestOrphanTables: a table the MANIFEST does not name is let go (Badger
// deletes it) only when the store holds every record in it; otherwise the
// start is refused, the table kept for salvage, and the next start refused
// again.
func TestOrphanTables(t *testing.T) {
	mk := func(t *testing.T, dir, text string, n int) string {
		s, err := Open(dir, Options{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := s.AppendListen(rec(text + strings.Repeat("!", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil { // flushes into a table
			t.Fatal(err)
		}
		m, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
		if len(m) == 0 {
			t.Fatal("no table")
		}
		return m[0]
	}
	copyFile := func(t *testing.T, from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("covered: a crash leftover", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "s")
		tbl := mk(t, dir, "a", 20)
		copyFile(t, tbl, filepath.Join(dir, "000099.sst"))
		s, err := Open(dir, Options{Logger: quiet()})
		if err != nil {
			t.Fatalf("open with a covered orphan: %v", err)
		}
		s.Close()
		if _, err := os.Stat(orphanDir(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("quarantine left behind: %v", err)
		}
	})
	t.Run("records only in the orphan", func(t *testing.T) {
		root := t.TempDir()
		// Seqs 1-40 there, 1-20 here: 21-40 exist only in the orphan.
		other := mk(t, filepath.Join(root, "other"), "b", 40)
		dir := filepath.Join(root, "s")
		mk(t, dir, "a", 20)
		copyFile(t, other, filepath.Join(dir, "000099.sst"))
		// Not refused (after kill -9 a crash mid-compaction looks the same
		// with nothing lost: TestKill9), but logged and kept aside, so
		// check and salvage still see the records.
		for range 2 {
			var log bytes.Buffer
			s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatalf("open with an orphan holding records: %v", err)
			}
			s.Close()
			if !strings.Contains(log.String(), "000099.sst") || !strings.Contains(log.String(), "level=ERROR") {
				t.Errorf("the orphan was not reported as an error:\n%s", log.String())
			}
			if _, err := os.Stat(filepath.Join(orphanDir(dir), "000099.sst")); err != nil {
				t.Fatalf("orphan not kept aside: %v", err)
			}
		}
		r, err := Check(dir, CheckOptions{TempDir: root})
		if err != nil || r.Listen != 40 {
			t.Errorf("check sees %d listen records (%v), want 40 (20 + the 20 only kept aside)", r.Listen, err)
		}
	})
}

// TestVlogFilesDoNotAccumulate: protecting the newest value-log file at
// each Open must not leave a file per start, clean or not.
func TestVlogFilesDoNotAccumulate(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "s")
	s, err := Open(dir, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.JournalAudio(make([]float32, 16000), time.Now()); err != nil { // into the value log
		t.Fatal(err)
	}
	s.Close()
	for i := range 6 {
		s, err := Open(dir, Options{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 { // as kill -9 leaves it: the new, preallocated file not cut back
			copyStore(t, dir, dir+".crash")
			s.Close()
			os.RemoveAll(dir)
			os.Remove(identityPath(dir))
			if err := os.Rename(dir+".crash", dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(identityPath(dir+".crash"), identityPath(dir)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		s.Close()
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if len(m) > 3 {
		t.Errorf("%d value-log files after 6 starts: %v", len(m), m)
	}
	s = openT(t, dir, Options{Logger: quiet()})
	if a, err := s.PendingAudio(); err != nil || len(a) != 1 {
		t.Errorf("journal after the starts: %d clips (%v)", len(a), err)
	}
}

// TestIncompleteOrphanTable: kill -9 while Badger writes a table leaves an
// empty or partial file the MANIFEST does not name: not damage.
func TestIncompleteOrphanTable(t *testing.T) {
	for _, size := range []int{0, 100} {
		dir := filepath.Join(t.TempDir(), "s")
		s := openT(t, dir, Options{Logger: quiet()})
		if _, err := s.AppendListen(rec("x")); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := os.WriteFile(filepath.Join(dir, "000077.sst"), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{Logger: quiet()})
		if err != nil {
			t.Fatalf("%d-byte orphan table: %v", size, err)
		}
		s.Close()
	}
}
