package buffer

import (
	"bytes"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// area is a part of the key space, for counts, bytes and caps.
type area int

const (
	areaListen area = iota
	areaControl
	areaData
	areaIndex // outbox id -> key index (bytes only)
	areaJournal
	areaRetained
	areaReply     // r/: replies from the backend (count and bytes)
	areaReplyOpen // ro/: index of the open replies (count: replies open)
	areaReplyDone // rf/: index of the finished replies (count: replies finished)
	areaReplyID   // ri/: reply id -> key (bytes only)
	areaInbox     // c/: commands accepted, not yet carried out (cmdinbox.go)
	numAreas
)

type accounting struct {
	count [numAreas]int
	bytes [numAreas]int64
}

func (a *accounting) add(ar area, n int, b int64) {
	a.count[ar] += n
	a.bytes[ar] += b
}

// n is the count of an area as reported: never negative (a count below
// zero would mean the accounting missed an item, rebuilt by the scan at the
// next Open; a gauge showing -3 entries helps no one).
func (a *accounting) n(ar area) int { return max(0, a.count[ar]) }

// items is what MaxItems caps: messages waiting (listen records, outbox
// entries) and audio clips not yet transcribed. Retained audio is not
// counted: it is evicted instead.
func (a *accounting) items() int {
	return a.count[areaListen] + a.count[areaControl] + a.count[areaData] + a.count[areaJournal]
}

// merge adds a transaction's delta.
func (a *accounting) merge(d accounting) {
	for ar := range numAreas {
		a.add(ar, d.count[ar], d.bytes[ar])
	}
}

func (a *accounting) total() int64 {
	var t int64
	for _, b := range a.bytes {
		t += b
	}
	return t
}

func areaOf(key []byte) (area, bool) {
	switch {
	case bytes.HasPrefix(key, prefixListen):
		return areaListen, true
	case bytes.HasPrefix(key, prefixControl):
		return areaControl, true
	case bytes.HasPrefix(key, prefixData):
		return areaData, true
	case bytes.HasPrefix(key, prefixIndex):
		return areaIndex, true
	case bytes.HasPrefix(key, prefixJournal):
		return areaJournal, true
	case bytes.HasPrefix(key, prefixRetained):
		return areaRetained, true
	case bytes.HasPrefix(key, prefixReply):
		return areaReply, true
	case bytes.HasPrefix(key, prefixReplyOpen):
		return areaReplyOpen, true
	case bytes.HasPrefix(key, prefixReplyDone):
		return areaReplyDone, true
	case bytes.HasPrefix(key, prefixReplyIndex):
		return areaReplyID, true
	case bytes.HasPrefix(key, prefixInbox):
		return areaInbox, true
	}
	return 0, false
}

// scanAccounting counts every area from the keys (values are not read).
func scanAccounting(db *badger.DB, floor uint64) (accounting, error) {
	var a accounting
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			ar, ok := areaOf(k)
			if !ok {
				continue
			}
			if ar == areaListen && seqOfKey(k) <= floor {
				continue // moved into a batch; deleted on open
			}
			n := 1
			if ar == areaIndex || ar == areaReplyID {
				n = 0
			}
			a.add(ar, n, int64(len(k))+item.ValueSize())
		}
		return nil
	})
	if err != nil {
		return a, fmt.Errorf("count stored items: %w", err)
	}
	return a, nil
}

// admit applies the caps to a new item of kind (listen, utterance, batch,
// ack, event, audio) adding items and size bytes. Stored data is never
// dropped to make room, except retained audio whose text is already safe.
// Called with s.mu held.
func (s *Store) admit(kind string, items int, size int64) error {
	o := s.opts
	if o.MaxItems > 0 && s.acct.items()+items > o.MaxItems {
		return s.refuse(kind, size, fmt.Sprintf("%d items stored, cap %d", s.acct.items(), o.MaxItems))
	}
	if o.MaxBytes > 0 && s.acct.total()+size > o.MaxBytes {
		if err := s.evictRetained(s.acct.total() + size - o.MaxBytes); err != nil {
			s.log.Warn("evict retained audio", "err", err)
		}
		if s.acct.total()+size > o.MaxBytes {
			return s.refuse(kind, size, fmt.Sprintf("%d bytes stored, cap %d", s.acct.total(), o.MaxBytes))
		}
	}
	return nil
}

func (s *Store) refuse(kind string, size int64, why string) error {
	s.refused[kind]++
	return fmt.Errorf("refused %s of %d bytes (%s): %w", kind, size, why, ErrFull)
}

// evictRetained deletes retained audio, oldest first, until need bytes are
// freed or none is left. Called with s.mu held.
func (s *Store) evictRetained(need int64) error {
	if s.acct.count[areaRetained] == 0 || need <= 0 {
		return nil
	}
	var freed int64
	var n int
	err := s.writeLocked("evict retained audio", -1, func(txn *badger.Txn, _ uint64) (func(), error) {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixRetained})
		var keys [][]byte
		for it.Rewind(); it.Valid() && freed < need; it.Next() {
			item := it.Item()
			keys = append(keys, item.KeyCopy(nil))
			freed += int64(len(item.Key())) + item.ValueSize()
		}
		it.Close()
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return nil, err
			}
		}
		n = len(keys)
		return func() { s.acct.add(areaRetained, -n, -freed) }, nil
	})
	if err == nil && n > 0 {
		s.log.Info("evicted retained audio to make room", "clips", n, "bytes", freed)
	}
	return err
}
