package buffer

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// damageTemplate is a store whose first records were flushed into one
// table (000001.sst, named by the MANIFEST) and whose later records are
// only in the write-ahead log, copied as a crash leaves it.
type damageTemplate struct {
	base           string // the temporary directory holding it all
	dir            string // the store (its identity file beside it)
	table          []byte // 000001.sst as written
	inTable, inWAL []Record
}

var (
	templateOnce sync.Once
	template     damageTemplate
	templateErr  error
)

// TestMain removes the damage template after the tests (and after each
// fuzzing worker), which would otherwise stay in /tmp.
func TestMain(m *testing.M) {
	code := m.Run()
	if template.base != "" {
		os.RemoveAll(template.base)
	}
	os.Exit(code)
}

func damageStore(t testing.TB) damageTemplate {
	t.Helper()
	templateOnce.Do(func() { template, templateErr = buildDamageTemplate() })
	if templateErr != nil {
		t.Fatal(templateErr)
	}
	return template
}

func buildDamageTemplate() (damageTemplate, error) {
	var d damageTemplate
	base, err := os.MkdirTemp("", "agorad-damage-template-")
	if err != nil {
		return d, err
	}
	d.base = base
	live := filepath.Join(base, "live", "store")
	// Small files: check and salvage copy the store (sparse files read
	// whole) for every fuzz input.
	small := Options{MemTableSize: 256 << 10, ValueLogFileSize: 1 << 20, Logger: quiet()}
	s, err := Open(live, small)
	if err != nil {
		return d, err
	}
	for i := range 40 {
		r, err := s.AppendListen(rec("in table " + strconv.Itoa(i) + ": dakgoot lekt bij de schoorsteen"))
		if err != nil {
			return d, err
		}
		d.inTable = append(d.inTable, r)
	}
	if err := s.Close(); err != nil { // flushes the memtable into 000001.sst
		return d, err
	}
	if d.table, err = os.ReadFile(filepath.Join(live, "000001.sst")); err != nil {
		return d, err
	}
	if s, err = Open(live, small); err != nil {
		return d, err
	}
	defer s.Close()
	for i := range 10 {
		r, err := s.AppendListen(rec("in wal " + strconv.Itoa(i) + ": kozijn rot aan de onderkant"))
		if err != nil {
			return d, err
		}
		d.inWAL = append(d.inWAL, r)
	}
	// The copy is what a crash leaves: the write-ahead log not yet flushed.
	d.dir = filepath.Join(base, "crashed", "store")
	if err := os.MkdirAll(filepath.Dir(d.dir), 0o700); err != nil {
		return d, err
	}
	for _, p := range []string{live, live + ".identity"} {
		if out, err := exec.Command("cp", "-a", p, filepath.Join(filepath.Dir(d.dir), filepath.Base(p))).CombinedOutput(); err != nil {
			return d, errors.New(string(out))
		}
	}
	return d, nil
}

// damagedCopy copies the template store and writes table into it: over
// 000001.sst (named) or as an extra table the MANIFEST does not name (as a
// crash in the middle of a memtable flush leaves one).
func damagedCopy(t testing.TB, d damageTemplate, table []byte, named bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	for _, p := range []string{d.dir, d.dir + ".identity"} {
		if out, err := exec.Command("cp", "-a", p, filepath.Join(filepath.Dir(dir), filepath.Base(p))).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v: %s", p, err, out)
		}
	}
	name := "000001.sst"
	if !named {
		name = "000002.sst"
	}
	if err := os.WriteFile(filepath.Join(dir, name), table, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkAndSalvage runs Check and Salvage on dir and checks what no damage
// to one table may break: neither panics (a panic fails the test, or kills
// it when in one of Badger's goroutines), both look at the store, every
// record outside the damaged table is salvaged, and a table that is not the
// original is reported.
func checkAndSalvage(t *testing.T, d damageTemplate, dir string, table []byte, named bool) Report {
	t.Helper()
	intact := bytes.Equal(table, d.table)
	r, err := Check(dir, CheckOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if !intact && named && !r.Damaged() {
		t.Errorf("Check: a damaged 000001.sst not reported: %+v", r)
	}
	to := filepath.Join(t.TempDir(), "salvaged")
	sr, err := Salvage(dir, to, CheckOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Salvage: %v", err)
	}
	s, err := Open(to, Options{Logger: quiet()})
	if err != nil {
		t.Fatalf("open the salvaged store: %v", err)
	}
	defer s.Close()
	got, err := s.ListListen(0)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]Record{}
	for _, g := range got {
		have[g.ID] = g
	}
	must := d.inWAL
	if !named || intact {
		must = append(append([]Record(nil), d.inTable...), d.inWAL...)
	}
	for _, w := range must {
		if g, ok := have[w.ID]; !ok || g.Text != w.Text {
			t.Errorf("salvage lost %s %q (has %q); report %+v", w.ID, w.Text, g.Text, sr)
		}
	}
	return sr
}

// damageTable is orig cut to keep bytes (modulo its length + 1), then
// patched at (modulo the kept length) with patch, XORed when xor. Fuzz
// inputs describe a damage rather than carry a table: each fuzz worker
// builds its own template store, with its own ids and table bytes.
func damageTable(orig []byte, keep, at uint32, patch []byte, xor bool) []byte {
	b := bytes.Clone(orig[:int(keep)%(len(orig)+1)])
	if len(b) == 0 {
		return b
	}
	for i, p := range patch {
		j := (int(at) + i) % len(b)
		if xor {
			b[j] ^= p
		} else {
			b[j] = p
		}
	}
	return b
}

// FuzzCheckSalvageTable feeds damaged tables (truncated, zero-filled, bit
// flipped, garbage, and what the fuzzer makes of them) to Check and
// Salvage, as the table the MANIFEST names or as an extra one (issue 23: a
// zero-filled, unregistered 000001.sst left by a SIGBUS in a memtable flush
// made both panic in Badger's initIndex, in a goroutine of Badger's Open).
// Neither may panic, the damage is reported, everything outside the table
// is salvaged. The seed corpus runs in every `go test`; `make fuzz` fuzzes
// for FUZZTIME.
func FuzzCheckSalvageTable(f *testing.F) {
	n := uint32(len(damageStore(f).table))
	garbage := make([]byte, n)
	for i := range garbage {
		garbage[i] = byte(i*7919 + i>>3)
	}
	for _, named := range []bool{true, false} {
		f.Add(n, uint32(0), []byte(nil), false, named)                  // intact
		f.Add(n*3/4, uint32(0), []byte(nil), false, named)              // truncated by 25 %
		f.Add(uint32(0), uint32(0), []byte(nil), false, named)          // empty
		f.Add(n, uint32(0), make([]byte, n), false, named)              // zero-filled
		f.Add(n, uint32(40), []byte{0x5a}, true, named)                 // a bit flip in the first block
		f.Add(n, n-60, []byte{0x5a}, true, named)                       // ... in the index
		f.Add(n, n-1, []byte{0x01}, true, named)                        // ... in the checksum length
		f.Add(n, uint32(0), garbage, false, named)                      // garbage
		f.Add(n/2, n/2-8, []byte{0, 0, 0, 0, 0, 0, 0, 0}, false, named) // cut with a zeroed tail
	}
	f.Fuzz(func(t *testing.T, keep, at uint32, patch []byte, xor, named bool) {
		d := damageStore(t)
		table := damageTable(d.table, keep, at, patch, xor)
		checkAndSalvage(t, d, damagedCopy(t, d, table, named), table, named)
	})
}
