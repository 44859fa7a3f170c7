package buffer

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// putEntry writes e (its Seq already taken from the counter) with its id
// index and the counter, and returns the after-commit accounting update.
func (s *Store) putEntry(txn *badger.Txn, e Entry) (func(), error) {
	val, err := encodeEntry(e)
	if err != nil {
		return nil, err
	}
	if int64(len(val)) >= s.opts.ValueLogFileSize {
		return nil, fmt.Errorf("%s entry of %d bytes exceeds the value-log file size %d", e.Kind, len(val), s.opts.ValueLogFileSize)
	}
	ok, ik := outboxKey(e.Lane, e.Seq), indexKey(e.ID)
	if err := txn.Set(ok, val); err != nil {
		return nil, fmt.Errorf("store %s entry: %w", e.Kind, err)
	}
	if err := txn.Set(ik, ok); err != nil {
		return nil, fmt.Errorf("index %s entry: %w", e.Kind, err)
	}
	if err := txn.Set(keySeq, be8(e.Seq)); err != nil {
		return nil, fmt.Errorf("store sequence: %w", err)
	}
	ar := areaControl
	if e.Lane == LaneData {
		ar = areaData
	}
	return func() {
		s.seq = e.Seq
		s.acct.add(ar, 1, int64(len(ok)+len(val)))
		s.acct.add(areaIndex, 0, int64(len(ik)+len(ok)))
	}, nil
}

func entrySize(e Entry) int64 {
	// key + id index + header estimate + body
	return int64(12+2+len(e.ID)+12) + 160 + int64(len(e.Body))
}

// Enqueue adds an outbox entry of kind on lane with a kind-specific JSON
// body; the store assigns ID, Seq and CreatedAt.
func (s *Store) Enqueue(lane Lane, kind Kind, offline bool, body []byte) (Entry, error) {
	what := fmt.Sprintf("enqueue %s", kind)
	switch {
	case lane != LaneControl && lane != LaneData:
		return Entry{}, fmt.Errorf("%s: lane %d is not control (0) or data (1)", what, lane)
	case kind == "":
		return Entry{}, errors.New("enqueue: empty kind")
	case !json.Valid(body):
		return Entry{}, fmt.Errorf("%s: body is not valid JSON", what)
	}
	id, err := newID()
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := Entry{ID: id, Seq: s.seq + 1, Lane: lane, Kind: kind, CreatedAt: time.Now().UTC(), Offline: offline, Body: append([]byte(nil), body...)}
	return e, s.enqueueLocked(what, string(kind), e, nil)
}

func (s *Store) enqueueLocked(what, capKind string, e Entry, also func(txn *badger.Txn) (func(), error)) error {
	size := entrySize(e)
	if err := s.admit(capKind, 1, size); err != nil {
		s.noteErr(what, err)
		return fmt.Errorf("%s: %w", what, err)
	}
	err := s.writeLocked(what, size, func(txn *badger.Txn, next uint64) (func(), error) {
		if next != e.Seq {
			return nil, fmt.Errorf("sequence moved from %d to %d", e.Seq, next)
		}
		more := func() {}
		if also != nil {
			var err error
			if more, err = also(txn); err != nil {
				return nil, err
			}
		}
		after, err := s.putEntry(txn, e)
		if err != nil {
			return nil, err
		}
		return func() { after(); more() }, nil
	})
	if err != nil {
		return err
	}
	s.signal()
	return nil
}

// EnqueueUtterance adds a feedback-mode utterance (KindUtterance, LaneData)
// whose body is the record; the record and the entry share ID and Seq. Like
// AppendListen it removes rec.AudioID's journal entry in the same
// transaction (or retains it under "keep").
func (s *Store) EnqueueUtterance(rec Record) (Entry, error) {
	const what = "enqueue utterance"
	s.mu.Lock()
	defer s.mu.Unlock()
	audioID := rec.AudioID
	if rec.KeepJournal {
		audioID = "" // linked, not consumed: more text from it follows
	}
	body, err := s.prepareRecord(&rec)
	if err != nil {
		return Entry{}, fmt.Errorf("%s: %w", what, err)
	}
	e := Entry{ID: rec.ID, Seq: rec.Seq, Lane: LaneData, Kind: KindUtterance, CreatedAt: rec.CreatedAt, Offline: rec.Offline, Body: body}
	err = s.enqueueLocked(what, string(KindUtterance), e, func(txn *badger.Txn) (func(), error) {
		return s.consumeAudio(txn, audioID)
	})
	if err != nil {
		return Entry{}, err
	}
	return e, nil
}

// Pending returns up to limit entries (all when limit <= 0): LaneControl
// first, then LaneData, each in Seq order.
func (s *Store) Pending(limit int) ([]Entry, error) {
	var out []Entry
	err := s.view(func(txn *badger.Txn) error {
		for _, prefix := range [][]byte{prefixControl, prefixData} {
			it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 16, Prefix: prefix})
			for it.Rewind(); it.Valid() && (limit <= 0 || len(out) < limit); it.Next() {
				item := it.Item()
				var e Entry
				err := item.Value(func(v []byte) error {
					if err := checkValue(item.Key(), v, item.ValueSize()); err != nil {
						e = unreadableEntry(item.Key(), v, err)
						return nil
					}
					var err error
					e, err = decodeEntry(v)
					return err
				})
				if err != nil {
					// Not damage to the value: Badger could not read it.
					it.Close()
					return fmt.Errorf("outbox key %q: %w", item.Key(), err)
				}
				e.StoreID = s.storeID
				out = append(out, e)
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

// Delete removes delivered entries by ID. Unknown IDs are ignored, so a
// repeated delete (redelivery, restart) is harmless.
func (s *Store) Delete(ids ...string) error {
	const perTxn = 500
	for len(ids) > 0 {
		n := min(len(ids), perTxn)
		if err := s.deleteSome(ids[:n]); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

func (s *Store) deleteSome(ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Deletes only add tombstones: let them through on a nearly full disk,
	// they are how space comes back.
	return s.writeLocked("delete delivered entries", -1, func(txn *badger.Txn, _ uint64) (func(), error) {
		var delta accounting
		unreadable := 0
		for _, id := range ids {
			if ok, isUnreadable := unreadableKey(id); isUnreadable {
				d, err := deleteUnreadable(txn, ok)
				if err != nil {
					return nil, err
				}
				delta.add(areaOf2(ok), d.count, d.bytes)
				delta.add(areaIndex, 0, d.indexBytes)
				unreadable -= d.count
				continue
			}
			ik := indexKey(id)
			item, err := txn.Get(ik)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("look up entry %s: %w", id, err)
			}
			ok, err := item.ValueCopy(nil)
			if err != nil {
				return nil, fmt.Errorf("look up entry %s: %w", id, err)
			}
			oitem, err := txn.Get(ok)
			if err == nil {
				ar, _ := areaOf(ok)
				delta.add(ar, -1, -(int64(len(ok)) + oitem.ValueSize()))
				if err := txn.Delete(ok); err != nil {
					return nil, fmt.Errorf("delete entry %s: %w", id, err)
				}
			} else if !errors.Is(err, badger.ErrKeyNotFound) {
				return nil, fmt.Errorf("look up entry %s: %w", id, err)
			}
			delta.add(areaIndex, 0, -int64(len(ik)+len(ok)))
			if err := txn.Delete(ik); err != nil {
				return nil, fmt.Errorf("delete entry %s: %w", id, err)
			}
		}
		return func() {
			for ar := range numAreas {
				s.acct.add(ar, delta.count[ar], delta.bytes[ar])
			}
			s.unreadable = max(0, s.unreadable-unreadable)
		}, nil
	})
}

// OutboxCount is the number of entries waiting for delivery (both lanes).
func (s *Store) OutboxCount() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("count outbox: %w", ErrClosed)
	}
	return s.acct.n(areaControl) + s.acct.n(areaData), nil
}
