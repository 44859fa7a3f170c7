package buffer

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/uuid"
)

// Stats describes what the store holds, for status messages and agoractl.
type Stats struct {
	Dir            string `json:"dir"`
	StoreID        string `json:"store_id"` // the store's incarnation
	Seq            uint64 `json:"seq"`      // last assigned sequence
	Listen         int    `json:"listen"`
	OutboxControl  int    `json:"outbox_control"`
	OutboxData     int    `json:"outbox_data"`
	JournalPending int    `json:"journal_pending"` // audio without text yet
	AudioRetained  int    `json:"audio_retained"`
	// Unreadable outbox entries found at Open (value-log damage); they
	// go out as dead letters.
	Unreadable int `json:"unreadable,omitempty"`

	StoredBytes int64 `json:"stored_bytes"` // keys+values we hold (what MaxBytes caps)
	LSMBytes    int64 `json:"lsm_bytes"`    // Badger tables, WAL and metadata on disk
	VlogBytes   int64 `json:"vlog_bytes"`   // Badger value log on disk
	FreeBytes   int64 `json:"free_bytes"`   // free space on the state dir's file system
	MaxBytes    int64 `json:"max_bytes,omitempty"`
	MaxItems    int   `json:"max_items,omitempty"`

	OldestListen  time.Duration `json:"oldest_listen_ns"` // age of the oldest item, 0 when empty
	OldestOutbox  time.Duration `json:"oldest_outbox_ns"`
	OldestJournal time.Duration `json:"oldest_journal_ns"`

	Refused     map[string]int64 `json:"refused,omitempty"` // refusals by kind since Open
	LastError   string           `json:"last_error,omitempty"`
	LastErrorAt time.Time        `json:"last_error_at,omitzero"`

	// SyncFailures counts failed periodic fsyncs (sync policy "interval")
	// since Open; SyncFailing is the last one's error while no sync has
	// succeeded since: what was accepted after the last good sync may be
	// lost on a power cut until it clears.
	SyncFailures int64  `json:"sync_failures,omitempty"`
	SyncFailing  string `json:"sync_failing,omitempty"`
}

// Stats reports counts, sizes, ages and refusals.
func (s *Store) Stats() (Stats, error) {
	s.mu.Lock()
	st := Stats{
		Dir:            s.dir,
		StoreID:        s.storeID,
		Unreadable:     s.unreadable,
		Seq:            s.seq,
		Listen:         s.acct.n(areaListen),
		OutboxControl:  s.acct.n(areaControl),
		OutboxData:     s.acct.n(areaData),
		JournalPending: s.acct.n(areaJournal),
		AudioRetained:  s.acct.n(areaRetained),
		StoredBytes:    max(0, s.acct.total()),
		MaxBytes:       s.opts.MaxBytes,
		MaxItems:       s.opts.MaxItems,
		Refused:        maps.Clone(s.refused),
		LastError:      s.lastErr,
		LastErrorAt:    s.lastErrAt,
	}
	floor := s.listenFloor
	closed := s.closed
	s.mu.Unlock()
	s.syncMu.Lock()
	st.SyncFailures, st.SyncFailing = s.syncFailures, s.syncFailing
	s.syncMu.Unlock()
	if closed {
		return st, fmt.Errorf("store stats: %w", ErrClosed)
	}
	st.LSMBytes, st.VlogBytes = diskUsage(s.dir)
	st.FreeBytes = s.freeBytes()
	now := time.Now()
	err := s.view(func(txn *badger.Txn) error {
		if t, ok, err := firstCreated(txn, prefixListen, listenKey(floor+1), recordCreated); err != nil {
			return err
		} else if ok {
			st.OldestListen = now.Sub(t)
		}
		for _, p := range [][]byte{prefixControl, prefixData} {
			t, ok, err := firstCreated(txn, p, p, entryCreated)
			if err != nil {
				return err
			}
			if ok && now.Sub(t) > st.OldestOutbox {
				st.OldestOutbox = now.Sub(t)
			}
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixJournal})
		defer it.Close()
		if it.Rewind(); it.Valid() {
			// The journal ID is a UUIDv7: its time is when it was written.
			if id, err := uuid.Parse(string(it.Item().Key()[len(prefixJournal):])); err == nil {
				sec, nsec := id.Time().UnixTime()
				st.OldestJournal = now.Sub(time.Unix(sec, nsec))
			}
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("store stats: %w", err)
	}
	return st, nil
}

func firstCreated(txn *badger.Txn, prefix, seek []byte, created func([]byte) (time.Time, error)) (time.Time, bool, error) {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	defer it.Close()
	it.Seek(seek)
	if !it.Valid() {
		return time.Time{}, false, nil
	}
	var t time.Time
	err := it.Item().Value(func(v []byte) error {
		var err error
		t, err = created(v)
		return err
	})
	if err != nil {
		return t, false, fmt.Errorf("read %q: %w", it.Item().Key(), err)
	}
	return t, true, nil
}

func recordCreated(v []byte) (time.Time, error) {
	var r struct {
		CreatedAt time.Time `json:"created_at"`
	}
	err := json.Unmarshal(v, &r)
	return r.CreatedAt, err
}

func entryCreated(v []byte) (time.Time, error) {
	e, err := decodeEntry(v)
	return e.CreatedAt, err
}
