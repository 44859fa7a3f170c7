package buffer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"google.golang.org/protobuf/proto"
)

// CheckOptions configure Check and Salvage.
type CheckOptions struct {
	EncryptionKey []byte // the store's key (nil: not encrypted)
	// Salvage only: the new store's key. nil: the same as EncryptionKey,
	// unless TargetPlain (the new store is not encrypted). This is how a
	// plain store becomes encrypted, or an encrypted one plain.
	TargetKey   []byte
	TargetPlain bool
	TempDir     string       // where the working copy goes; os.TempDir() when empty
	Logger      *slog.Logger // Badger's messages about the copy; nil discards them
}

func (o CheckOptions) targetKey() []byte {
	switch {
	case o.TargetPlain:
		return nil
	case o.TargetKey != nil:
		return o.TargetKey
	}
	return o.EncryptionKey
}

func (o CheckOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o.Logger
}

// Report is what Check (and Salvage) found.
type Report struct {
	Dir     string   `json:"dir"`
	StoreID string   `json:"store_id,omitempty"` // as stored in the store
	Seq     uint64   `json:"seq"`                // the store's sequence counter
	Files   []string `json:"files,omitempty"`    // damaged or missing files, with what is wrong

	IdentityID  string `json:"identity_store_id,omitempty"` // from the identity file beside the store
	IdentitySeq uint64 `json:"identity_seq,omitempty"`      // the high-water mark recorded there
	Identity    string `json:"identity_error,omitempty"`    // the identity file's problem, if any
	RolledBack  string `json:"rolled_back,omitempty"`       // why the store holds less than it held

	Listen     int      `json:"listen"`
	Outbox     int      `json:"outbox"`
	Journal    int      `json:"journal"`
	Retained   int      `json:"retained"`
	OtherKeys  int      `json:"other_keys"`           // state, index, schema
	Unreadable []string `json:"unreadable,omitempty"` // keys whose value could not be read or decoded
	Recovered  int      `json:"recovered,omitempty"`  // keys read block by block from damaged tables
	Copied     int      `json:"copied,omitempty"`     // Salvage: key/value pairs written to the new store
	NewStoreID string   `json:"new_store_id,omitempty"`
}

// Damaged says whether anything is wrong.
func (r Report) Damaged() bool {
	return len(r.Files) > 0 || len(r.Unreadable) > 0 || r.Identity != "" || r.RolledBack != ""
}

// Check verifies the store in dir without changing it: the files (MANIFEST,
// key registry, every table's checksums), then, on a working copy whose
// MANIFEST is rebuilt when damaged and whose unreadable tables are left
// out, every key and value (value-log checksums, the codecs), and the store
// against its identity file. A damaged store gives a Report with Damaged()
// true and a nil error; the error is for failing to look at all.
func Check(dir string, o CheckOptions) (Report, error) {
	r, db, rec, cleanup, err := openCopy(dir, o)
	if err != nil {
		return r, err
	}
	defer cleanup()
	err = db.View(func(txn *badger.Txn) error {
		return scanAll(txn, &r, rec, nil)
	})
	if err != nil {
		return r, fmt.Errorf("check store %s: %w", dir, err)
	}
	r.compareIdentity()
	return r, nil
}

func (r *Report) compareIdentity() {
	switch {
	case r.IdentityID == "":
	case r.StoreID != "" && r.StoreID != r.IdentityID:
		r.RolledBack = fmt.Sprintf("the store is %s, but %s was here: replaced", r.StoreID, r.IdentityID)
	case r.Seq < r.IdentitySeq:
		r.RolledBack = fmt.Sprintf("the store's seq is %d, but it had reached %d: its most recent writes are lost", r.Seq, r.IdentitySeq)
	}
}

// scanAll reads every key and value, counting them in r; put (when not
// nil) gets every readable pair. rec (from damaged tables, newer than
// what the healthy tables hold) overrides and adds.
func scanAll(txn *badger.Txn, r *Report, rec map[string]recovered, put func(k, v []byte) error) error {
	one := func(k, v []byte, size int64) error {
		var bad error
		if bad = checkValue(k, v, size); bad == nil {
			switch {
			case bytes.Equal(k, keySeq):
				if len(v) == 8 {
					r.Seq = binary.BigEndian.Uint64(v)
				}
			case bytes.Equal(k, keyStoreID):
				r.StoreID = string(v)
			}
			if put != nil {
				if err := put(append([]byte(nil), k...), append([]byte(nil), v...)); err != nil {
					return err
				}
			}
		}
		r.count(k, bad)
		return nil
	}
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if x, ok := rec[string(k)]; ok {
			delete(rec, string(k))
			if err := r.recoveredOne(k, x, one); err != nil {
				return err
			}
			continue
		}
		if err := item.Value(func(v []byte) error { return one(k, v, item.ValueSize()) }); err != nil {
			return err
		}
	}
	for k, x := range rec {
		if err := r.recoveredOne([]byte(k), x, one); err != nil {
			return err
		}
	}
	return nil
}

func (r *Report) recoveredOne(k []byte, x recovered, one func(k, v []byte, size int64) error) error {
	switch {
	case x.deleted:
		return nil
	case x.err != nil:
		r.count(k, x.err)
		return nil
	}
	r.Recovered++
	return one(k, x.value, int64(len(x.value)))
}

// count adds one key to the report: readable (bad nil) or not.
func (r *Report) count(k []byte, bad error) {
	if bad != nil {
		r.Unreadable = append(r.Unreadable, fmt.Sprintf("%q: %v", k, bad))
		return
	}
	ar, ok := areaOf(k)
	switch {
	case !ok || ar == areaIndex || ar >= areaReply:
		r.OtherKeys++
	case ar == areaListen:
		r.Listen++
	case ar == areaControl || ar == areaData:
		r.Outbox++
	case ar == areaJournal:
		r.Journal++
	case ar == areaRetained:
		r.Retained++
	}
}

// openCopy copies the store into a temporary directory, makes the copy
// openable (MANIFEST rebuilt from the tables that verify, unreadable tables
// left out) and opens it. The original is only read.
func openCopy(dir string, o CheckOptions) (Report, *badger.DB, map[string]recovered, func(), error) {
	r := Report{Dir: dir}
	if _, err := os.Stat(dir); err != nil {
		return r, nil, nil, nil, fmt.Errorf("check store: %w", err)
	}
	if ident, err := readIdentity(dir); err != nil {
		r.Identity = err.Error()
	} else if ident != nil {
		r.IdentityID, r.IdentitySeq = ident.ID, ident.Seq
	}
	files, mf, found, err := preflight(dir, o.EncryptionKey)
	if err != nil {
		return r, nil, nil, nil, fmt.Errorf("check store %s: %w", dir, err)
	}
	for _, d := range found {
		if d.Key {
			return r, nil, nil, nil, fmt.Errorf("check store %s: %s: %w", dir, d, ErrKey)
		}
		r.Files = append(r.Files, d.String())
	}
	tmp, err := os.MkdirTemp(o.TempDir, "agorad-store-copy-")
	if err != nil {
		return r, nil, nil, nil, fmt.Errorf("check store: working copy: %w", err)
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	if err := copyStoreFiles(dir, tmp); err != nil {
		cleanup()
		return r, nil, nil, nil, fmt.Errorf("check store: working copy: %w", err)
	}
	// Tables kept aside at a refused Open (see orphanDir) take part.
	// Badger may have reused their numbers since: they get new ones.
	if kept, _ := filepath.Glob(filepath.Join(orphanDir(dir), "*.sst")); len(kept) > 0 {
		next := uint64(0)
		for id := range files.tables {
			next = max(next, id)
		}
		for _, p := range kept {
			next++
			name := table.IDToFilename(next)
			if err := copySparse(p, filepath.Join(tmp, name)); err != nil {
				cleanup()
				return r, nil, nil, nil, fmt.Errorf("check store: working copy: %w", err)
			}
			files.tables[next] = filepath.Join(tmp, name)
		}
	}
	badTables := map[string]bool{}
	manifestBad := false
	for _, d := range found {
		if d.File == manifestName {
			manifestBad = true
		} else if filepath.Ext(d.File) == ".sst" {
			badTables[d.File] = true
		}
	}
	// preflight verified the tables the MANIFEST names; the others (all
	// of them when the MANIFEST is bad, tables a crash in a memtable flush
	// left unregistered, the orphans) are verified here: Badger's Open
	// panics in a goroutine of its own on a table it cannot index.
	{
		for id, p := range files.tables {
			if mf != nil {
				if _, named := mf.Tables[id]; named {
					continue // verified by preflight
				}
			}
			tm := badger.TableManifest{Compression: badger.DefaultOptions("").Compression}
			if err := verifyTable(p, tm, nil); err != nil {
				badTables[filepath.Base(p)] = true
				r.Files = append(r.Files, filepath.Base(p)+": "+err.Error())
			}
		}
	}
	// What can be read of the damaged tables, block by block, from the
	// original (only read).
	rec := map[string]recovered{}
	for id, p := range files.tables {
		if !badTables[filepath.Base(p)] {
			continue
		}
		tm := badger.TableManifest{Compression: badger.DefaultOptions("").Compression}
		if mf != nil {
			if old, ok := mf.Tables[id]; ok {
				tm = old
			}
		}
		got, lost := salvageTable(dir, p, tm)
		for k, x := range got {
			if prev, ok := rec[k]; !ok || prev.version < x.version {
				rec[k] = x
			}
		}
		r.Files = append(r.Files, lost...)
	}
	// The write-ahead logs, read past any damage (Badger stops at it).
	for _, p := range files.mems {
		lost := salvageWAL(dir, p, rec)
		if !slices.ContainsFunc(found, func(d damage) bool { return d.File == filepath.Base(p) }) {
			r.Files = append(r.Files, lost...) // else preflight reported it
		}
	}
	if manifestBad || len(badTables) > 0 || (mf != nil && len(mf.Tables) != len(files.tables)) {
		if err := rebuildManifest(tmp, files, mf, badTables); err != nil {
			cleanup()
			return r, nil, nil, nil, fmt.Errorf("check store: rebuild MANIFEST of the working copy: %w", err)
		}
	}
	logger := o.logger()
	s := &Store{dir: tmp, log: logger}
	s.opts, _ = Options{EncryptionKey: o.EncryptionKey, Logger: logger}.withDefaults()
	db, err := openBadger(s.badgerOptions().WithCompactL0OnClose(false).WithNumCompactors(0))
	if err != nil {
		cleanup()
		return r, nil, nil, nil, fmt.Errorf("check store %s: open the working copy: %w", dir, err)
	}
	if err := mergeRecovered(db, rec); err != nil {
		_ = db.Close()
		cleanup()
		return r, nil, nil, nil, fmt.Errorf("check store %s: %w", dir, err)
	}
	return r, db, rec, func() { _ = db.Close(); cleanup() }, nil
}

// copyStoreFiles copies Badger's files (sparse: the value log and the
// write-ahead log are preallocated and mostly holes).
func copyStoreFiles(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		if err := copySparse(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copySparse(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	var off int64
	for {
		n, rerr := in.Read(buf)
		if n > 0 {
			if !allZero(buf[:n]) {
				if _, err := out.WriteAt(buf[:n], off); err != nil {
					out.Close()
					return err
				}
			}
			off += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := out.Truncate(st.Size()); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// rebuildManifest writes a MANIFEST for the working copy naming every table
// that verified: at its level when the old MANIFEST named it, else at level
// 0 (Badger resolves overlapping tables by version, so that is safe), and
// removes the tables that did not verify.
func rebuildManifest(dir string, files storeFiles, old *badger.Manifest, bad map[string]bool) error {
	var ids []uint64
	for id, p := range files.tables {
		name := filepath.Base(p)
		if bad[name] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return err
			}
			continue
		}
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var cs pb.ManifestChangeSet
	for _, id := range ids {
		// Without the old entry: the compression this package writes with
		// (Badger's default).
		ch := &pb.ManifestChange{Id: id, Op: pb.ManifestChange_CREATE, Level: 0,
			Compression: uint32(badger.DefaultOptions("").Compression)}
		if old != nil {
			if tm, ok := old.Tables[id]; ok {
				ch.Level, ch.KeyId, ch.Compression = uint32(tm.Level), tm.KeyID, uint32(tm.Compression)
			}
		}
		cs.Changes = append(cs.Changes, ch)
	}
	body, err := proto.Marshal(&cs)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("Bdgr")
	_ = binary.Write(&b, binary.BigEndian, uint16(0)) // external magic
	_ = binary.Write(&b, binary.BigEndian, uint16(8)) // Badger's manifest version (v4)
	_ = binary.Write(&b, binary.BigEndian, uint32(len(body)))
	_ = binary.Write(&b, binary.BigEndian, crc32.Checksum(body, crcTable))
	b.Write(body)
	p := filepath.Join(dir, manifestName)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(p, b.Bytes(), 0o600)
}
