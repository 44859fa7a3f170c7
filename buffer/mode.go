package buffer

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Mode is what the device does with what it hears: ModeListen stores it in
// the listen buffer, ModeFeedback sends each utterance to the backend. This
// is the core's one definition; the wire formats (sync/protocol, the control
// socket, metrics labels) carry the same strings.
type Mode string

const (
	ModeListen   Mode = "listen"
	ModeFeedback Mode = "feedback"
)

// Modes lists every mode, in a fixed order.
func Modes() []Mode { return []Mode{ModeListen, ModeFeedback} }

// ParseMode is the one check of a mode name, for configuration, commands
// and the store.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeListen, ModeFeedback:
		return m, nil
	}
	return "", fmt.Errorf("%q is not one of listen, feedback", s)
}

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool {
	_, err := ParseMode(string(m))
	return err == nil
}

// Mode is the persisted mode, "" when never set (the caller applies its
// configured default). A value that is not a valid Mode is returned as
// stored; the caller decides.
func (s *Store) Mode() (Mode, error) {
	var mode Mode
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(keyMode)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		mode = Mode(v)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read mode: %w", err)
	}
	return mode, nil
}

// SetMode persists the mode.
func (s *Store) SetMode(mode Mode) error {
	if _, err := ParseMode(string(mode)); err != nil {
		return fmt.Errorf("set mode: %w", err)
	}
	return s.write("set mode", 0, func(txn *badger.Txn, _ uint64) (func(), error) {
		return nil, txn.Set(keyMode, []byte(mode))
	})
}
