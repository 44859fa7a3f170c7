package buffer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4/fb"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/y"
)

// tableBlocks reads a whole table's index the way Badger lays it out (the
// independent truth for the test): each data block's end offset and first
// key.
func tableBlocks(t *testing.T, table []byte) (ends []int, bases [][]byte) {
	t.Helper()
	n := len(table)
	chk := int(binary.BigEndian.Uint32(table[n-4:]))
	ilen := int(binary.BigEndian.Uint32(table[n-8-chk:]))
	idx := fb.GetRootAsTableIndex(table[n-8-chk-ilen:n-8-chk], 0)
	var bo fb.BlockOffset
	for i := range idx.OffsetsLength() {
		if !idx.Offsets(&bo, i) {
			t.Fatalf("index offset %d unreadable", i)
		}
		ends = append(ends, int(bo.Offset()+bo.Len()))
		bases = append(bases, bytes.Clone(y.ParseKey(bo.KeyBytes())))
	}
	return ends, bases
}

// TestSalvageTruncatedTable (issue 23): a store whose one table was cut by
// 25 % (its index and the last quarter of its blocks gone) gave nothing
// back (0 of 6,776 notes). Salvage now reads the data blocks from the start
// of the file: every note in a block that was kept whole comes back, byte
// for byte, and none is made up.
func TestSalvageTruncatedTable(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2,500 notes, three times")
	}
	for _, cut := range []struct {
		name string
		keep func(size int) int
	}{
		{"cut by 25%", func(n int) int { return n * 3 / 4 }},
		{"cut by 60%", func(n int) int { return n * 2 / 5 }},
		{"index cut off", func(n int) int { return n - 100 }},
	} {
		t.Run(cut.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s := openT(t, dir, Options{})
			const n = 2500
			var acked []Record
			for i := range n {
				r, err := s.AppendListen(rec(fmt.Sprintf("note %d: %s", i, strings.Repeat("scheur in de dragende muur ", 1+i%5))))
				if err != nil {
					t.Fatal(err)
				}
				acked = append(acked, r)
			}
			if err := s.Close(); err != nil { // one memtable: one table
				t.Fatal(err)
			}
			tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(tables) != 1 {
				t.Fatalf("%d tables after the close, want 1: %q", len(tables), tables)
			}
			table, err := os.ReadFile(tables[0])
			if err != nil {
				t.Fatal(err)
			}
			keep := cut.keep(len(table))
			// The lower bound: every note before the first block that
			// lost a byte.
			ends, bases := tableBlocks(t, table)
			bound := n
			for i, end := range ends {
				if end > keep {
					bound = 0
					for _, r := range acked {
						if bytes.Compare(listenKey(r.Seq), bases[i]) < 0 {
							bound++
						}
					}
					break
				}
			}
			if err := os.Truncate(tables[0], int64(keep)); err != nil {
				t.Fatal(err)
			}

			to := filepath.Join(t.TempDir(), "salvaged")
			r, err := Salvage(dir, to, CheckOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			out := openT(t, to, Options{})
			got, err := out.ListListen(0)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]Record{}
			for _, a := range acked {
				byID[a.ID] = a
			}
			for _, g := range got {
				w, ok := byID[g.ID]
				gj, _ := json.Marshal(g)
				wj, _ := json.Marshal(w)
				if !ok || !bytes.Equal(gj, wj) {
					t.Fatalf("salvaged %s, written %s", gj, wj)
				}
			}
			t.Logf("table %d bytes, kept %d (%d of %d blocks whole): %d of %d notes salvaged, bound %d; report files %q",
				len(table), keep, countLE(ends, keep), len(ends), len(got), n, bound, r.Files)
			if len(got) < bound {
				t.Fatalf("salvaged %d notes, want at least the %d of the blocks kept whole", len(got), bound)
			}
		})
	}
}

func countLE(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x <= v {
			n++
		}
	}
	return n
}

// FuzzSalvageBlocks feeds arbitrary bytes, seeded with a real table and
// its damages, to the index-less block reader:
// no panic, every block it accepts verifies its checksum and lies inside
// the input, in order. Cheap enough for thousands of inputs a second,
// where FuzzCheckSalvageTable runs the whole check and salvage.
func FuzzSalvageBlocks(f *testing.F) {
	table := damageStore(f).table
	f.Add(table)
	f.Add(table[:len(table)*3/4])
	f.Add(append(bytes.Clone(table[:100]), table[200:]...))
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "000001.sst")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		blocks, _, err := salvageBlocks(p, options.Snappy, func(k []byte, vs y.ValueStruct) {
			if len(k) <= 8 {
				t.Fatalf("key %q without its version", k)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		last := 0
		for _, b := range blocks {
			if b.start < last || b.end <= b.start || b.end > len(data) || b.keys == 0 {
				t.Fatalf("block %+v after %d in %d bytes", b, last, len(data))
			}
			last = b.end
		}
	})
}
