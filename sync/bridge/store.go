package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/agora/agorad/sync/protocol"
)

// Record is what the bridge remembers about one device message it handed
// over, keyed by (device, message id): the de-duplication record.
type Record struct {
	Seq uint64 `json:"seq"`
	// StoreID is the device store's incarnation that assigned Seq: with it
	// the record is also found by (device, store_id, seq) (Store.BySeq).
	StoreID string                 `json:"store_id,omitempty"`
	State   string                 `json:"state"` // StateDone or StateParked
	Reply   *protocol.ReplyCommand `json:"reply,omitempty"`
	// Stream holds the parts of an answer streamed while the graph wrote
	// it (stream.go), as sent; a duplicate re-sends them, not Reply.
	Stream []protocol.ReplyCommand `json:"stream,omitempty"`
	Reason string                  `json:"reason,omitempty"` // why it was parked
	At     time.Time               `json:"at"`
}

// Record states.
const (
	StateDone   = "done"   // the graph ran it; Reply (if any) is its answer
	StateParked = "parked" // given up after bounded retries; a DeadLetter holds it
)

// DeviceState is what the bridge keeps per device.
type DeviceState struct {
	LastSeq uint64 `json:"last_seq"` // highest seq handed over
	LastID  string `json:"last_id"`
	// StoreID/StoreSeq: the device store incarnation seen last and the
	// highest seq handed over from it; a lower seq under a new message id
	// from the same store is refused (de-duplication by store_id, seq).
	StoreID  string `json:"store_id,omitempty"`
	StoreSeq uint64 `json:"store_seq,omitempty"`
	// StatusStoreID/StatusOutbox: the store and the entries waiting that
	// the device's last live status reported (the seq-jump allowance).
	StatusStoreID string    `json:"status_store_id,omitempty"`
	StatusOutbox  int       `json:"status_outbox,omitempty"`
	Mode          string    `json:"mode,omitempty"`   // from the last status
	Online        bool      `json:"online"`           // from the last status (false after the last will)
	StatusAt      string    `json:"status_at"`        // updated_at of that status
	Offline       uint64    `json:"offline_messages"` // messages handed over that the device produced offline
	UpdatedAt     time.Time `json:"updated_at"`
}

// DeadLetter is a parked message: the device's payload as received and why
// the bridge gave up on it.
type DeadLetter struct {
	DeviceID string    `json:"device_id"`
	ID       string    `json:"id"`
	Seq      uint64    `json:"seq"`
	Topic    string    `json:"topic"`
	Payload  []byte    `json:"payload"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	At       time.Time `json:"at"`
	// PayloadChunks is internal to KVStore: the payload is stored apart,
	// in this many chunks (0 when it is in Payload).
	PayloadChunks int `json:"payload_chunks,omitempty"`
}

// Store keeps de-duplication records, device state and dead letters.
//
// Guarantee: Commit is atomic and durable (when the store syncs writes)
// before it returns; a message is acknowledged to the transport only after
// its Commit, so after a crash it is either redelivered and found here, or
// was never committed and runs again.
type Store interface {
	Get(device, id string) (Record, bool, error)
	// BySeq returns the id of the message committed with (storeID, seq).
	BySeq(device, storeID string, seq uint64) (string, bool, error)
	Device(device string) (DeviceState, error)
	// Commit stores rec and ds together, and dl when not nil; it indexes
	// rec by (rec.StoreID, rec.Seq) when rec.StoreID is set and drops the
	// parts kept for id.
	Commit(device, id string, rec Record, ds DeviceState, dl *DeadLetter) error
	// PutPart keeps part index (1-based, of of) of batch id until the
	// batch is committed, and returns the batch's pending record with this
	// part counted; Part returns one part kept, Parts all of them in index
	// order; Pending lists the batches being collected (up to limit, all
	// when limit <= 0).
	PutPart(device, id string, index, of int, payload []byte) (PendingBatch, error)
	Part(device, id string, index int) ([]byte, bool, error)
	Parts(device, id string) ([][]byte, error)
	Pending(limit int) ([]PendingBatch, error)
	PendingBatch(device, id string) (PendingBatch, bool, error)
	// DropParts drops the parts kept for id and its pending record.
	DropParts(device, id string) error
	PutDevice(device string, ds DeviceState) error
	// ResetSeq clears the device's sequence record (the operator's
	// agora-bridge reset-seq): its next message is taken as it comes.
	ResetSeq(device string) error
	DeadLetters(limit int) ([]DeadLetter, error)
	Close() error
}

// BadgerStore is the Store of a single bridge (mosquitto mode): Badger in the
// state directory, the database the device already uses.
//
// Every dead letter is also written as a JSON file under
// <dir>/deadletters/ (DeadLetterDir), so `agora-bridge deadletters` can list
// them while the bridge holds the database.
type BadgerStore struct {
	db  *badger.DB
	dir string
}

// OpenBadger opens (creating) the store in dir. syncWrites fsyncs every
// commit; without it a power cut can lose the last commits, which then run
// again (at-least-once towards the graph).
func OpenBadger(dir string, syncWrites bool, log *slog.Logger) (*BadgerStore, error) {
	if log == nil {
		log = slog.Default()
	}
	opts := badger.DefaultOptions(dir).WithSyncWrites(syncWrites).WithLogger(badgerLog{log}).
		WithNumVersionsToKeep(1).WithMemTableSize(16 << 20).WithValueThreshold(1 << 10)
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open bridge state %s: %w", dir, err)
	}
	return &BadgerStore{db: db, dir: dir}, nil
}

func msgKey(device, id string) []byte { return []byte("m/" + device + "/" + id) }
func devKey(device string) []byte     { return []byte("d/" + device) }
func dlKey(device, id string) []byte  { return []byte("x/" + device + "/" + id) }
func seqKey(device, storeID string, seq uint64) []byte {
	return []byte(fmt.Sprintf("q/%s/%s/%020d", device, storeID, seq))
}
func partPrefix(device, id string) []byte { return []byte("p/" + device + "/" + id + "/") }
func partKey(device, id string, index int) []byte {
	return append(partPrefix(device, id), fmt.Sprintf("%05d", index)...)
}

func getJSON(txn *badger.Txn, key []byte, v any) (bool, error) {
	it, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, it.Value(func(b []byte) error { return json.Unmarshal(b, v) })
}

func setJSON(txn *badger.Txn, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return txn.Set(key, b)
}

// Get returns the record of a message handed over before.
func (s *BadgerStore) Get(device, id string) (Record, bool, error) {
	var r Record
	var found bool
	err := s.db.View(func(txn *badger.Txn) (err error) {
		found, err = getJSON(txn, msgKey(device, id), &r)
		return err
	})
	if err != nil {
		return Record{}, false, fmt.Errorf("read record %s/%s: %w", device, id, err)
	}
	return r, found, nil
}

// Device returns the device's state (zero when unknown), first applying a
// reset-seq requested while the bridge ran.
func (s *BadgerStore) Device(device string) (DeviceState, error) {
	var ds DeviceState
	if _, err := s.pendingReset(device); err != nil {
		return ds, err
	}
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := getJSON(txn, devKey(device), &ds)
		return err
	})
	if err != nil {
		return DeviceState{}, fmt.Errorf("read device %s: %w", device, err)
	}
	return ds, nil
}

// Commit implements Store.
func (s *BadgerStore) Commit(device, id string, rec Record, ds DeviceState, dl *DeadLetter) error {
	err := s.db.Update(func(txn *badger.Txn) error {
		if err := setJSON(txn, msgKey(device, id), rec); err != nil {
			return err
		}
		if err := setJSON(txn, devKey(device), ds); err != nil {
			return err
		}
		if rec.StoreID != "" {
			if err := txn.Set(seqKey(device, rec.StoreID, rec.Seq), []byte(id)); err != nil {
				return err
			}
		}
		if err := deleteKeys(txn, partPrefix(device, id)); err != nil {
			return err
		}
		if _, err := txn.Get(pendingKey(device, id)); err == nil {
			if err := txn.Delete(pendingKey(device, id)); err != nil {
				return err
			}
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		if dl != nil {
			return setJSON(txn, dlKey(device, id), dl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit %s/%s: %w", device, id, err)
	}
	if dl != nil {
		if err := writeDeadLetterFile(s.dir, dl); err != nil {
			return fmt.Errorf("commit %s/%s: %w", device, id, err)
		}
	}
	return nil
}

func deleteKeys(txn *badger.Txn, prefix []byte) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
	var keys [][]byte
	for it.Rewind(); it.Valid(); it.Next() {
		keys = append(keys, it.Item().KeyCopy(nil))
	}
	it.Close()
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// BySeq implements Store.
func (s *BadgerStore) BySeq(device, storeID string, seq uint64) (string, bool, error) {
	var id string
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(seqKey(device, storeID, seq))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err := it.ValueCopy(nil)
		id = string(v)
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("read seq %d of %s/%s: %w", seq, device, storeID, err)
	}
	return id, id != "", nil
}

// Parts implements Store.
func (s *BadgerStore) Parts(device, id string) ([][]byte, error) {
	out, err := s.values(partPrefix(device, id))
	if err != nil {
		return nil, fmt.Errorf("read parts of %s/%s: %w", device, id, err)
	}
	return out, nil
}

// values reads the values under prefix in key order.
func (s *BadgerStore) values(prefix []byte) ([][]byte, error) {
	var out [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 16})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return nil
	})
	return out, err
}

// PutDevice stores the device's state alone (status updates).
func (s *BadgerStore) PutDevice(device string, ds DeviceState) error {
	if err := s.db.Update(func(txn *badger.Txn) error { return setJSON(txn, devKey(device), ds) }); err != nil {
		return fmt.Errorf("store device %s: %w", device, err)
	}
	return nil
}

// DeadLetters lists up to limit parked messages (all when limit <= 0).
func (s *BadgerStore) DeadLetters(limit int) ([]DeadLetter, error) {
	var out []DeadLetter
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("x/"), PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var dl DeadLetter
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &dl) }); err != nil {
				return err
			}
			out = append(out, dl)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// Close closes the database.
func (s *BadgerStore) Close() error { return s.db.Close() }

type badgerLog struct{ l *slog.Logger }

func (b badgerLog) Errorf(f string, a ...any) { b.l.Error(fmt.Sprintf(f, a...), "component", "badger") }
func (b badgerLog) Warningf(f string, a ...any) {
	b.l.Warn(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLog) Infof(string, ...any)  {}
func (b badgerLog) Debugf(string, ...any) {}
