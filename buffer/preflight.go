package buffer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/fb"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger's file names.
const (
	manifestName    = "MANIFEST"
	keyRegistryName = "KEYREGISTRY"
)

// storeFiles is what a Badger directory holds.
type storeFiles struct {
	manifest    bool
	keyRegistry bool
	tables      map[uint64]string // id -> path
	vlogs, mems []string
}

func (f storeFiles) hasData() bool {
	return len(f.tables)+len(f.vlogs)+len(f.mems) > 0
}

func listStoreFiles(dir string) (storeFiles, error) {
	f := storeFiles{tables: map[uint64]string{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return f, err
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == manifestName:
			f.manifest = true
		case name == keyRegistryName:
			f.keyRegistry = true
		case strings.HasSuffix(name, ".sst"):
			if id, err := strconv.ParseUint(strings.TrimSuffix(name, ".sst"), 10, 64); err == nil {
				f.tables[id] = filepath.Join(dir, name)
			}
		case strings.HasSuffix(name, ".vlog"):
			f.vlogs = append(f.vlogs, filepath.Join(dir, name))
		case strings.HasSuffix(name, ".mem"):
			f.mems = append(f.mems, filepath.Join(dir, name))
		}
	}
	return f, nil
}

// damage is one finding of the preflight or of a check.
type damage struct {
	File string // file name inside the store dir, or the key of a value
	What string
	Key  bool // the encryption key is wrong or missing
}

func (d damage) String() string {
	if d.File == "" {
		return d.What
	}
	return d.File + ": " + d.What
}

// preflight inspects the files before Badger opens them. Badger, handed a
// damaged directory, makes it worse or dies (measured here, v4.9.6): with
// MANIFEST missing or truncated it starts empty and deletes every table the
// manifest no longer names; a table whose checksum fails is skipped with a
// log line (its records silently gone); a truncated table panics in a
// goroutine of Open, which no recover can catch. So each of those is
// looked at here first, in this goroutine, without writing anything.
//
// key is the encryption key (nil: none). The findings are returned, not
// wrapped: Open refuses on any, Check reports them all.
func preflight(dir string, key []byte) (storeFiles, *badger.Manifest, []damage, error) {
	files, err := listStoreFiles(dir)
	if err != nil {
		return files, nil, nil, fmt.Errorf("list store files: %w", err)
	}
	var found []damage
	if !files.manifest {
		if files.hasData() {
			found = append(found, damage{File: manifestName, What: "missing while the store has data files (Badger would start empty and delete the tables)"})
		}
		return files, nil, found, nil
	}
	mf, err := replayManifest(filepath.Join(dir, manifestName))
	if err != nil {
		return files, nil, append(found, damage{File: manifestName, What: err.Error()}), nil
	}
	var ids []uint64
	for id := range mf.Tables {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if _, ok := files.tables[id]; !ok {
			found = append(found, damage{File: table.IDToFilename(id), What: "named in MANIFEST but missing"})
		}
	}
	// Badger replays a write-ahead log up to its first bad entry and cuts
	// the file there: look first, so that what follows the damage is still
	// there for salvage.
	for _, p := range files.mems {
		for _, l := range salvageWAL(dir, p, nil) {
			found = append(found, damage{File: filepath.Base(p), What: l[len(filepath.Base(p))+2:] +
				" (valid entries follow: Badger would drop them)"})
		}
	}
	kr, kerr := openKeyRegistry(dir, key, files)
	if kerr != nil {
		what := strings.TrimSuffix(kerr.Error(), ": "+ErrKey.Error())
		return files, &mf, append(found, damage{File: keyRegistryName, What: what, Key: errors.Is(kerr, ErrKey)}), nil
	}
	for _, id := range ids {
		p, ok := files.tables[id]
		if !ok {
			continue
		}
		if err := verifyTable(p, mf.Tables[id], kr); err != nil {
			found = append(found, damage{File: filepath.Base(p), What: err.Error()})
		}
	}
	return files, &mf, found, nil
}

// replayManifest reads the MANIFEST without changing it. Badger itself
// truncates a MANIFEST at the first bad record; here anything but a clean
// end is damage.
func replayManifest(path string) (badger.Manifest, error) {
	fp, err := os.Open(path)
	if err != nil {
		return badger.Manifest{}, err
	}
	defer fp.Close()
	st, err := fp.Stat()
	if err != nil {
		return badger.Manifest{}, err
	}
	mf, end, err := badger.ReplayManifestFile(fp, 0, badger.DefaultOptions(""))
	if err != nil {
		return mf, fmt.Errorf("unreadable: %v", err)
	}
	if end != st.Size() {
		return mf, fmt.Errorf("damaged after byte %d of %d (Badger would cut it there and delete the tables named after it)", end, st.Size())
	}
	return mf, nil
}

// openKeyRegistry opens the key registry read-only, to check the key
// before Badger does (Badger creates a new registry when it is missing).
func openKeyRegistry(dir string, key []byte, files storeFiles) (*badger.KeyRegistry, error) {
	if !files.keyRegistry {
		if len(key) > 0 && len(files.tables)+len(files.vlogs) > 0 {
			return nil, fmt.Errorf("missing: the store's data keys are gone, its encrypted files cannot be read: %w", ErrKey)
		}
		return nil, nil
	}
	kr, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{Dir: dir, ReadOnly: true, EncryptionKey: key})
	switch {
	case errors.Is(err, badger.ErrEncryptionKeyMismatch) && len(key) == 0:
		return nil, fmt.Errorf("the store is encrypted and no key is configured (storage.encryption_key_file): %w", ErrKey)
	case errors.Is(err, badger.ErrEncryptionKeyMismatch):
		return nil, fmt.Errorf("the configured key does not open this store (wrong key, or the store is not encrypted): %w", ErrKey)
	case err != nil:
		return nil, fmt.Errorf("unreadable: %v", err)
	}
	return kr, nil
}

// verifyTable opens one table read-only with Badger's whole-table checksum
// verification, recovering from the panics Badger's table code raises on a
// truncated or garbled file.
func verifyTable(path string, tm badger.TableManifest, kr *badger.KeyRegistry) (err error) {
	opts := table.Options{ReadOnly: true, ChkMode: options.OnTableRead, BlockSize: 4 << 10,
		BloomFalsePositive: 0.01, Compression: tm.Compression}
	if kr != nil {
		dk, err := kr.DataKey(tm.KeyID)
		if err != nil {
			return fmt.Errorf("data key %d: %v", tm.KeyID, err)
		}
		opts.DataKey = dk
		if dk != nil {
			cache, err := ristretto.NewCache(&ristretto.Config[uint64, *fb.TableIndex]{NumCounters: 1000, MaxCost: 8 << 20, BufferItems: 64})
			if err != nil {
				return err
			}
			defer cache.Close()
			opts.IndexCache = cache
		}
	}
	if st, err := os.Stat(path); err != nil {
		return fmt.Errorf("stat: %v", err)
	} else if st.Size() == 0 {
		return errors.New("empty")
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open: %v", err)
	}
	defer func() {
		if r := recover(); r != nil {
			_ = mf.Fd.Close()
			err = fmt.Errorf("unreadable (Badger panicked: %v)", firstLine(fmt.Sprint(r)))
		}
	}()
	// OpenTable closes mf when it fails.
	t, err := table.OpenTable(mf, opts)
	if err != nil {
		return fmt.Errorf("unreadable: %v", firstLine(err.Error()))
	}
	// Not t.DecrRef: at zero references a table deletes its file.
	return t.MmapFile.Close(-1)
}

// firstLine shortens Badger's errors and panics (a panic in its table
// index code carries a multi-line debug dump) to one line.
func firstLine(s string) string {
	if strings.Contains(s, "initIndex crash") {
		return "table index unreadable (truncated or garbled)"
	}
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
