package bridge

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// spilled is one device message the MQTT transport took off the broker
// while the device's worker was busy: kept in the bridge's state until the
// worker gets to it (MQTT's backlog).
type spilled struct {
	Topic   string `json:"topic"`
	Payload []byte `json:"payload"`
}

func spillPrefix(device string) []byte { return []byte("o/" + device + "/") }
func spillKey(device string, n uint64) []byte {
	return append(spillPrefix(device), fmt.Sprintf("%020d", n)...)
}

// SpillPut implements Spill.
func (s *BadgerStore) SpillPut(device string, n uint64, topic string, payload []byte) error {
	if err := s.db.Update(func(txn *badger.Txn) error {
		return setJSON(txn, spillKey(device, n), spilled{Topic: topic, Payload: payload})
	}); err != nil {
		return fmt.Errorf("keep backlog message %d of %s: %w", n, device, err)
	}
	return nil
}

// SpillGet implements Spill.
func (s *BadgerStore) SpillGet(device string, n uint64) (string, []byte, error) {
	var sp spilled
	err := s.db.View(func(txn *badger.Txn) error {
		found, err := getJSON(txn, spillKey(device, n), &sp)
		if err == nil && !found {
			err = fmt.Errorf("not found")
		}
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("read backlog message %d of %s: %w", n, device, err)
	}
	return sp.Topic, sp.Payload, nil
}

// SpillDelete implements Spill.
func (s *BadgerStore) SpillDelete(device string, n uint64) error {
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(spillKey(device, n)) }); err != nil {
		return fmt.Errorf("drop backlog message %d of %s: %w", n, device, err)
	}
	return nil
}

// SpillBacklogs implements Spill: per device with a backlog, its first and
// one-past-last numbers and bytes.
func (s *BadgerStore) SpillBacklogs() (map[string]Backlog, error) {
	out := map[string]Backlog{}
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("o/")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			rest := strings.TrimPrefix(string(it.Item().Key()), "o/")
			i := strings.LastIndexByte(rest, '/')
			if i < 0 {
				continue
			}
			n, err := strconv.ParseUint(rest[i+1:], 10, 64)
			if err != nil {
				continue
			}
			d := rest[:i]
			bl, ok := out[d]
			if !ok {
				bl.Head = n
			}
			bl.Tail = n + 1
			bl.Bytes += it.Item().ValueSize()
			out[d] = bl
		}
		return nil
	})
	if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("list backlogs: %w", err)
	}
	return out, nil
}

// Backlog is one device's spilled messages: numbers Head..Tail-1.
type Backlog struct {
	Head, Tail uint64
	Bytes      int64
}
