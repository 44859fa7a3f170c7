package buffer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// contents is what a store holds, by id.
type contents struct {
	listen, outbox, journal []string
	unreadable              int // outbox entries yielded as unreadable
	seq                     uint64
}

func (c contents) all() []string {
	return slices.Concat(c.listen, c.outbox, c.journal)
}

func readContents(t *testing.T, s *Store) contents {
	t.Helper()
	var c contents
	recs, err := s.ListListen(0)
	if err != nil {
		t.Fatalf("list listen: %v", err)
	}
	for _, r := range recs {
		c.listen = append(c.listen, r.ID+"/"+r.Text)
	}
	es, err := s.Pending(0)
	if err != nil {
		t.Fatalf("pending: %v", err)
	}
	for _, e := range es {
		if e.Unreadable != "" {
			c.unreadable++
			continue
		}
		c.outbox = append(c.outbox, e.ID+"/"+strconv.FormatUint(e.Seq, 10))
	}
	as, err := s.PendingAudio()
	if err != nil {
		t.Fatalf("pending audio: %v", err)
	}
	for _, a := range as {
		c.journal = append(c.journal, a.ID)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	c.seq = st.Seq
	return c
}

// populate fills a store in two phases: the first is closed (its data goes
// to tables and the value log), the second stays in the write-ahead log
// (.mem) and the directory is copied while the store is open, which is the
// state a kill -9 leaves (the page cache is the file). It returns the copy
// and the ids written in the first phase.
func populate(t *testing.T, root string) (snap string, phase1 []string) {
	t.Helper()
	dir := filepath.Join(root, "store")
	s, err := Open(dir, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := s.AppendListen(rec("scheur in de balk nummer " + strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			if _, _, err := s.FlushListen(false); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 50 {
		if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{"i":`+strconv.Itoa(i)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	for range 4 {
		smp := make([]float32, 16000)
		for j := range smp {
			smp[j] = float32(j%100) / 200
		}
		if _, err := s.JournalAudio(smp, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	phase1 = readContents(t, s).all()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 53 {
		if _, err := s.Enqueue(LaneData, KindEvent, false, []byte(`{"event":"fase2-`+strconv.Itoa(i)+`"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendListen(rec("tweede fase " + strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	snap = filepath.Join(root, "snap")
	copyStore(t, dir, snap)
	return snap, phase1
}

// copyStore copies a store directory and its identity file.
func copyStore(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := copyStoreFiles(from, to); err != nil {
		t.Fatal(err)
	}
	if err := copySparse(identityPath(from), identityPath(to)); err != nil {
		t.Fatal(err)
	}
}

// used is the length of f up to its last non-zero byte (the write-ahead
// log and the value log are preallocated).
func used(t *testing.T, p string) int64 {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := len(b)
	for n > 0 && b[n-1] == 0 {
		n--
	}
	return int64(n)
}

func garbleAt(t *testing.T, p string, frac float64) {
	t.Helper()
	n := used(t, p)
	junk := []byte(strings.Repeat("GARBLED!", 8))
	if int64(len(junk)) > n {
		junk = junk[:n]
	}
	off := min(int64(float64(n)*frac), n-int64(len(junk)))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(junk, off); err != nil {
		t.Fatal(err)
	}
}

func truncateAt(t *testing.T, p string, frac float64) {
	t.Helper()
	if err := os.Truncate(p, int64(float64(used(t, p))*frac)); err != nil {
		t.Fatal(err)
	}
}

// TestDamage damages copies of one populated store, file by file, and
// holds Open (as the daemon calls it) and Salvage to their promises: Open
// starts with all data or refuses naming the damage and the check/salvage
// commands, never panics, never starts with less; seq never goes back;
// Salvage recovers what the damage did not touch.
func TestDamage(t *testing.T) {
	root := t.TempDir()
	snap, phase1 := populate(t, root)
	bdir := filepath.Join(root, "baseline")
	copyStore(t, snap, bdir)
	bs, err := Open(bdir, Options{Logger: quiet()})
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	baseline := readContents(t, bs)
	baseID := bs.StoreID()
	bs.Close()
	if len(baseline.listen) != 53 || len(baseline.outbox) != 50+3+53 || len(baseline.journal) != 4 {
		t.Fatalf("baseline: %d listen, %d outbox, %d journal", len(baseline.listen), len(baseline.outbox), len(baseline.journal))
	}
	phase2 := diff(baseline.all(), phase1)

	first := func(d, pattern string) string {
		m, _ := filepath.Glob(filepath.Join(d, pattern))
		sort.Strings(m)
		if len(m) == 0 {
			t.Fatalf("no %s in %s", pattern, d)
		}
		return m[0]
	}
	del := func(t *testing.T, p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	// keep is what Salvage must recover: the records the damage did not
	// touch. Damage to a table's data loses the records of the damaged
	// block (4 KiB, checksummed: salvage reads the others one by one);
	// damage to its index (truncation, the end) loses the table, whose
	// blocks can no longer be located; damage to the write-ahead log loses
	// the entries from the damage on (a chain Badger cannot read past).
	const (
		keepAll    = "all"
		keepPhase1 = "phase1" // the tables and value log
		keepPhase2 = "phase2" // the write-ahead log
		keepVlog   = "all but the unreadable values"
		keepBlocks = "all but the damaged block's"
		keepWAL    = "all but the transactions the damage hit"
	)
	cases := []struct {
		name, file string
		damage     func(t *testing.T, p string)
		keep       string
	}{
		{"MANIFEST deleted", "MANIFEST", del, keepAll},
		{"MANIFEST truncated", "MANIFEST", func(t *testing.T, p string) { truncateAt(t, p, 0.6) }, keepAll},
		{"MANIFEST garbled", "MANIFEST", func(t *testing.T, p string) { garbleAt(t, p, 0.5) }, keepAll},
		// Cut at a record boundary: it replays cleanly and names no table.
		{"MANIFEST truncated at a record boundary", "MANIFEST", func(t *testing.T, p string) {
			if err := os.Truncate(p, 8); err != nil { // the magic only
				t.Fatal(err)
			}
		}, keepAll},
		{"sst truncated 10%", "*.sst", func(t *testing.T, p string) { truncateAt(t, p, 0.1) }, keepPhase2},
		{"sst truncated 50%", "*.sst", func(t *testing.T, p string) { truncateAt(t, p, 0.5) }, keepPhase2},
		{"sst truncated 99%", "*.sst", func(t *testing.T, p string) { truncateAt(t, p, 0.99) }, keepPhase2},
		{"sst garbled at 0%", "*.sst", func(t *testing.T, p string) { garbleAt(t, p, 0) }, keepBlocks},
		{"sst garbled at 30%", "*.sst", func(t *testing.T, p string) { garbleAt(t, p, 0.3) }, keepBlocks},
		{"sst garbled at 70%", "*.sst", func(t *testing.T, p string) { garbleAt(t, p, 0.7) }, keepBlocks},
		{"sst garbled at the end (index)", "*.sst", func(t *testing.T, p string) { garbleAt(t, p, 1) }, keepPhase2},
		{"vlog truncated", "000001.vlog", func(t *testing.T, p string) { truncateAt(t, p, 0.5) }, keepVlog},
		{"vlog garbled at 20%", "000001.vlog", func(t *testing.T, p string) { garbleAt(t, p, 0.2) }, keepVlog},
		{"vlog garbled at 60%", "000001.vlog", func(t *testing.T, p string) { garbleAt(t, p, 0.6) }, keepVlog},
		{"mem garbled after kill -9", "*.mem", func(t *testing.T, p string) { garbleAt(t, p, 0.5) }, keepWAL},
		{"mem truncated after kill -9", "*.mem", func(t *testing.T, p string) { truncateAt(t, p, 0.5) }, keepPhase1},
		{"mem deleted after kill -9", "*.mem", del, keepPhase1},
		{"KEYREGISTRY deleted", "KEYREGISTRY", del, keepAll},
		{"store emptied", "*", func(t *testing.T, p string) {
			for _, f := range must(filepath.Glob(filepath.Join(filepath.Dir(p), "*"))) {
				del(t, f)
			}
		}, keepAll},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, "case"+strconv.Itoa(i))
			copyStore(t, snap, dir)
			p := first(dir, c.file)
			orig := c.file
			if orig != "*" {
				orig = filepath.Base(p)
			}
			c.damage(t, p)

			s, err := Open(dir, Options{Logger: quiet()})
			if err != nil {
				msg := err.Error()
				if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrRolledBack) {
					t.Errorf("refusal does not wrap ErrDamaged or ErrRolledBack: %v", err)
				}
				for _, want := range []string{"agorad store check", "agorad store salvage"} {
					if !strings.Contains(msg, want) {
						t.Errorf("refusal does not name %q: %v", want, err)
					}
				}
				if !strings.Contains(msg, orig) && !strings.Contains(msg, "seq") &&
					!(filepath.Ext(orig) != "" && strings.Contains(msg, filepath.Ext(orig))) {
					t.Errorf("refusal names neither the damaged file %s nor the lost seqs: %v", orig, err)
				}
				t.Logf("refused: %v", firstLine(msg))
				// Refused again on the next start: nothing was "repaired"
				// into a smaller store.
				if s2, err := Open(dir, Options{Logger: quiet()}); err == nil {
					s2.Close()
					t.Errorf("second start after a refusal succeeded")
				}
			} else {
				got := readContents(t, s)
				s.Close()
				missing := diff(baseline.outbox, got.outbox)
				if !slices.Equal(got.listen, baseline.listen) || !slices.Equal(got.journal, baseline.journal) ||
					len(missing) != got.unreadable || len(got.outbox)+got.unreadable != len(baseline.outbox) {
					t.Errorf("started with less data: listen %d/%d, journal %d/%d, outbox %d + %d unreadable / %d",
						len(got.listen), len(baseline.listen), len(got.journal), len(baseline.journal),
						len(got.outbox), got.unreadable, len(baseline.outbox))
				}
				if got.unreadable > 0 && c.keep != keepVlog {
					t.Errorf("%d unreadable outbox entries after %s", got.unreadable, c.name)
				}
				if got.seq < baseline.seq {
					t.Errorf("seq went back: %d < %d", got.seq, baseline.seq)
				}
				if damaged := got.unreadable > 0; s.vlogDamaged.Load() != damaged {
					t.Errorf("value-log GC off = %v with %d unreadable entries", s.vlogDamaged.Load(), got.unreadable)
				}
				t.Logf("started with all data (%d outbox entries as dead letters)", got.unreadable)
			}
			if c.name == "store emptied" {
				return // nothing to salvage
			}

			to := filepath.Join(root, "salvaged"+strconv.Itoa(i))
			rep, err := Salvage(dir, to, CheckOptions{TempDir: root})
			if err != nil {
				t.Fatalf("salvage: %v", err)
			}
			ns, err := Open(to, Options{Logger: quiet()})
			if err != nil {
				t.Fatalf("open salvaged store: %v", err)
			}
			got := readContents(t, ns)
			ns.Close()
			if rep.NewStoreID == "" || rep.NewStoreID == baseID {
				t.Errorf("salvaged store id %q, damaged one %q", rep.NewStoreID, baseID)
			}
			all := got.all()
			if extra := diff(all, baseline.all()); len(extra) > 0 {
				t.Errorf("salvage made up %d records: %v", len(extra), extra)
			}
			var want []string
			switch c.keep {
			case keepAll:
				want = baseline.all()
			case keepPhase1:
				want = phase1
			case keepPhase2:
				want = phase2
			case keepBlocks:
				// At most the records of one 4 KiB block (about 10 notes
				// here), and the block named in the report.
				want = nil
				if lost := len(diff(baseline.all(), all)); lost > 10 || !strings.Contains(strings.Join(rep.Files, " "), "block ") {
					t.Errorf("data block damage: %d records lost, report %v", lost, rep.Files)
				}
			case keepWAL:
				// A garble of 64 bytes hits one or two transactions (one
				// record each); the gap is reported.
				want = nil
				if lost := len(diff(baseline.all(), all)); lost > 2 || !strings.Contains(strings.Join(rep.Files, " "), "unreadable") {
					t.Errorf("write-ahead log damage: %d records lost, report %v", lost, rep.Files)
				}
			case keepVlog:
				want = baseline.all()
				// Only the values the damage hit (a garble of 64 bytes: one
				// or two), every one of them reported.
				lost := len(diff(want, all))
				if lost == 0 || (strings.Contains(c.name, "garbled") && lost > 2) || len(rep.Unreadable) != lost {
					t.Errorf("vlog damage: %d records lost, %d reported unreadable", lost, len(rep.Unreadable))
				}
				want = nil
			}
			if lost := diff(want, all); len(lost) > 0 {
				t.Errorf("salvage lost %d untouched records (of %d): %v", len(lost), len(want), lost[:min(3, len(lost))])
			}
			t.Logf("salvage: %d of %d records, %d unreadable values, damaged files %v", len(all), len(baseline.all()), len(rep.Unreadable), rep.Files)
		})
	}
}

// diff is a minus b.
func diff(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
