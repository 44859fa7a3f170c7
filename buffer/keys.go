package buffer

import (
	"encoding/binary"
	"fmt"
	"github.com/google/uuid"
)

// Key layout (see docs/storage.md).
var (
	keySchema  = []byte("m/schema")
	keyStoreID = []byte("m/store_id")
	// keyVlogDamaged marks a store whose value log held an unreadable
	// value. Badger's value-log GC reads a file up to its first bad entry
	// and then deletes the whole file, so GC stays off for such a store
	// (for good: the bad bytes stay in the file) until it is salvaged.
	keyVlogDamaged = []byte("m/vlog_damaged")
	keyMode        = []byte("s/mode")
	keySeq         = []byte("s/seq")
	keyListenFloor = []byte("s/lfloor")
	prefixListen   = []byte("l/")
	prefixOutbox   = []byte("o/")
	prefixControl  = []byte("o/0/")
	prefixData     = []byte("o/1/")
	prefixIndex    = []byte("i/")
	prefixJournal  = []byte("j/")
	prefixRetained = []byte("a/")
)

func be8(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

func listenKey(seq uint64) []byte { return append([]byte("l/"), be8(seq)...) }

func outboxKey(lane Lane, seq uint64) []byte {
	return append([]byte{'o', '/', '0' + byte(lane), '/'}, be8(seq)...)
}

func indexKey(id string) []byte    { return append([]byte("i/"), id...) }
func journalKey(id string) []byte  { return append([]byte("j/"), id...) }
func retainedKey(id string) []byte { return append([]byte("a/"), id...) }

// newID is the ID of every record, outbox entry and journaled utterance:
// a UUIDv7, so IDs sort by creation time.
func newID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("new id: %w", err)
	}
	return id.String(), nil
}

// seqOfKey reads the big-endian sequence at the end of a listen or outbox key.
func seqOfKey(k []byte) uint64 {
	if len(k) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(k)-8:])
}
