package buffer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Tables the MANIFEST does not name ("orphans") are deleted by Badger at
// Open. After a crash between writing a table and recording it that is
// right (its records are still in the write-ahead log or in the tables a
// compaction was merging), but a MANIFEST cut exactly at a record boundary
// replays cleanly and names fewer tables: then Badger would delete live
// data and the store would start with less, silently (the newest writes,
// in the write-ahead log, keep the seq where it was). So orphans are hard
// linked into <dir>.orphans before Badger opens, and every record in them
// is looked up in the opened store: all present → the links go; anything
// missing → the start is refused and the tables stay there for salvage.
func orphanDir(dir string) string { return filepath.Clean(dir) + ".orphans" }

// quarantineOrphans links the orphans of files into orphanDir and returns
// every table there (those kept by an earlier refused start included: they
// are checked again, so a second start is refused as the first was).
func quarantineOrphans(dir string, files storeFiles, mf *badger.Manifest) ([]string, error) {
	if mf == nil {
		return nil, nil
	}
	out, _ := filepath.Glob(filepath.Join(orphanDir(dir), "*.sst"))
	for id, p := range files.tables {
		if _, named := mf.Tables[id]; named {
			continue
		}
		if err := os.MkdirAll(orphanDir(dir), 0o700); err != nil {
			return out, fmt.Errorf("keep tables the MANIFEST does not name: %w", err)
		}
		link := filepath.Join(orphanDir(dir), filepath.Base(p))
		err := os.Link(p, link)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return out, fmt.Errorf("keep tables the MANIFEST does not name: %w", err)
		}
		if err == nil {
			out = append(out, link)
		}
	}
	return out, nil
}

// orphanRecordsMissing counts the records of an orphan table that the open
// store does not hold in the same or a newer version (deletions included).
func orphanRecordsMissing(db *badger.DB, path string) (int, error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer mf.Fd.Close()
	var t *table.Table
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("unreadable (%s)", firstLine(fmt.Sprint(r)))
			}
		}()
		t, err = table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: options.OnTableRead, BlockSize: 4 << 10,
			BloomFalsePositive: 0.01, Compression: badger.DefaultOptions("").Compression})
	}()
	if err != nil {
		return 0, err
	}
	missing := 0
	it := t.NewIterator(0)
	defer it.Close()
	err = db.View(func(txn *badger.Txn) error {
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Key()
			ki := txn.NewKeyIterator(y.ParseKey(k), badger.IteratorOptions{AllVersions: true})
			ki.Rewind()
			if !ki.Valid() || ki.Item().Version() < y.ParseTs(k) {
				missing++
			}
			ki.Close()
		}
		return nil
	})
	return missing, err
}

// checkOrphans is the look-up after Open. Orphans whose records are all in
// the store are let go; others stay in orphanDir, logged as an error.
func (s *Store) checkOrphans(links []string) {
	keep := false
	for _, p := range links {
		n, err := orphanRecordsMissing(s.db, p)
		switch {
		case err != nil && len(s.opts.EncryptionKey) > 0:
			// Encrypted: its data key is unknown without the MANIFEST entry.
			s.log.Warn("table not named in MANIFEST could not be checked (encrypted); kept", "table", p)
			return
		case err != nil:
			// Empty or cut short: a table being written when the process
			// stopped (seen under kill -9: a 0-byte file). A table the
			// MANIFEST once named was whole; this one never held
			// committed data alone.
			s.log.Info("table not named in MANIFEST is incomplete: left over from a stop while it was written", "table", filepath.Base(p), "err", err)
		case n > 0:
			// Not a refusal: after kill -9 this also happens with every
			// acknowledged write present (TestKill9 checks them), so it
			// cannot tell a MANIFEST cut at a record boundary from a crash
			// mid-compaction. The tables stay aside for salvage.
			s.log.Error("store: a table the MANIFEST does not name holds records the store lacks; kept for `agorad store salvage`",
				"table", filepath.Base(p), "records", n, "kept_in", filepath.Dir(p))
			keep = true
		}
	}
	if len(links) > 0 && !keep {
		_ = os.RemoveAll(filepath.Dir(links[0]))
	}
}
