package buffer

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/dgraph-io/badger/v4"
)

// Salvage copies every readable key and value of the store in from, in key
// order (which is seq order for the listen buffer and the outbox), into a
// new store in to, which gets a new incarnation (store_id): its messages can
// never be confused with the damaged store's, even where seqs repeat. The
// original is only read (Check's working copy). Values that cannot be read
// are listed in the report and left behind; so are id-index entries of
// outbox entries left behind. to must not exist or be empty.
func Salvage(from, to string, o CheckOptions) (Report, error) {
	if err := emptyTarget(to); err != nil {
		return Report{Dir: from}, err
	}
	r, db, rec, cleanup, err := openCopy(from, o)
	if err != nil {
		return r, err
	}
	defer cleanup()

	logger := o.logger()
	dst := &Store{dir: to, log: logger}
	dst.opts, err = Options{EncryptionKey: o.targetKey(), Logger: logger}.withDefaults()
	if err != nil {
		return r, fmt.Errorf("salvage: %w", err)
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return r, fmt.Errorf("salvage: create %s: %w", to, err)
	}
	out, err := openBadger(dst.badgerOptions())
	if err != nil {
		return r, fmt.Errorf("salvage: create store in %s: %w", to, err)
	}
	wb := out.NewWriteBatch()
	var index [][2][]byte // i/ entries, written once their outbox entry is known
	copied := map[string]bool{}
	err = db.View(func(txn *badger.Txn) error {
		return scanAll(txn, &r, rec, func(k, v []byte) error {
			switch {
			case bytes.Equal(k, keyStoreID), bytes.Equal(k, keyVlogDamaged):
				return nil // the new store gets its own id, and a clean value log
			case bytes.HasPrefix(k, prefixIndex):
				index = append(index, [2][]byte{k, v})
				return nil
			case bytes.HasPrefix(k, prefixOutbox):
				copied[string(k)] = true
			}
			r.Copied++
			return wb.Set(k, v)
		})
	})
	for _, kv := range index {
		if err != nil {
			break
		}
		if copied[string(kv[1])] {
			r.Copied++
			err = wb.Set(kv[0], kv[1])
		}
	}
	if err == nil {
		err = wb.Flush()
	} else {
		wb.Cancel()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r, fmt.Errorf("salvage %s to %s: %w", from, to, err)
	}
	r.compareIdentity()
	// Open creates the new identity (and checks what was written).
	s, err := Open(to, Options{EncryptionKey: o.targetKey(), Logger: logger, GCInterval: -1})
	if err != nil {
		return r, fmt.Errorf("salvage: open the new store: %w", err)
	}
	r.NewStoreID = s.StoreID()
	if err := s.Close(); err != nil {
		return r, fmt.Errorf("salvage: %w", err)
	}
	return r, nil
}

func emptyTarget(to string) error {
	ents, err := os.ReadDir(to)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("salvage: target %s: %w", to, err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("salvage: target %s is not empty", to)
	}
	if _, err := os.Stat(identityPath(to)); err == nil {
		return fmt.Errorf("salvage: %s exists: the target was a store", identityPath(to))
	}
	return nil
}
