package bridge

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// streamStore keeps the parts of an answer being streamed (stream.go): each
// part is kept before it is published, so a bridge that crashes mid-answer
// re-sends the parts the device may already have under the same ids and
// goes on after them, never numbering a part twice. The parts are dropped
// once the message is committed (the record then holds them all).
// BadgerStore and KVStore implement it; a Store without it gets no
// streaming (the whole answer goes at the end, as before).
type streamStore interface {
	PutStreamPart(device, id string, index int, payload []byte) error
	// StreamParts returns the parts kept for id, in index order.
	StreamParts(device, id string) ([][]byte, error)
	DropStreamParts(device, id string) error
}

func streamPrefix(device, id string) []byte { return []byte("sp/" + device + "/" + id + "/") }

// PutStreamPart implements streamStore.
func (s *BadgerStore) PutStreamPart(device, id string, index int, payload []byte) error {
	key := append(streamPrefix(device, id), fmt.Sprintf("%05d", index)...)
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, payload) }); err != nil {
		return fmt.Errorf("keep streamed part %d of %s/%s: %w", index, device, id, err)
	}
	return nil
}

// StreamParts implements streamStore.
func (s *BadgerStore) StreamParts(device, id string) ([][]byte, error) {
	out, err := s.values(streamPrefix(device, id))
	if err != nil {
		return nil, fmt.Errorf("read streamed parts of %s/%s: %w", device, id, err)
	}
	return out, nil
}

// DropStreamParts implements streamStore.
func (s *BadgerStore) DropStreamParts(device, id string) error {
	if err := s.db.Update(func(txn *badger.Txn) error { return deleteKeys(txn, streamPrefix(device, id)) }); err != nil {
		return fmt.Errorf("drop streamed parts of %s/%s: %w", device, id, err)
	}
	return nil
}

func kvStreamPart(device, id string, index int) string {
	return fmt.Sprintf("sp.%s.%s.%05d", kvDev(device), id, index)
}

// PutStreamPart implements streamStore.
func (s *KVStore) PutStreamPart(device, id string, index int, payload []byte) error {
	if _, err := s.kv.Put(kvStreamPart(device, id, index), payload); err != nil {
		return fmt.Errorf("keep streamed part %d of %s/%s: %w", index, device, id, unstorable(err))
	}
	return nil
}

func (s *KVStore) streamKeys(device, id string) ([]string, error) {
	keys, err := s.keysMatching(fmt.Sprintf("sp.%s.%s.*", kvDev(device), id), "listing streamed parts")
	return keys, unstorable(err)
}

// StreamParts implements streamStore.
func (s *KVStore) StreamParts(device, id string) ([][]byte, error) {
	keys, err := s.streamKeys(device, id)
	if err != nil {
		return nil, fmt.Errorf("list streamed parts of %s/%s: %w", device, id, err)
	}
	return s.values(keys, "streamed part")
}

// DropStreamParts implements streamStore.
func (s *KVStore) DropStreamParts(device, id string) error {
	keys, err := s.streamKeys(device, id)
	if err != nil {
		return fmt.Errorf("drop streamed parts of %s/%s: %w", device, id, err)
	}
	for _, k := range keys {
		if err := s.kv.Purge(k); err != nil {
			return fmt.Errorf("drop streamed part %s: %w", k, err)
		}
	}
	return nil
}
