package buffer

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// Unreadable outbox entries (see Entry.Unreadable). Their id cannot be read,
// so the stand-in id names the key: "unreadable-<lane>-<seq>".
const unreadablePrefix = "unreadable-"

func unreadableEntry(key, v []byte, why error) Entry {
	lane := Lane(key[2] - '0')
	seq := seqOfKey(key)
	return Entry{
		ID:         unreadablePrefix + strconv.Itoa(int(lane)) + "-" + strconv.FormatUint(seq, 10),
		Seq:        seq,
		Lane:       lane,
		Body:       append([]byte(nil), v...),
		Unreadable: why.Error(),
	}
}

// unreadableKey parses a stand-in id back into its outbox key.
func unreadableKey(id string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(id, unreadablePrefix)
	if !ok {
		return nil, false
	}
	l, seqText, ok := strings.Cut(rest, "-")
	if !ok || (l != "0" && l != "1") {
		return nil, false
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return nil, false
	}
	return outboxKey(Lane(l[0]-'0'), seq), true
}

type countBytes struct {
	count      int
	bytes      int64
	indexBytes int64
}

func areaOf2(key []byte) area {
	ar, _ := areaOf(key)
	return ar
}

// deleteUnreadable deletes the outbox key ok of an unreadable entry, and
// the id-index entries pointing at it (their id is unknown: scanned for).
func deleteUnreadable(txn *badger.Txn, ok []byte) (countBytes, error) {
	var d countBytes
	item, err := txn.Get(ok)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("look up unreadable entry %q: %w", ok, err)
	}
	d = countBytes{count: -1, bytes: -(int64(len(ok)) + item.ValueSize())}
	if err := txn.Delete(ok); err != nil {
		return d, fmt.Errorf("delete unreadable entry %q: %w", ok, err)
	}
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixIndex, PrefetchValues: false})
	var stale [][]byte
	for it.Rewind(); it.Valid(); it.Next() {
		// An index value that cannot be read might point at ok: the
		// delete fails and says which, rather than leave it behind.
		err := it.Item().Value(func(v []byte) error {
			if bytes.Equal(v, ok) {
				stale = append(stale, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil {
			k := it.Item().KeyCopy(nil)
			it.Close()
			return d, fmt.Errorf("read index entry %q while deleting unreadable entry %q: %w", k, ok, err)
		}
	}
	it.Close()
	for _, ik := range stale {
		if err := txn.Delete(ik); err != nil {
			return d, fmt.Errorf("delete index of unreadable entry %q: %w", ok, err)
		}
		d.indexBytes -= int64(len(ik) + len(ok))
	}
	return d, nil
}
