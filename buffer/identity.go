package buffer

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// Errors of Open for a store that must not be used as it is. They are
// wrapped with what was found and what to do (agorad store check / salvage).
var (
	// ErrDamaged: the store's files are damaged (MANIFEST, tables, key
	// registry, unreadable values) or a part of the store is missing.
	ErrDamaged = errors.New("store damaged")
	// ErrRolledBack: the store holds less than it held before (its sequence
	// counter is below the high-water mark kept beside it), or it is empty
	// or another store where this one was.
	ErrRolledBack = errors.New("store rolled back or replaced")
	// ErrKey: the encryption key is wrong or missing for this store.
	ErrKey = errors.New("store encryption key")
)

// whatToDo ends every refusal: the two commands that look at and rescue
// what is readable. The damaged store is never changed by them.
func whatToDo(dir string) string {
	return fmt.Sprintf("run `agorad store check` to see what is readable and `agorad store salvage --to NEWDIR` "+
		"to copy it into a new store, then move %s (and %s) away and put NEWDIR in its place", dir, identityPath(dir))
}

// identity is the store's incarnation and its sequence high-water mark,
// kept in a small file beside the store directory (not inside it: a store
// directory that is emptied, replaced or restored from an old copy must
// not take its own evidence with it).
//
// The file is fixed-width text, rewritten in place with one write:
//
//	agorad store identity 1
//	store_id <uuid>
//	created <RFC 3339>
//	seq <20 digits>    the last seq the store holds durably
//	lease <20 digits>  no seq above it was handed out; fsynced before one is
//	crc <8 hex>        CRC-32C of the lines above
//
// seq is rewritten (without fsync) after every committed write under sync
// "always", after each periodic sync under "interval", and on Close: a
// process crash keeps it (page cache), so a store whose write-ahead log lost
// entries (a garbled .mem) is caught at the next Open. lease covers what a
// power cut may lose from both files: after an unclean stop the counter
// resumes above the lease, so a seq is never handed out twice within one
// store_id, even when a rollback went undetected.
type identity struct {
	path    string
	f       *os.File
	ID      string
	Created time.Time
	Seq     uint64
	Lease   uint64
}

const identityMagic = "agorad store identity 1"

// leaseBlock is how far a lease reaches: one fsync of the identity file
// per leaseBlock sequence numbers (and one per process start).
const leaseBlock = 1024

func identityPath(dir string) string {
	dir = filepath.Clean(dir)
	return filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".identity")
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func (id *identity) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nstore_id %s\ncreated %s\nseq %020d\nlease %020d\n", identityMagic, id.ID,
		id.Created.UTC().Format(time.RFC3339), id.Seq, id.Lease)
	fmt.Fprintf(&b, "crc %08x\n", crc32.Checksum(b.Bytes(), crcTable))
	return b.Bytes()
}

func decodeIdentity(b []byte) (identity, error) {
	var id identity
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) != 6 || string(lines[0]) != identityMagic {
		return id, errors.New("not an agorad store identity file")
	}
	end := bytes.LastIndex(bytes.TrimRight(b, "\n"), []byte("\ncrc "))
	want, err := strconv.ParseUint(string(bytes.TrimPrefix(lines[5], []byte("crc "))), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(b[:end+1], crcTable) {
		return id, errors.New("checksum mismatch")
	}
	field := func(i int, name string) (string, error) {
		l := string(lines[i])
		if len(l) <= len(name)+1 || l[:len(name)+1] != name+" " {
			return "", fmt.Errorf("line %d: want %q", i+1, name)
		}
		return l[len(name)+1:], nil
	}
	if id.ID, err = field(1, "store_id"); err != nil {
		return id, err
	}
	if _, err := uuid.Parse(id.ID); err != nil {
		return id, fmt.Errorf("store_id: %w", err)
	}
	s, err := field(2, "created")
	if err == nil {
		id.Created, err = time.Parse(time.RFC3339, s)
	}
	if err != nil {
		return id, err
	}
	for i, p := range []*uint64{&id.Seq, &id.Lease} {
		name := []string{"seq", "lease"}[i]
		s, err := field(3+i, name)
		if err == nil {
			*p, err = strconv.ParseUint(s, 10, 64)
		}
		if err != nil {
			return id, fmt.Errorf("%s: %w", name, err)
		}
	}
	if id.Lease < id.Seq {
		return id, fmt.Errorf("lease %d below seq %d", id.Lease, id.Seq)
	}
	return id, nil
}

// readIdentity reads the identity file of the store in dir; (nil, nil)
// when there is none.
func readIdentity(dir string) (*identity, error) {
	p := identityPath(dir)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read store identity %s: %w", p, err)
	}
	id, err := decodeIdentity(b)
	if err != nil {
		return nil, fmt.Errorf("store identity %s is damaged (%v): %w; if `agorad store check` finds the store intact, "+
			"remove the identity file to adopt the store as it is", p, err, ErrDamaged)
	}
	id.path = p
	return &id, nil
}

// createIdentity writes a new identity file atomically (temp file, fsync,
// rename, fsync of the directory).
func createIdentity(dir, storeID string, seq uint64) (*identity, error) {
	id := &identity{path: identityPath(dir), ID: storeID, Created: time.Now().UTC(), Seq: seq, Lease: seq}
	tmp := id.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create store identity: %w", err)
	}
	_, err = f.Write(id.encode())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, id.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(id.path))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("create store identity %s: %w", id.path, err)
	}
	return id, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// open keeps the file open for the in-place updates.
func (id *identity) open() error {
	f, err := os.OpenFile(id.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open store identity: %w", err)
	}
	id.f = f
	return nil
}

// write rewrites the file in place (one write of the same length, so a
// process crash leaves either version); sync makes it durable.
func (id *identity) write(sync bool) error {
	if id.f == nil {
		return nil
	}
	if _, err := id.f.WriteAt(id.encode(), 0); err != nil {
		return fmt.Errorf("update store identity %s: %w", id.path, err)
	}
	if sync {
		if err := id.f.Sync(); err != nil {
			return fmt.Errorf("sync store identity %s: %w", id.path, err)
		}
	}
	return nil
}

// ensureLease makes sure seq next is covered by a durable lease.
func (id *identity) ensureLease(next uint64) error {
	if id == nil || next <= id.Lease {
		return nil
	}
	id.Lease = next + leaseBlock
	return id.write(true)
}

// advance records that the store durably holds seq.
func (id *identity) advance(seq uint64) error {
	if id == nil || seq <= id.Seq {
		return nil
	}
	id.Seq = seq
	return id.write(false)
}

// close records a clean stop: committed is the last seq the store holds,
// handedOut the counter (above committed when failed writes skipped
// seqs). With lease = handedOut the next Open resumes right after it.
func (id *identity) close(committed, handedOut uint64) error {
	if id == nil || id.f == nil {
		return nil
	}
	id.Seq = max(id.Seq, committed)
	id.Lease = max(id.Seq, handedOut)
	err := id.write(true)
	if cerr := id.f.Close(); err == nil {
		err = cerr
	}
	id.f = nil
	return err
}
