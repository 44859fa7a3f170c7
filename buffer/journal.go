package buffer

import (
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// JournalAudio stores an utterance's audio before it is transcribed, so a
// crash mid-transcription loses nothing: PendingAudio returns it after a
// restart until its text is stored (AppendListen/EnqueueUtterance with
// Record.AudioID) or it is dropped. Returns the journal ID.
func (s *Store) JournalAudio(samples []float32, startedAt time.Time) (string, error) {
	const what = "journal audio"
	if len(samples) == 0 {
		return "", fmt.Errorf("%s: no samples", what)
	}
	if len(samples) > (1<<31-1)/2 {
		return "", fmt.Errorf("%s: %d samples is too long", what, len(samples))
	}
	id, err := newID()
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	val := encodeAudio(samples, startedAt)
	key := journalKey(id)
	if int64(len(val)) >= s.opts.ValueLogFileSize {
		return "", fmt.Errorf("%s: %d samples (%d bytes) exceed the value-log file size %d", what, len(samples), len(val), s.opts.ValueLogFileSize)
	}
	size := int64(len(key) + len(val))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admit("audio", 1, size); err != nil {
		s.noteErr(what, err)
		return "", fmt.Errorf("%s: %w", what, err)
	}
	err = s.writeLocked(what, size, func(txn *badger.Txn, _ uint64) (func(), error) {
		if err := txn.Set(key, val); err != nil {
			return nil, err
		}
		return func() { s.acct.add(areaJournal, 1, size) }, nil
	})
	if err != nil {
		return "", err
	}
	return id, nil
}

// PendingAudio returns journaled audio with no stored text yet, oldest
// first (IDs are UUIDv7), for recovery after a restart.
func (s *Store) PendingAudio() ([]JournaledAudio, error) {
	var out []JournaledAudio
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, PrefetchSize: 4, Prefix: prefixJournal})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			id := string(it.Item().Key()[len(prefixJournal):])
			err := it.Item().Value(func(v []byte) error {
				a, err := decodeAudio(id, v)
				out = append(out, a)
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read audio journal: %w", err)
	}
	return out, nil
}

// Audio returns journaled or retained audio by ID.
func (s *Store) Audio(id string) (JournaledAudio, error) {
	var a JournaledAudio
	err := s.view(func(txn *badger.Txn) error {
		for _, k := range [][]byte{journalKey(id), retainedKey(id)} {
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			return item.Value(func(v []byte) error {
				a, err = decodeAudio(id, v)
				return err
			})
		}
		return badger.ErrKeyNotFound
	})
	if err != nil {
		return JournaledAudio{}, fmt.Errorf("read audio %s: %w", id, err)
	}
	return a, nil
}

// DropAudio removes journaled or retained audio (e.g. it held no speech).
// Unknown IDs are ignored.
func (s *Store) DropAudio(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked("drop audio "+id, -1, func(txn *badger.Txn, _ uint64) (func(), error) {
		var delta accounting
		for _, ar := range []area{areaJournal, areaRetained} {
			k := journalKey(id)
			if ar == areaRetained {
				k = retainedKey(id)
			}
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			delta.add(ar, -1, -(int64(len(k)) + item.ValueSize()))
			if err := txn.Delete(k); err != nil {
				return nil, err
			}
		}
		return func() {
			for ar := range numAreas {
				s.acct.add(ar, delta.count[ar], delta.bytes[ar])
			}
		}, nil
	})
}

// consumeAudio removes the journal entry of audioID in txn now that its text
// is stored: deleted (retention drop) or moved to retained audio (keep).
// The returned func updates the accounting after commit.
func (s *Store) consumeAudio(txn *badger.Txn, audioID string) (func(), error) {
	if audioID == "" {
		return func() {}, nil
	}
	jk := journalKey(audioID)
	item, err := txn.Get(jk)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return func() {}, nil // already dropped or never journaled
	}
	if err != nil {
		return nil, fmt.Errorf("read journaled audio %s: %w", audioID, err)
	}
	size := int64(len(jk)) + item.ValueSize()
	if s.opts.AudioRetention == RetainKeep {
		v, err := item.ValueCopy(nil)
		if err != nil {
			return nil, fmt.Errorf("read journaled audio %s: %w", audioID, err)
		}
		if err := txn.Set(retainedKey(audioID), v); err != nil {
			return nil, fmt.Errorf("retain audio %s: %w", audioID, err)
		}
	}
	if err := txn.Delete(jk); err != nil {
		return nil, fmt.Errorf("delete journaled audio %s: %w", audioID, err)
	}
	keep := s.opts.AudioRetention == RetainKeep
	return func() {
		s.acct.add(areaJournal, -1, -size)
		if keep {
			s.acct.add(areaRetained, 1, size)
		}
	}, nil
}

// ReleaseAudio does to id's journal entry what storing its text does:
// deletes it (retention "drop") or keeps it as retained audio ("keep").
// For text stored with Record.KeepJournal whose last part turned out empty.
// Unknown IDs are ignored.
func (s *Store) ReleaseAudio(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked("release audio "+id, -1, func(txn *badger.Txn, _ uint64) (func(), error) {
		return s.consumeAudio(txn, id)
	})
}
