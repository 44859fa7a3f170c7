package buffer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dgraph-io/badger/v4/y"
)

// Badger's transaction bits in an entry's meta (value.go).
const (
	metaTxn    = 1 << 6
	metaFinTxn = 1 << 7
)

type walEntry struct {
	meta       byte
	key, value []byte
}

// parseWALEntry reads one write-ahead-log entry (Badger's log format:
// meta, user meta, uvarint key length, value length and expiry, key,
// value, CRC-32C of all that) at the start of b.
func parseWALEntry(b []byte) (walEntry, int, bool) {
	if len(b) < 2+3+4 {
		return walEntry{}, 0, false
	}
	i := 2
	klen, w := binary.Uvarint(b[i:])
	if w <= 0 || klen < 8 || klen > 1<<16 {
		return walEntry{}, 0, false
	}
	i += w
	vlen, w := binary.Uvarint(b[i:])
	if w <= 0 || vlen > uint64(len(b)) {
		return walEntry{}, 0, false
	}
	i += w
	if _, w = binary.Uvarint(b[i:]); w <= 0 {
		return walEntry{}, 0, false
	}
	i += w
	end := i + int(klen) + int(vlen)
	if end+4 > len(b) || crc32.Checksum(b[:end], y.CastagnoliCrcTable) != binary.BigEndian.Uint32(b[end:]) {
		return walEntry{}, 0, false
	}
	return walEntry{meta: b[0], key: b[i : i+int(klen)], value: b[i+int(klen) : end]}, end + 4, true
}

// salvageWAL reads a memtable's write-ahead log (.mem) past damage. Badger
// replays it up to the first bad entry and drops the rest; here the scan
// resynchronises on the next entry whose checksum holds and keeps every
// complete transaction after the damage too (a transaction cut by the
// damage is dropped whole, as Badger would). Only the newest version of
// each key is kept in out; values in the value log are read from dir.
// Encrypted logs are not scanned past damage (their entries are encrypted
// per offset). With out nil it only looks for damage (preflight).
func salvageWAL(dir, path string, out map[string]recovered) (lost []string) {
	name := filepath.Base(path)
	b, err := os.ReadFile(path)
	if err != nil {
		return []string{name + ": " + err.Error()}
	}
	// The file is preallocated: drop the zeros after the last entry, but
	// not the up to 4 zero bytes its checksum may end with.
	b = b[:min(len(b), len(bytes.TrimRight(b, "\x00"))+4)]
	if len(b) <= vlogHeaderLen+4 {
		return nil
	}
	if binary.BigEndian.Uint64(b[:8]) != 0 {
		return nil // encrypted: Badger's own replay is all there is
	}
	var (
		txn   []walEntry
		txnTs uint64
	)
	apply := func(e walEntry) {
		if out == nil {
			return
		}
		k := string(y.ParseKey(e.key))
		ver := y.ParseTs(e.key)
		if prev, ok := out[k]; ok && prev.version >= ver {
			return
		}
		r := recovered{version: ver, deleted: e.meta&metaDelete != 0}
		switch {
		case r.deleted:
		case e.meta&metaValuePointer != 0:
			r.value, r.err = readVlog(dir, e.value)
		default:
			r.value = append([]byte(nil), e.value...)
		}
		out[k] = r
	}
	for off := vlogHeaderLen; off < len(b); {
		e, n, ok := parseWALEntry(b[off:])
		if !ok {
			start := off
			for off++; off < len(b); off++ {
				if _, _, ok := parseWALEntry(b[off:]); ok {
					break
				}
			}
			if off < len(b) { // valid entries follow: damage, not a torn tail
				lost = append(lost, fmt.Sprintf("%s: bytes %d to %d unreadable, %d entries of an open transaction dropped", name, start, off, len(txn)))
			}
			txn, txnTs = nil, 0
			continue
		}
		off += n
		switch {
		case e.meta&metaFinTxn != 0:
			ts, err := strconv.ParseUint(string(e.value), 10, 64)
			if err == nil && ts == txnTs {
				for _, te := range txn {
					apply(te)
				}
			}
			txn, txnTs = nil, 0
		case e.meta&metaTxn != 0:
			ts := y.ParseTs(e.key)
			if txnTs != 0 && ts != txnTs {
				txn = nil
			}
			txnTs = ts
			txn = append(txn, e)
		default:
			apply(e)
		}
	}
	return lost
}
