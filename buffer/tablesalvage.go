package buffer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger's value meta bits and value pointer (value.go, structs.go): a
// pointer is {Fid, Len, Offset uint32} copied from memory, so native order.
const (
	metaDelete       = 1 << 0
	metaValuePointer = 1 << 1
	vptrLen          = 12
)

// recovered is one key read block by block out of a damaged table.
type recovered struct {
	version uint64
	deleted bool
	value   []byte
	err     error // the value could not be read from the value log
}

// salvageTable reads what it can of a table whose whole-table verification
// failed: when its index is intact (the damage is in data blocks), every
// block is read on its own, with its checksum verified, so only the records
// of the damaged blocks are lost. Values in the value log are read from the
// store's .vlog files in dir (checksum verified). A table whose index is
// gone (truncated, garbled at the end) is read from its start, block by
// block (salvageblocks.go); an encrypted one gives nothing.
// It returns the newest version of each key it read and what it could not
// read.
func salvageTable(dir, path string, tm badger.TableManifest) (out map[string]recovered, lost []string) {
	out = map[string]recovered{}
	// Whatever Badger's table code does with a damaged table, it is one
	// table: reported, never a panic of check or salvage.
	defer func() {
		if r := recover(); r != nil {
			lost = append(lost, fmt.Sprintf("%s: unreadable (Badger panicked: %s)", filepath.Base(path), firstLine(fmt.Sprint(r))))
		}
	}()
	opts := table.Options{ReadOnly: true, ChkMode: options.OnBlockRead, BlockSize: 4 << 10,
		BloomFalsePositive: 0.01, Compression: tm.Compression}
	if tm.KeyID != 0 {
		return out, []string{filepath.Base(path) + ": encrypted: block-level salvage not supported"}
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return out, []string{filepath.Base(path) + ": " + err.Error()}
	}
	defer mf.Fd.Close()
	var t *table.Table
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("index unreadable (%s)", firstLine(fmt.Sprint(r)))
			}
		}()
		t, err = table.OpenTable(mf, opts)
	}()
	if err != nil {
		return out, salvageWithoutIndex(dir, path, tm.Compression, firstLine(err.Error()), out)
	}
	bases := t.KeySplits(math.MaxInt32, nil)
	for i, base := range bases {
		var next []byte
		if i+1 < len(bases) {
			next = []byte(bases[i+1])
		}
		n, err := readBlock(t, []byte(base), next, func(k []byte, vs y.ValueStruct) {
			keepRecovered(dir, out, k, vs)
		})
		if err != nil {
			lost = append(lost, fmt.Sprintf("%s: block %d of %d (from key %q): %v; %d records before the damage read",
				filepath.Base(path), i+1, len(bases), y.ParseKey([]byte(base)), err, n))
		}
	}
	return out, lost
}

// readBlock reads the keys from base up to (not including) next.
func readBlock(t *table.Table, base, next []byte, fn func(k []byte, vs y.ValueStruct)) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unreadable (%s)", firstLine(fmt.Sprint(r)))
		}
	}()
	it := t.NewIterator(0)
	defer it.Close()
	for it.Seek(base); it.Valid(); it.Next() {
		k := it.Key()
		if next != nil && y.CompareKeys(k, next) >= 0 {
			return n, nil
		}
		fn(k, it.ValueCopy())
		n++
	}
	if n == 0 {
		// Nothing at all from this block: it failed its checksum (the
		// table iterator keeps its error to itself). A block is verified
		// whole, so a good one yields at least its base key; stopping
		// after some keys means the next block failed, which is read
		// (and reported) on its own.
		return 0, errors.New("checksum mismatch or undecodable")
	}
	return n, nil
}

// readVlog reads the value a pointer names from the value-log file, with
// Badger's entry checksum verified.
func readVlog(dir string, ptr []byte) ([]byte, error) {
	if len(ptr) < vptrLen {
		return nil, errors.New("bad value pointer")
	}
	fid := binary.NativeEndian.Uint32(ptr[0:])
	ln := binary.NativeEndian.Uint32(ptr[4:])
	off := binary.NativeEndian.Uint32(ptr[8:])
	f, err := os.Open(filepath.Join(dir, fmt.Sprintf("%06d.vlog", fid)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, ln)
	if _, err := f.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("value log %06d: %w", fid, err)
	}
	if len(buf) < 2+3+4 {
		return nil, errors.New("value-log entry too short")
	}
	if crc32.Checksum(buf[:len(buf)-4], y.CastagnoliCrcTable) != binary.BigEndian.Uint32(buf[len(buf)-4:]) {
		return nil, errors.New("value-log checksum mismatch")
	}
	i := 2 // meta, user meta
	klen, w := binary.Uvarint(buf[i:])
	if w <= 0 {
		return nil, errors.New("bad value-log header")
	}
	i += w
	vlen, w := binary.Uvarint(buf[i:])
	if w <= 0 {
		return nil, errors.New("bad value-log header")
	}
	i += w
	if _, w = binary.Uvarint(buf[i:]); w <= 0 {
		return nil, errors.New("bad value-log header")
	}
	i += w
	if uint64(len(buf)-4-i) < klen+vlen {
		return nil, errors.New("value-log entry shorter than its header says")
	}
	return append([]byte(nil), buf[i+int(klen):i+int(klen+vlen)]...), nil
}

// mergeRecovered drops what the healthy part of the store already has in
// a newer version (including deletions, which a normal read hides).
func mergeRecovered(db *badger.DB, rec map[string]recovered) error {
	return db.View(func(txn *badger.Txn) error {
		for k, r := range rec {
			it := txn.NewKeyIterator([]byte(k), badger.IteratorOptions{AllVersions: true})
			it.Rewind()
			if it.Valid() && it.Item().Version() >= r.version {
				delete(rec, k)
			}
			it.Close()
		}
		return nil
	})
}
