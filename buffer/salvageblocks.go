package buffer

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/y"
	"google.golang.org/protobuf/proto"
)

// A Badger table (v4, table/builder.go) is its data blocks back to back from
// offset 0, then the index (which holds each block's offset and length),
// its length, its checksum and the checksum's length. A block, before
// compression, is
//
//	entries | entry offsets (u32 each, native order) | entry count (u32 BE) | checksum (pb.Checksum) | checksum length (u32 BE)
//
// and the checksum covers everything before it. An entry is a header
// (overlap u16, diff u16, native order), the key bytes after the overlap
// with the block's first key, then the encoded y.ValueStruct. With Snappy
// (Badger's default, and what the store writes) every block is one Snappy
// block on its own.
//
// Without the index (a table cut short, its end garbled) the blocks are
// found from the start: each one decodes to a block whose checksum holds,
// and the next starts where it ended. A damaged stretch is skipped byte by
// byte until a block verifies again.
const (
	maxBlockLen = 64 << 10 // Badger's blocks are 4 KiB plus at most one entry (values over 1 KiB go to the value log)
	minBlockLen = 4 + 4 + 4 + 2
)

// salvagedBlock is one block read without the index.
type salvagedBlock struct {
	start, end int // in the file
	keys       int
}

// salvageBlocks reads every intact data block of the table in path from its
// start, without its index, and hands each entry (key with version, value
// struct) to fn. It returns the blocks read and the stretches it skipped.
func salvageBlocks(path string, compression options.CompressionType, fn func(k []byte, vs y.ValueStruct)) (blocks []salvagedBlock, skipped []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	// The store writes Snappy (Badger's default). An uncompressed block
	// has no length of its own to find its end by.
	if compression != options.Snappy {
		return nil, nil, fmt.Errorf("compression %d: block-level salvage reads Snappy tables (the store's)", compression)
	}
	badFrom := -1
	for pos := 0; pos < len(data); {
		block, n, ok := snappyBlockAt(data[pos:])
		var entries [][2][]byte
		if ok {
			entries, ok = parseBlock(block)
		}
		if !ok {
			if badFrom < 0 {
				badFrom = pos
			}
			pos++
			continue
		}
		if badFrom >= 0 {
			skipped = append(skipped, fmt.Sprintf("bytes %d..%d", badFrom, pos))
			badFrom = -1
		}
		for _, e := range entries {
			var vs y.ValueStruct
			vs.Decode(e[1])
			fn(e[0], vs)
		}
		blocks = append(blocks, salvagedBlock{start: pos, end: pos + n, keys: len(entries)})
		pos += n
	}
	if badFrom >= 0 {
		skipped = append(skipped, fmt.Sprintf("bytes %d..%d", badFrom, len(data)))
	}
	return blocks, skipped, nil
}

// parseBlock verifies a decoded block's checksum and splits it into its
// entries (full key, encoded value struct).
func parseBlock(b []byte) (entries [][2][]byte, ok bool) {
	if len(b) < minBlockLen {
		return nil, false
	}
	end := len(b) - 4
	chkLen := int(binary.BigEndian.Uint32(b[end:]))
	if chkLen <= 0 || chkLen > 64 || chkLen > end-4 {
		return nil, false
	}
	end -= chkLen
	var sum pb.Checksum
	if err := proto.Unmarshal(b[end:end+chkLen], &sum); err != nil {
		return nil, false
	}
	if y.VerifyChecksum(b[:end], &sum) != nil {
		return nil, false
	}
	// Verified: from here on the layout is Badger's, but a block that
	// verifies by chance is still read with every bound checked.
	end -= 4
	n := int(binary.BigEndian.Uint32(b[end:]))
	if n <= 0 || n > end/4 {
		return nil, false
	}
	offStart := end - 4*n
	offsets := make([]int, n)
	for i := range offsets {
		offsets[i] = int(binary.NativeEndian.Uint32(b[offStart+4*i:]))
	}
	var base []byte
	for i, off := range offsets {
		stop := offStart
		if i+1 < n {
			stop = offsets[i+1]
		}
		if off < 0 || off+4 > stop || stop > offStart {
			return nil, false
		}
		overlap := int(binary.NativeEndian.Uint16(b[off:]))
		diff := int(binary.NativeEndian.Uint16(b[off+2:]))
		if off+4+diff > stop || overlap > len(base) || (i == 0 && overlap != 0) {
			return nil, false
		}
		key := append(append([]byte(nil), base[:overlap]...), b[off+4:off+4+diff]...)
		if i == 0 {
			base = key
		}
		v := b[off+4+diff : stop]
		if len(v) < 3 || len(key) <= 8 { // meta, user meta, expiry; a key has its 8-byte version
			return nil, false
		}
		if _, w := binary.Uvarint(v[2:]); w <= 0 {
			return nil, false
		}
		entries = append(entries, [2][]byte{key, v})
	}
	return entries, true
}

// snappyBlockAt decodes the Snappy block starting at b[0] and returns it
// with the number of bytes it took. Snappy's own decoders need the exact
// compressed length, which only the lost index knew; this one stops where
// the block's declared length is reached.
func snappyBlockAt(b []byte) ([]byte, int, bool) {
	ulen, i := binary.Uvarint(b)
	if i <= 0 || ulen < minBlockLen || ulen > maxBlockLen {
		return nil, 0, false
	}
	dst := make([]byte, 0, ulen)
	for uint64(len(dst)) < ulen {
		if i >= len(b) {
			return nil, 0, false
		}
		tag := b[i]
		var length, offset int
		switch tag & 3 {
		case 0: // literal
			x := int(tag >> 2)
			i++
			if x >= 60 {
				nb := x - 59 // 1..4 length bytes, little-endian
				if i+nb > len(b) {
					return nil, 0, false
				}
				x = 0
				for k := nb - 1; k >= 0; k-- {
					x = x<<8 | int(b[i+k])
				}
				i += nb
			}
			length = x + 1
			if length <= 0 || i+length > len(b) || uint64(len(dst)+length) > ulen {
				return nil, 0, false
			}
			dst = append(dst, b[i:i+length]...)
			i += length
			continue
		case 1: // copy, 1-byte offset
			if i+2 > len(b) {
				return nil, 0, false
			}
			length = 4 + int(tag>>2)&7
			offset = int(tag&0xe0)<<3 | int(b[i+1])
			i += 2
		case 2: // copy, 2-byte offset
			if i+3 > len(b) {
				return nil, 0, false
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint16(b[i+1:]))
			i += 3
		case 3: // copy, 4-byte offset
			if i+5 > len(b) {
				return nil, 0, false
			}
			length = 1 + int(tag>>2)
			offset = int(binary.LittleEndian.Uint32(b[i+1:]))
			i += 5
		}
		if offset <= 0 || offset > len(dst) || uint64(len(dst)+length) > ulen {
			return nil, 0, false
		}
		for k := 0; k < length; k++ { // may overlap: byte by byte
			dst = append(dst, dst[len(dst)-offset])
		}
	}
	return dst, i, true
}

// salvageWithoutIndex is salvageTable's way on when the table's index
// cannot be read: the data blocks from the start of the file.
func salvageWithoutIndex(dir, path string, compression options.CompressionType, indexErr string, out map[string]recovered) (lost []string) {
	name := filepath.Base(path)
	blocks, skipped, err := salvageBlocks(path, compression, func(k []byte, vs y.ValueStruct) {
		keepRecovered(dir, out, k, vs)
	})
	if err != nil {
		return []string{fmt.Sprintf("%s: %s; its data blocks: %v", name, indexErr, err)}
	}
	keys := 0
	for _, b := range blocks {
		keys += b.keys
	}
	lost = append(lost, fmt.Sprintf("%s: %s: read without it, %d data blocks (%d records) from the start of the file", name, indexErr, len(blocks), keys))
	for _, s := range skipped {
		lost = append(lost, fmt.Sprintf("%s: %s unreadable (damaged block or the index)", name, s))
	}
	return lost
}

// keepRecovered records the entry for key k unless a newer version of it
// was read already; values in the value log are read from dir.
func keepRecovered(dir string, out map[string]recovered, k []byte, vs y.ValueStruct) {
	uk := string(y.ParseKey(k))
	ver := y.ParseTs(k)
	if prev, ok := out[uk]; ok && prev.version >= ver {
		return
	}
	r := recovered{version: ver, deleted: vs.Meta&metaDelete != 0}
	switch {
	case r.deleted:
	case vs.Meta&metaValuePointer != 0:
		r.value, r.err = readVlog(dir, vs.Value)
	default:
		r.value = append([]byte(nil), vs.Value...)
	}
	out[uk] = r
}
