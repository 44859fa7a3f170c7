package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/nats-io/nats.go"
)

// PendingBatch is a batch whose parts are being collected: kept beside its
// parts and dropped with them when the batch is committed (run or parked).
// Its Bytes bound the join before any part is read back, and Since lets
// parts whose batch never completes expire (Bridge.ExpireParts).
type PendingBatch struct {
	Device string    `json:"device"`
	ID     string    `json:"id"`
	Since  time.Time `json:"since"` // first part kept
	Of     int       `json:"of"`
	Parts  int       `json:"parts"` // distinct parts kept
	Bytes  int64     `json:"bytes"` // their payloads' total
}

func pendingKey(device, id string) []byte { return []byte("pa/" + device + "/" + id) }

// PutPart implements Store.
func (s *BadgerStore) PutPart(device, id string, index, of int, payload []byte) (PendingBatch, error) {
	var pb PendingBatch
	err := s.db.Update(func(txn *badger.Txn) error {
		found, err := getJSON(txn, pendingKey(device, id), &pb)
		if err != nil {
			return err
		}
		if !found {
			pb = PendingBatch{Device: device, ID: id, Since: time.Now(), Of: of}
		}
		if _, err := txn.Get(partKey(device, id, index)); errors.Is(err, badger.ErrKeyNotFound) {
			pb.Parts++
			pb.Bytes += int64(len(payload))
		} else if err != nil {
			return err
		}
		if err := txn.Set(partKey(device, id, index), payload); err != nil {
			return err
		}
		return setJSON(txn, pendingKey(device, id), pb)
	})
	if err != nil {
		return pb, fmt.Errorf("store part %d of %s/%s: %w", index, device, id, err)
	}
	return pb, nil
}

// Part implements Store.
func (s *BadgerStore) Part(device, id string, index int) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(partKey(device, id, index))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err = it.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("read part %d of %s/%s: %w", index, device, id, err)
	}
	return v, v != nil, nil
}

// Pending implements Store.
func (s *BadgerStore) Pending(limit int) ([]PendingBatch, error) {
	var out []PendingBatch
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("pa/"), PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var pb PendingBatch
			if err := it.Item().Value(func(b []byte) error { return json.Unmarshal(b, &pb) }); err != nil {
				return err
			}
			out = append(out, pb)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list pending batches: %w", err)
	}
	return out, nil
}

func kvPending(device, id string) string { return "pa." + kvDev(device) + "." + id }

// PutPart implements Store (a device's parts come one at a time: the
// pending record's read-modify-write needs no lock).
func (s *KVStore) PutPart(device, id string, index, of int, payload []byte) (PendingBatch, error) {
	var pb PendingBatch
	found, err := s.get(kvPending(device, id), &pb)
	if err != nil {
		return pb, fmt.Errorf("store part %d of %s/%s: %w", index, device, id, err)
	}
	if !found {
		pb = PendingBatch{Device: device, ID: id, Since: time.Now(), Of: of}
	}
	if _, err := s.kv.Get(kvPart(device, id, index)); errors.Is(err, nats.ErrKeyNotFound) {
		pb.Parts++
		pb.Bytes += int64(len(payload))
	} else if err != nil {
		return pb, fmt.Errorf("store part %d of %s/%s: %w", index, device, id, unstorable(err))
	}
	if _, err := s.kv.Put(kvPart(device, id, index), payload); err != nil {
		return pb, fmt.Errorf("store part %d of %s/%s: %w", index, device, id, unstorable(err))
	}
	if err := s.put(kvPending(device, id), pb); err != nil {
		return pb, fmt.Errorf("store part %d of %s/%s: %w", index, device, id, err)
	}
	return pb, nil
}

// Part implements Store.
func (s *KVStore) Part(device, id string, index int) ([]byte, bool, error) {
	e, err := s.kv.Get(kvPart(device, id, index))
	if errors.Is(err, nats.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read part %d of %s/%s: %w", index, device, id, unstorable(err))
	}
	return e.Value(), true, nil
}

// Pending implements Store.
func (s *KVStore) Pending(limit int) ([]PendingBatch, error) {
	w, err := s.kv.Watch("pa.>", nats.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list pending batches: %w", err)
	}
	defer s.stopWatch(w, "listing incomplete batches")
	var out []PendingBatch
	for e := range w.Updates() {
		if e == nil {
			break
		}
		var pb PendingBatch
		if !strings.HasPrefix(e.Key(), "pa.") {
			continue
		}
		if err := json.Unmarshal(e.Value(), &pb); err != nil {
			s.log.Warn("unreadable incomplete-batch record not listed", "key", e.Key(), "err", err)
			continue
		}
		out = append(out, pb)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// PendingBatch implements Store.
func (s *BadgerStore) PendingBatch(device, id string) (PendingBatch, bool, error) {
	var pb PendingBatch
	var found bool
	err := s.db.View(func(txn *badger.Txn) (err error) {
		found, err = getJSON(txn, pendingKey(device, id), &pb)
		return err
	})
	if err != nil {
		return pb, false, fmt.Errorf("read pending batch %s/%s: %w", device, id, err)
	}
	return pb, found, nil
}

// PendingBatch implements Store.
func (s *KVStore) PendingBatch(device, id string) (PendingBatch, bool, error) {
	var pb PendingBatch
	found, err := s.get(kvPending(device, id), &pb)
	if err != nil {
		return pb, false, fmt.Errorf("read pending batch %s/%s: %w", device, id, err)
	}
	return pb, found, nil
}

// DropParts implements Store.
func (s *BadgerStore) DropParts(device, id string) error {
	err := s.db.Update(func(txn *badger.Txn) error {
		if err := deleteKeys(txn, partPrefix(device, id)); err != nil {
			return err
		}
		return txn.Delete(pendingKey(device, id))
	})
	if err != nil {
		return fmt.Errorf("drop parts of %s/%s: %w", device, id, err)
	}
	return nil
}

// DropParts implements Store.
func (s *KVStore) DropParts(device, id string) error {
	keys, err := s.partKeys(device, id)
	if err != nil {
		return fmt.Errorf("drop parts of %s/%s: %w", device, id, err)
	}
	for _, k := range keys {
		if err := s.kv.Purge(k); err != nil {
			return fmt.Errorf("drop part %s: %w", k, err)
		}
	}
	if err := s.kv.Purge(kvPending(device, id)); err != nil {
		return fmt.Errorf("drop pending batch %s/%s: %w", device, id, err)
	}
	return nil
}
