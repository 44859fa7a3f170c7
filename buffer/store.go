package buffer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"golang.org/x/sync/errgroup"
)

// SchemaVersion is the key layout this package writes. Open refuses a state
// directory written by a newer version rather than misreading it.
const SchemaVersion = 1

// Store is the durable store. All methods are safe for concurrent use;
// writes are serialised (the sequence counter is assigned inside each write
// transaction).
type Store struct {
	dir  string
	opts Options
	log  *slog.Logger

	// mu serialises writers: seq, floor, accounting and refusal counters.
	mu sync.Mutex
	// dbMu guards the db pointer, swapped only when reopening after a
	// failed write; readers hold it shared.
	dbMu sync.RWMutex
	db   *badger.DB

	seq       uint64        // last assigned sequence
	committed atomic.Uint64 // last sequence a committed write stored (read by the periodic sync)
	// identMu guards ident's file writes: the periodic sync must not take
	// mu (Close holds mu while it waits for the background goroutines).
	identMu     sync.Mutex
	ident       *identity
	storeID     string
	unreadable  int         // outbox entries whose value could not be read at Open (sent as dead letters)
	vlogDamaged atomic.Bool // keyVlogDamaged is set: no value-log GC
	listenFloor uint64      // listen records with seq <= floor were moved into a batch
	acct        accounting
	ridx        replyIdx // open and finished replies in seq order (replyindex.go)
	inbox       cmdInbox // commands accepted, in order (cmdinbox.go)
	inboxNotify chan struct{}
	// recovering is set when Badger itself failed a write for lack of
	// space: its in-memory state is then unusable (the mutable memtable is
	// gone) and its Close blocks until its memtable flush succeeds, i.e.
	// until space returns. The old DB is closed in the background; the
	// channel is closed when that finished and the store can reopen.
	recovering chan struct{}
	closed     bool
	refused    map[string]int64
	lastErr    string
	lastErrAt  time.Time
	failures   failureLog // failurelog.go
	// syncFailures counts failed periodic fsyncs (policy "interval");
	// syncFailing is the last one's error until a sync succeeds again:
	// while it is set, what was accepted since the last good sync is not
	// yet safe from a power cut (Stats, status, the metric). Under syncMu
	// (never s.mu: Close holds it while the sync goroutine ends).
	syncMu       sync.Mutex
	syncFailures int64
	syncFailing  string

	notify chan struct{}
	cancel context.CancelFunc
	group  *errgroup.Group

	// testHookAfterFlushMarker runs after FlushListen committed the batch
	// and the floor marker, before the moved listen keys are deleted. A
	// non-nil error aborts there, as a crash would.
	testHookAfterFlushMarker func() error
	// minInodes is the free-inode guard (tests lower it to reach Badger's
	// own ENOSPC handling).
	minInodes uint64
	// testHookFlushHazard runs first in flushHazard (closebounded.go).
	testHookFlushHazard func() error
}

// Open opens (or creates) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open store in %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open store: create state dir %s: %w", dir, err)
	}
	if o, err = fitToFS(dir, opts, o); err != nil { // smallfs.go
		return nil, fmt.Errorf("open store: %w", err)
	}
	s := &Store{
		dir:         dir,
		opts:        o,
		log:         o.Logger.With("component", "buffer", "dir", dir),
		refused:     map[string]int64{},
		notify:      make(chan struct{}, 1),
		inboxNotify: make(chan struct{}, 1),
		minInodes:   minFreeInodes,
	}
	if err := s.openChecked(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	g, ctx := errgroup.WithContext(ctx)
	s.cancel, s.group = cancel, g
	if o.Sync == SyncInterval {
		g.Go(func() error { every(ctx, s.opts.SyncInterval, s.syncOnce); return nil })
	}
	if o.GCInterval > 0 {
		g.Go(func() error { every(ctx, s.opts.GCInterval, s.RunGC); return nil })
	}
	return s, nil
}

func (s *Store) badgerOptions() badger.Options {
	o := s.opts
	return badger.DefaultOptions(s.dir).
		WithLogger(slogBadger{s.log}).
		WithSyncWrites(o.Sync == SyncAlways).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithBaseTableSize(1 << 20).
		WithBaseLevelSize(4 << 20).
		WithValueLogFileSize(o.ValueLogFileSize).
		// Records (a few hundred bytes) stay in the LSM; audio and batches go
		// to the value log. Must stay below 15% of the memtable.
		WithValueThreshold(min(1<<10, o.MemTableSize*15/100-1)).
		WithBlockCacheSize(o.BlockCacheSize).
		WithIndexCacheSize(o.IndexCacheSize).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false). // writers are serialised by Store.mu
		WithVerifyValueChecksum(true).
		// Tables are verified whole before Open (preflight); blocks are
		// verified as they are read.
		WithChecksumVerificationMode(options.OnBlockRead).
		WithEncryptionKey(o.EncryptionKey).
		WithMetricsEnabled(false)
}

// openDB opens Badger, checks or writes the schema version, loads the state
// and finishes a listen-buffer move a crash interrupted.
func (s *Store) openDB() error {
	// Opening may replay and flush the WAL; like a delete it may use half
	// the reserve (the point of opening may be to deliver and free space).
	if err := s.checkSpace(-1); err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	// A write that failed for lack of space can leave an empty file too.
	files, err := listStoreFiles(s.dir)
	if err == nil {
		_, err = dropEmptyLogs(s.dir, files, s.log)
	}
	if err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	db, err := openBadger(s.badgerOptions())
	if err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, s.classify(err))
	}
	if err := s.loadState(db); err != nil {
		_ = db.Close()
		return err
	}
	s.dbMu.Lock()
	s.db = db
	s.dbMu.Unlock()
	if err := s.deleteListenUpTo(s.listenFloor); err != nil {
		// The floor hides these keys; deleting them is retried next time.
		s.log.Warn("finish listen-buffer move", "err", err)
	}
	return nil
}

func (s *Store) loadState(db *badger.DB) error {
	err := db.Update(func(txn *badger.Txn) error {
		v, err := getUint64(txn, keySchema)
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			if err := txn.Set(keySchema, be8(SchemaVersion)); err != nil {
				return fmt.Errorf("write schema version: %w", err)
			}
		case err != nil:
			return fmt.Errorf("read schema version: %w", err)
		case v > SchemaVersion:
			return fmt.Errorf("state written by schema version %d, this agorad understands up to %d: upgrade agorad or use another state dir", v, SchemaVersion)
		case v < 1:
			return fmt.Errorf("invalid schema version %d", v)
		}
		seq, err := getUint64(txn, keySeq)
		if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("read sequence counter: %w", err)
		}
		// On a reopen the in-memory counter may be ahead (sequences of
		// failed writes are skipped): never go back.
		s.seq = max(s.seq, seq)
		s.committed.Store(max(s.committed.Load(), seq))
		if s.listenFloor, err = getUint64(txn, keyListenFloor); err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("read listen floor: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	acct, err := scanAccounting(db, s.listenFloor)
	if err != nil {
		return fmt.Errorf("open store in %s: %w", s.dir, err)
	}
	s.acct = acct
	return nil
}

func getUint64(txn *badger.Txn, key []byte) (uint64, error) {
	item, err := txn.Get(key)
	if err != nil {
		return 0, err
	}
	var v uint64
	err = item.Value(func(b []byte) error {
		if len(b) != 8 {
			return fmt.Errorf("key %s: %d bytes, want 8", key, len(b))
		}
		v = binary.BigEndian.Uint64(b)
		return nil
	})
	return v, err
}

// Close stops the background work and closes Badger (which flushes and
// syncs). Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cancel()
	_ = s.group.Wait()
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	if s.db == nil { // retired after a disk-full failure, closed above
		return s.closeIdentity()
	}
	if err := s.closeBadger(); err != nil {
		s.identMu.Lock()
		if s.ident != nil && s.ident.f != nil {
			_ = s.ident.f.Close() // unclean: the next Open resumes above the lease
			s.ident.f = nil
		}
		s.identMu.Unlock()
		return fmt.Errorf("close store in %s: %w", s.dir, err)
	}
	return s.closeIdentity()
}

func (s *Store) closeIdentity() error {
	s.identMu.Lock()
	defer s.identMu.Unlock()
	if err := s.ident.close(s.committed.Load(), s.seq); err != nil {
		return fmt.Errorf("close store in %s: %w", s.dir, err)
	}
	return nil
}

// Dir is the state directory.
func (s *Store) Dir() string { return s.dir }

// Notify is signalled (coalesced, never blocking the writer) after every
// outbox enqueue.
func (s *Store) Notify() <-chan struct{} { return s.notify }

func (s *Store) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// view runs a read transaction on the current db.
func (s *Store) view(fn func(txn *badger.Txn) error) error {
	s.dbMu.RLock()
	db := s.db
	if db == nil {
		s.dbMu.RUnlock()
		if err := s.recover(); err != nil {
			return err
		}
		s.dbMu.RLock()
		if db = s.db; db == nil {
			s.dbMu.RUnlock()
			return ErrClosed
		}
	}
	defer s.dbMu.RUnlock()
	return db.View(fn)
}

// write runs one serialised write transaction. needSpace is the number of
// bytes it adds for the disk guard (negative: a delete). fn gets the next
// sequence number; if it uses it, fn writes keySeq in the same transaction
// and its returned callback (run after a successful commit, under s.mu)
// advances s.seq and the accounting.
func (s *Store) write(what string, needSpace int64, fn func(txn *badger.Txn, next uint64) (func(), error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(what, needSpace, fn)
}

func (s *Store) writeLocked(what string, needSpace int64, fn func(txn *badger.Txn, next uint64) (func(), error)) error {
	if s.closed {
		return fmt.Errorf("%s: %w", what, ErrClosed)
	}
	if err := s.checkSpace(needSpace); err != nil {
		s.noteErr(what, err)
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := s.recoverLocked(); err != nil {
		s.noteErr(what, err)
		return fmt.Errorf("%s: %w", what, err)
	}
	s.identMu.Lock()
	err := s.ident.ensureLease(s.seq + 1)
	s.identMu.Unlock()
	if err != nil {
		s.noteErr(what, err)
		return fmt.Errorf("%s: %w", what, err)
	}
	prev := s.seq
	s.dbMu.RLock()
	db := s.db
	txn := db.NewTransaction(true)
	after, err := fn(txn, s.seq+1)
	if err == nil {
		err = txn.Commit()
	}
	txn.Discard()
	s.dbMu.RUnlock()
	if err != nil {
		err = s.classify(err)
		if errors.Is(err, ErrDiskFull) {
			s.retireDB()
		}
		// A failed commit may still have reached the log: never hand out
		// its sequence again.
		s.seq++
		s.noteErr(what, err)
		return fmt.Errorf("%s: %w", what, err)
	}
	if after != nil {
		after()
	}
	s.writeSucceeded()
	if s.seq != prev {
		s.committed.Store(s.seq)
		if s.opts.Sync == SyncAlways {
			// Committed and fsynced: record the high-water mark (a
			// write without fsync: it must survive the process, the
			// lease covers a power cut).
			s.identMu.Lock()
			err := s.ident.advance(s.seq)
			s.identMu.Unlock()
			if err != nil {
				s.log.Warn("record sequence high-water mark", "err", err)
			}
		}
	}
	return nil
}

// retireDB takes Badger out of service after it failed a write for lack
// of space and closes it in the background (see recovering). Called with
// s.mu held.
func (s *Store) retireDB() {
	s.log.Error("Badger failed a write for lack of space: closing it until space returns", "dir", s.dir)
	s.dbMu.Lock()
	old := s.db
	s.db = nil
	s.dbMu.Unlock()
	done := make(chan struct{})
	s.recovering = done
	s.group.Go(func() error {
		defer close(done)
		if err := old.Close(); err != nil {
			s.log.Warn("close store after a failed write", "err", err)
		}
		return nil
	})
}

// recoverLocked reopens Badger once a retired DB finished closing. Called
// with s.mu held.
func (s *Store) recoverLocked() error {
	if s.recovering == nil {
		return nil
	}
	select {
	case <-s.recovering:
	default:
		return fmt.Errorf("state dir %s: waiting for space to finish the interrupted memtable flush: %w", s.dir, ErrDiskFull)
	}
	if err := s.openDB(); err != nil {
		return err
	}
	s.recovering = nil
	s.log.Info("store reopened after disk full")
	return nil
}

// recover is recoverLocked for readers.
func (s *Store) recover() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.recoverLocked()
}

func (s *Store) noteErr(what string, err error) {
	s.lastErr = fmt.Sprintf("%s: %v", what, err)
	s.lastErrAt = time.Now()
	s.logFailure(what, err) // failurelog.go: once per episode
}
