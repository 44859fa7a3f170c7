package bridge

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"

	"github.com/agora/agorad/sync/protocol"
)

// DefaultMaxSeqJump is Options.MaxSeqJump's default: far more entries than
// a device makes between two messages the bridge sees (its outbox, which
// its status reports, comes on top), far fewer than a forged seq needs to
// hold the device's real messages back for good.
const DefaultMaxSeqJump = 100000

// seqJump returns why env's seq is refused as a jump ("" when it is not):
// above the last seq handed over from the same device store by more than
// MaxSeqJump plus the entries the device's own status (of that store)
// reports waiting. A seq from a store the bridge has not seen for a device
// it knows counts from 0 (a new store starts its sequence again); the
// first message of a device the bridge knows nothing of is trusted.
// Accepting the jump would make every later real message look old and park
// it as seq_regression; refusing it costs one message, kept as a dead
// letter.
func (b *Bridge) seqJump(ds DeviceState, env protocol.Envelope) string {
	if env.StoreID == "" || ds.StoreID == "" {
		return ""
	}
	var base uint64
	if env.StoreID == ds.StoreID {
		base = ds.StoreSeq
	}
	// The outbox a status reports widens the allowance, at most by
	// MaxSeqJump again: a status can be forged as easily as a message.
	var waiting uint64
	if ds.StatusStoreID == env.StoreID && ds.StatusOutbox > 0 {
		waiting = uint64(min(ds.StatusOutbox, b.o.MaxSeqJump))
	}
	allowed := uint64(b.o.MaxSeqJump) + waiting
	if env.Seq <= base || env.Seq-base <= allowed {
		return ""
	}
	return fmt.Sprintf("seq_jump: seq %d is %d above %d, the last handed over from store %s (allowed: %d, plus %d entries the device's status reports waiting); refused so that it cannot make the device's real messages look old",
		env.Seq, env.Seq-base, base, env.StoreID, b.o.MaxSeqJump, waiting)
}

// clearSeq forgets a device's sequence record: the next message of any
// store is taken as it comes.
func clearSeq(ds *DeviceState) {
	ds.LastSeq, ds.LastID, ds.StoreID, ds.StoreSeq = 0, "", "", 0
}

// ResetSeq implements the operator's reset of a device's sequence record.
func (s *BadgerStore) ResetSeq(device string) error {
	err := s.db.Update(func(txn *badger.Txn) error {
		var ds DeviceState
		if _, err := getJSON(txn, devKey(device), &ds); err != nil {
			return err
		}
		clearSeq(&ds)
		return setJSON(txn, devKey(device), ds)
	})
	if err != nil {
		return fmt.Errorf("reset sequence of %s: %w", device, err)
	}
	return nil
}

// ResetSeq implements the operator's reset of a device's sequence record.
func (s *KVStore) ResetSeq(device string) error {
	var ds DeviceState
	if _, err := s.get("d."+kvDev(device), &ds); err != nil {
		return fmt.Errorf("reset sequence of %s: %w", device, err)
	}
	clearSeq(&ds)
	if err := s.put("d."+kvDev(device), ds); err != nil {
		return fmt.Errorf("reset sequence of %s: %w", device, err)
	}
	return nil
}

// resetRequestDir holds the reset requests for a running mosquitto-mode
// bridge (it holds the database): one empty file per device, named by the
// hex of its id, applied at the device's next message.
func resetRequestDir(stateDir string) string { return filepath.Join(stateDir, "reset-seq") }

// RequestResetSeq asks the mosquitto-mode bridge running on stateDir to
// clear the device's sequence record at its next message.
func RequestResetSeq(stateDir, device string) (string, error) {
	if err := protocol.ValidateDeviceID(device); err != nil {
		return "", err
	}
	dir := resetRequestDir(stateDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("reset request: %w", err)
	}
	p := filepath.Join(dir, hex.EncodeToString([]byte(device)))
	if err := os.WriteFile(p, nil, 0o640); err != nil {
		return "", fmt.Errorf("reset request: %w", err)
	}
	return p, nil
}

// pendingReset applies a reset requested for device while the bridge ran;
// it reports whether it did.
func (s *BadgerStore) pendingReset(device string) (bool, error) {
	p := filepath.Join(resetRequestDir(s.dir), hex.EncodeToString([]byte(device)))
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err := s.ResetSeq(device); err != nil {
		return false, err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return true, fmt.Errorf("reset request of %s done, but: %w", device, err)
	}
	return true, nil
}
