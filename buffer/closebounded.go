package buffer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrCloseFailed is returned (wrapped with the cause) by CloseWithin when
// the store could not be closed cleanly: its directory is gone, its file
// system is read-only or too full for Badger's memtable flush, the close
// failed, or it did not finish within its limit. What was accepted stays
// where Badger put it: in its tables, and since the last memtable flush in
// its write-ahead log (*.mem), which the next Open replays.
var ErrCloseFailed = errors.New("store not closed cleanly")

// CloseWithin is Close bounded by limit: a stopping daemon must exit within
// its unit's stop limit, and Badger's close can block for good (its memtable
// flush retries once a second while the directory is gone or read-only).
// On a timeout the close goroutine is left behind: the process is about to
// exit, and Badger's write-ahead log already holds every committed write.
// Whenever the close is not clean, it logs what was accepted and where it
// is, and returns an error wrapping ErrCloseFailed.
func (s *Store) CloseWithin(limit time.Duration) error {
	left := s.snapshotLeft()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
		if err == nil {
			return nil
		}
	case <-t.C:
		err = fmt.Errorf("close store in %s: Badger's close did not finish within %s", s.dir, limit)
	}
	s.logLeft(left, err)
	return fmt.Errorf("%w: %w", ErrCloseFailed, err)
}

// closeBadger closes Badger, unless its memtable flush cannot succeed: then
// it syncs what it can and leaves Badger open for the process exit, as a
// crash would (the write-ahead log is replayed at the next Open). A flush
// into a directory that is gone or read-only retries forever; a flush on a
// file system without room for the table writes into an mmap of a sparse
// file and dies of SIGBUS (measured: table.(*buildData).Copy, on SIGTERM
// with the disk full).
func (s *Store) closeBadger() error {
	if err := s.flushHazard(); err != nil {
		if serr := s.db.Sync(); serr != nil {
			err = fmt.Errorf("%w (sync of the write-ahead log: %v)", err, serr)
		}
		return fmt.Errorf("memtable flush not attempted: %w", err)
	}
	return s.db.Close()
}

// flushHazard says why Badger's memtable flush on close cannot succeed, or
// nil when it can be attempted.
func (s *Store) flushHazard() error {
	if s.testHookFlushHazard != nil {
		if err := s.testHookFlushHazard(); err != nil {
			return err
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return fmt.Errorf("state dir %s: %w", s.dir, err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, "MANIFEST")); err != nil {
		return fmt.Errorf("state dir %s: %w", s.dir, err)
	}
	if err := probeWritable(s.dir); err != nil {
		return err
	}
	need := flushNeed(s.dir)
	if free := int64(st.Bavail) * st.Bsize; free < need {
		return fmt.Errorf("state dir %s: %d bytes free, the memtable flush needs about %d: %w", s.dir, free, need, ErrDiskFull)
	}
	return nil
}

// probeWritable creates and removes a file in dir: the one test that sees
// every way a flush's new table file would fail. After an ext4 error
// (errors=remount-ro) the kernel here marks the mount emergency_ro, which
// statfs does not report as read-only, while every create fails with EROFS.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".close-probe-*")
	if err != nil {
		return fmt.Errorf("state dir %s not writable: %w", dir, err)
	}
	name := f.Name()
	err = f.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("state dir %s not writable: %w", dir, err)
	}
	return nil
}

// flushNeed estimates the space Badger's flush of its memtables takes: each
// memtable becomes one table about the size of its write-ahead log (the
// same keys and small values; large values stay in the value log as
// pointers), plus its index and bloom filter. A .mem file is sparse, so its
// allocated blocks are what was written to it.
func flushNeed(dir string) int64 {
	const perTable = 256 << 10 // index, bloom filter, block padding, manifest
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var need int64
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".mem" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if n := allocated(info); n > 0 {
			need += n + n/4 + perTable
		}
	}
	return need
}

// leftBehind is what a stopping store holds: its counts are taken before
// its close (from memory: told even when the close never returns), its
// files after an unclean one.
type leftBehind struct {
	counted                 bool // false: a write was in progress (s.mu held), counts unknown
	seq                     uint64
	listen, outbox, journal int
	files                   leftFiles
}

type leftFiles struct {
	answered          bool     // false: the directory did not answer within leftFilesLimit
	wal               []string // write-ahead log files and the bytes written to them
	vlog              int      // value-log files
	dirGone, readOnly bool
}

// leftFilesLimit bounds the look at the directory after an unclean close:
// a device that stopped answering must not hold up the stop.
const leftFilesLimit = time.Second

func (s *Store) snapshotLeft() leftBehind {
	l := leftBehind{seq: s.committed.Load()}
	// A writer stuck inside Badger holds s.mu: do not wait for it.
	if s.mu.TryLock() {
		l.counted = true
		l.listen = s.acct.n(areaListen)
		l.outbox = s.acct.n(areaControl) + s.acct.n(areaData)
		l.journal = s.acct.n(areaJournal)
		s.mu.Unlock()
	}
	return l
}

func filesLeft(dir string) leftFiles {
	var f leftFiles
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.dirGone = true
		return f
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		switch filepath.Ext(e.Name()) {
		case ".mem":
			f.wal = append(f.wal, fmt.Sprintf("%s (%d bytes written)", e.Name(), allocated(info)))
		case ".vlog":
			f.vlog++
		}
	}
	f.readOnly = errors.Is(probeWritable(dir), syscall.EROFS)
	return f
}

// logLeft tells the operator what an unclean close left, and where.
func (s *Store) logLeft(l leftBehind, err error) {
	done := make(chan leftFiles, 1)
	go func() { done <- filesLeft(s.dir) }()
	select {
	case l.files = <-done:
		l.files.answered = true
	case <-time.After(leftFilesLimit):
	}
	attrs := []any{"err", err, "last_committed_seq", l.seq}
	if l.counted {
		attrs = append(attrs, "listen", l.listen, "outbox", l.outbox, "journaled_audio", l.journal)
	} else {
		attrs = append(attrs, "counts", "unknown: a write was still in progress inside Badger")
	}
	var where string
	switch f := l.files; {
	case !f.answered:
		where = "Badger's tables and write-ahead log, as far as the device wrote them: the state directory does not answer"
	case f.dirGone:
		where = "nowhere on this device: the state directory is gone; entries not yet delivered are lost unless the directory comes back"
	default:
		where = "Badger's tables, and since the last memtable flush its write-ahead log (" + strings.Join(f.wal, ", ") +
			"), durable where it was written; the next start replays it (verify with agorad store check)"
		if f.readOnly {
			where += "; the file system is read-only: writes after the remount are not in it"
		}
		attrs = append(attrs, "value_log_files", f.vlog)
	}
	attrs = append(attrs, "where", where)
	s.log.Error("store not closed cleanly: what was accepted stays where Badger left it", attrs...)
}
