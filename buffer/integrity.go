package buffer

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// openChecked is the first open of a Store: look at the files before Badger
// does (preflight), open, then hold the store against its identity (same
// incarnation, nothing rolled back) and read every value that is not
// retained audio. Any doubt refuses the start with what was found and what
// to do; nothing is repaired in place.
func (s *Store) openChecked() error {
	ident, err := readIdentity(s.dir)
	if err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	files, mf, found, err := preflight(s.dir, s.opts.EncryptionKey)
	if err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	if len(found) > 0 {
		return s.refuseDamage(found)
	}
	if ident != nil && ident.Seq > 0 && !files.manifest {
		return s.refuseRollback(fmt.Sprintf("the store directory is empty, but store %s had reached seq %d (recorded in %s): "+
			"the store was deleted or replaced", ident.ID, ident.Seq, ident.path))
	}
	if files, err = dropEmptyLogs(s.dir, files, s.log); err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	if err := protectLastVlog(s.dir, files); err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	orphans, err := quarantineOrphans(s.dir, files, mf)
	if err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	if err := s.openDB(); err != nil {
		return err
	}
	fail := func(err error) error {
		s.dbMu.Lock()
		_ = s.db.Close()
		s.db = nil
		s.dbMu.Unlock()
		return err
	}
	if err := s.adoptIdentity(ident); err != nil {
		return fail(err)
	}
	bad, err := s.verifyValues()
	if err != nil {
		return fail(fmt.Errorf("open store in %s: verify values: %w", s.dir, err))
	}
	s.checkOrphans(orphans)
	var refuse []damage
	for _, d := range bad {
		if bytes.HasPrefix([]byte(d.File), prefixOutbox) {
			s.unreadable++
			continue
		}
		refuse = append(refuse, d)
	}
	if len(refuse) > 0 {
		return fail(s.refuseDamage(refuse))
	}
	if s.unreadable > 0 {
		s.log.Error("outbox entries are unreadable (value-log damage): they are sent as dead letters; run `agorad store check` for the details",
			"entries", s.unreadable)
		err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(keyVlogDamaged, []byte{1}) })
		if err != nil {
			return fail(fmt.Errorf("open store in %s: mark value-log damage: %w", s.dir, s.classify(err)))
		}
	}
	err = s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(keyVlogDamaged)
		if err == nil {
			s.vlogDamaged.Store(true)
			s.log.Warn("value-log GC is off: this store's value log was damaged (GC would drop the values after the damage); "+
				"`agorad store salvage --to NEWDIR` makes a clean store", "dir", s.dir)
			return nil
		}
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return fail(fmt.Errorf("open store in %s: %w", s.dir, err))
	}
	s.identMu.Lock()
	defer s.identMu.Unlock()
	return s.ident.open()
}

// refuse builds the error for damage found at Open.
func (s *Store) refuseDamage(found []damage) error {
	sentinel := ErrDamaged
	var what []string
	for _, d := range found {
		if d.Key {
			sentinel = ErrKey
		}
		what = append(what, d.String())
	}
	if sentinel == ErrKey {
		return fmt.Errorf("open store in %s: refused: %s: %w (check storage.encryption_key_file; a lost key cannot be recovered)",
			s.dir, strings.Join(what, "; "), sentinel)
	}
	return fmt.Errorf("open store in %s: refused: %s: %w; %s", s.dir, strings.Join(what, "; "), sentinel, whatToDo(s.dir))
}

func (s *Store) refuseRollback(what string) error {
	return fmt.Errorf("open store in %s: refused: %s: %w; %s", s.dir, what, ErrRolledBack, whatToDo(s.dir))
}

// openBadger opens Badger, turning a panic in the opening goroutine into an
// error (panics in Badger's own goroutines cannot be caught: preflight keeps
// the known ones from happening).
func openBadger(o badger.Options) (db *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("Badger panicked while opening the store (%s): %w; %s", firstLine(fmt.Sprint(r)), ErrDamaged, whatToDo(o.Dir))
		}
	}()
	db, err = badger.Open(o)
	if errors.Is(err, badger.ErrEncryptionKeyMismatch) {
		err = fmt.Errorf("%w: %w", ErrKey, err)
	}
	return db, err
}

// adoptIdentity compares the opened store with its identity file (nil when
// there is none) and creates the file for a new store (or one written
// before identities existed).
func (s *Store) adoptIdentity(ident *identity) error {
	var stored string
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keyStoreID)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		stored = string(v)
		return err
	})
	if err != nil {
		return fmt.Errorf("open store in %s: read store id: %w", s.dir, err)
	}
	writeID := func(id string) error {
		err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(keyStoreID, []byte(id)) })
		if err != nil {
			return fmt.Errorf("open store in %s: write store id: %w", s.dir, s.classify(err))
		}
		return nil
	}
	switch {
	case ident == nil && stored == "":
		id, err := newID()
		if err != nil {
			return err
		}
		if err := writeID(id); err != nil {
			return err
		}
		if ident, err = createIdentity(s.dir, id, s.committed.Load()); err != nil {
			return err
		}
		if s.committed.Load() > 0 {
			s.log.Info("store identity created for an existing store", "store_id", id, "seq", s.committed.Load())
		}
	case ident == nil:
		s.log.Warn("store identity file missing: recreated from the store (a rollback before now cannot be detected)",
			"store_id", stored, "seq", s.committed.Load(), "file", identityPath(s.dir))
		if ident, err = createIdentity(s.dir, stored, s.committed.Load()); err != nil {
			return err
		}
	case stored == "" && s.committed.Load() == 0 && ident.Seq == 0:
		// Created, then stopped before the id reached the store.
		if err := writeID(ident.ID); err != nil {
			return err
		}
	case stored == "":
		return s.refuseRollback(fmt.Sprintf("the store has no store id and seq %d, but store %s had reached seq %d "+
			"(recorded in %s): it is empty, lost its recent files or was replaced", s.committed.Load(), ident.ID, ident.Seq, ident.path))
	case stored != ident.ID:
		return s.refuseRollback(fmt.Sprintf("the store is %s, but %s was here (recorded in %s, seq %d): the store was replaced",
			stored, ident.ID, ident.path, ident.Seq))
	case s.committed.Load() < ident.Seq:
		return s.refuseRollback(fmt.Sprintf("the store's last seq is %d, but it had reached seq %d (recorded in %s): "+
			"it lost its most recent writes (write-ahead log or tables damaged or missing)", s.committed.Load(), ident.Seq, ident.path))
	}
	s.ident = ident
	s.storeID = ident.ID
	// After an unclean stop, resume above everything that may have been
	// handed out (see identity).
	s.seq = max(s.seq, ident.Lease)
	return nil
}

// verifyValues reads every value except retained audio (evictable, and the
// bulk of a store that keeps audio) and returns the keys whose value cannot
// be read or decoded. Badger does not return a value-log read error (a
// checksum mismatch, a value past the end of a truncated file): it logs it
// and yields an empty value, so a short value is the sign.
func (s *Store) verifyValues() ([]damage, error) {
	var bad []damage
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			if bytes.HasPrefix(item.Key(), prefixRetained) {
				continue
			}
			if err := item.Value(func(v []byte) error { return checkValue(item.Key(), v, item.ValueSize()) }); err != nil {
				bad = append(bad, damage{File: string(item.KeyCopy(nil)), What: err.Error()})
			}
		}
		return nil
	})
	return bad, err
}

// checkValue says whether v, read for key, was read and decodes.
func checkValue(key, v []byte, size int64) error {
	// ValueSize is approximate for value-log values; a failed read yields
	// nothing at all.
	if len(v) == 0 && size > 0 {
		return fmt.Errorf("value unreadable in the value log (.vlog checksum mismatch or missing data, about %d bytes)", size)
	}
	switch {
	case bytes.HasPrefix(key, prefixOutbox):
		_, err := decodeEntry(v)
		return err
	case bytes.HasPrefix(key, prefixJournal), bytes.HasPrefix(key, prefixRetained):
		_, err := decodeAudio(string(key[2:]), v)
		return err
	case bytes.HasPrefix(key, prefixListen):
		if !jsonValid(v) {
			return errors.New("listen record is not valid JSON")
		}
	}
	return nil
}

// StoreID is the store's incarnation id: created with the store, never
// reused. Messages carry it so that (device_id, store_id, seq) stays unique
// when a store is rebuilt (salvage) and its counter starts again.
func (s *Store) StoreID() string { return s.storeID }

func jsonValid(v []byte) bool { return json.Valid(v) }

// protectLastVlog keeps Badger from cutting the newest value-log file at
// its first damaged entry. Badger's Open reads the last value-log file up to
// its first bad entry and truncates it there (meant for a torn write), which
// turns one garbled value into the loss of every value written after it
// (measured: one garbled utterance of 53 lost the 26 after it). A file with
// the next number holding only a header becomes the last one instead:
// Badger finds it empty, starts a new file as it always does, and deletes
// the empty one at the next Open. A torn tail in the older file is never
// referenced (its pointer was never committed) and stays garbage until
// value-log GC.
func protectLastVlog(dir string, files storeFiles) error {
	var maxFid uint64
	var last string
	for _, p := range files.vlogs {
		fid, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(p), ".vlog"), 10, 32)
		if err != nil {
			continue
		}
		if last == "" || fid > maxFid {
			maxFid, last = fid, p
		}
	}
	if last == "" {
		return nil
	}
	// Nothing after the header (the file may be preallocated, sparse):
	// nothing to protect, and no new file per start.
	f, err := os.Open(last)
	if err != nil {
		return err
	}
	first := make([]byte, 32)
	n, _ := f.ReadAt(first, vlogHeaderLen)
	f.Close()
	if allZero(first[:n]) {
		return nil
	}
	// The header: data key id 0 (none: the file holds no data) and an IV.
	hdr := make([]byte, vlogHeaderLen)
	if _, err := rand.Read(hdr[8:]); err != nil {
		return err
	}
	p := filepath.Join(dir, fmt.Sprintf("%06d.vlog", maxFid+1))
	f, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("protect the value log: %w", err)
	}
	_, err = f.Write(hdr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("protect the value log: %w", err)
	}
	return nil
}

// vlogHeaderLen is the header of a Badger value-log file (key id, IV).
const vlogHeaderLen = 20
