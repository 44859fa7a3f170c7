package buffer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// AppendListen stores rec in the listen buffer. It assigns ID (when empty),
// Seq and CreatedAt and, in the same transaction, removes rec.AudioID's
// journal entry (or keeps it as retained audio under retention "keep"; under
// "drop" the stored record's AudioID is cleared).
func (s *Store) AppendListen(rec Record) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	audioID := rec.AudioID
	if rec.KeepJournal {
		audioID = "" // linked, not consumed: more text from it follows
	}
	val, err := s.prepareRecord(&rec)
	if err != nil {
		return Record{}, fmt.Errorf("append to listen buffer: %w", err)
	}
	key := listenKey(rec.Seq)
	size := int64(len(key) + len(val))
	if err := s.admit("listen", 1, size); err != nil {
		s.noteErr("append to listen buffer", err)
		return Record{}, fmt.Errorf("append to listen buffer: %w", err)
	}
	err = s.writeLocked("append to listen buffer", size, func(txn *badger.Txn, next uint64) (func(), error) {
		if next != rec.Seq {
			return nil, fmt.Errorf("sequence moved from %d to %d", rec.Seq, next)
		}
		audio, err := s.consumeAudio(txn, audioID)
		if err != nil {
			return nil, err
		}
		if err := txn.Set(key, val); err != nil {
			return nil, err
		}
		if err := txn.Set(keySeq, be8(next)); err != nil {
			return nil, err
		}
		return func() {
			s.seq = next
			s.acct.add(areaListen, 1, size)
			audio()
		}, nil
	})
	if err != nil {
		return Record{}, err
	}
	return rec, nil
}

// ListenCount is the number of records in the listen buffer.
func (s *Store) ListenCount() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("count listen buffer: %w", ErrClosed)
	}
	return s.acct.n(areaListen), nil
}

// ListListen returns up to limit records (all when limit <= 0), in Seq order.
func (s *Store) ListListen(limit int) ([]Record, error) {
	s.mu.Lock()
	floor := s.listenFloor
	s.mu.Unlock()
	var out []Record
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 64, Prefix: prefixListen})
		defer it.Close()
		for it.Seek(listenKey(floor + 1)); it.Valid() && (limit <= 0 || len(out) < limit); it.Next() {
			var rec Record
			err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &rec) })
			if err != nil {
				return fmt.Errorf("decode listen record %d: %w", seqOfKey(it.Item().Key()), err)
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list listen buffer: %w", err)
	}
	return out, nil
}

// ClearListen discards the listen buffer and returns how many records it
// held. It is atomic: the floor marker is raised in one transaction, the
// keys are deleted after.
func (s *Store) ClearListen() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	var upTo uint64
	err := s.writeLocked("clear listen buffer", -1, func(txn *badger.Txn, _ uint64) (func(), error) {
		upTo = s.seq // every listen record has seq <= the counter
		n = s.acct.count[areaListen]
		if n == 0 {
			return nil, nil
		}
		if err := txn.Set(keyListenFloor, be8(upTo)); err != nil {
			return nil, err
		}
		return func() {
			s.listenFloor = upTo
			s.acct.count[areaListen], s.acct.bytes[areaListen] = 0, 0
		}, nil
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		if err := s.deleteListenUpTo(upTo); err != nil {
			s.log.Warn("delete cleared listen records (retried on next open)", "err", err)
		}
	}
	return n, nil
}

// FlushListen moves the whole listen buffer into ONE KindBatch entry on
// LaneData, whose body is a BatchBody (records in seq order). It returns the
// entry and how many records it holds, 0 when the buffer was empty. The
// batch entry and the "moved up to seq S" floor are written in one
// transaction, so the move is atomic however large the buffer; the moved
// keys are deleted in follow-up transactions (finished on the next Open
// after a crash). A buffer larger than one value-log file is flushed in part
// (the oldest records), the rest stays; the caller may call again.
func (s *Store) FlushListen(offline bool) (Entry, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	const what = "flush listen buffer"
	if s.acct.count[areaListen] == 0 {
		return Entry{}, 0, nil
	}
	id, err := newID()
	if err != nil {
		return Entry{}, 0, fmt.Errorf("%s: %w", what, err)
	}
	maxBody := s.opts.ValueLogFileSize - 64<<10
	var (
		entry      Entry
		upTo       uint64
		moved      int
		movedBytes int64
	)
	err = s.writeLocked(what, min(s.acct.bytes[areaListen], maxBody), func(txn *badger.Txn, next uint64) (func(), error) {
		// The body is BatchBody's JSON, written from the stored records
		// as they are rather than decoding and encoding each one.
		var body bytes.Buffer
		body.WriteString(`{"items":[`)
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 256, Prefix: prefixListen})
		for it.Seek(listenKey(s.listenFloor + 1)); it.Valid(); it.Next() {
			item := it.Item()
			if int64(body.Len())+item.ValueSize()+64 > maxBody && moved > 0 {
				s.log.Warn("listen buffer larger than one batch: flushing the oldest part", "records", moved)
				break
			}
			if moved > 0 {
				body.WriteByte(',')
			}
			if err := item.Value(func(v []byte) error { _, err := body.Write(v); return err }); err != nil {
				it.Close()
				return nil, fmt.Errorf("read listen record %d: %w", seqOfKey(item.Key()), err)
			}
			upTo = seqOfKey(item.Key())
			moved++
			movedBytes += int64(len(item.Key())) + item.ValueSize()
		}
		it.Close()
		if moved == 0 {
			return nil, errors.New("listen buffer count says non-empty but no record found")
		}
		body.WriteString(`],"count":`)
		body.WriteString(strconv.Itoa(moved))
		body.WriteByte('}')
		entry = Entry{ID: id, Seq: next, Lane: LaneData, Kind: KindBatch, CreatedAt: time.Now().UTC(), Offline: offline, Body: body.Bytes()}
		after, err := s.putEntry(txn, entry)
		if err != nil {
			return nil, err
		}
		if err := txn.Set(keyListenFloor, be8(upTo)); err != nil {
			return nil, err
		}
		return func() {
			after()
			s.listenFloor = upTo
			s.acct.add(areaListen, -moved, -movedBytes)
		}, nil
	})
	if err != nil {
		return Entry{}, 0, err
	}
	s.signal()
	if hook := s.testHookAfterFlushMarker; hook != nil {
		if err := hook(); err != nil {
			return entry, moved, fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := s.deleteListenUpTo(upTo); err != nil {
		s.log.Warn("delete moved listen records (retried on next open)", "err", err)
	}
	return entry, moved, nil
}

// deleteListenUpTo deletes listen keys with seq <= upTo, in transactions
// small enough for Badger. The floor already hides them, so this is only
// reclaiming space and may be interrupted at any point.
func (s *Store) deleteListenUpTo(upTo uint64) error {
	if upTo == 0 {
		return nil
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil {
		return ErrClosed
	}
	const perTxn = 1000
	for {
		var keys [][]byte
		err := s.db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixListen})
			defer it.Close()
			for it.Rewind(); it.Valid() && len(keys) < perTxn; it.Next() {
				k := it.Item().Key()
				if seqOfKey(k) > upTo {
					break
				}
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("list moved listen records: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		err = s.db.Update(func(txn *badger.Txn) error {
			for _, k := range keys {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("delete %d moved listen records: %w", len(keys), s.classify(err))
		}
	}
}
