package buffer

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// checkSpace refuses a write of need bytes when the file system holding the
// state dir would drop below ReserveBytes. Badger writes through mmap'd
// sparse files: if the file system ran out inside Badger the process would
// die of SIGBUS instead of getting ENOSPC, so the guard must come first.
// Writes are counted twice (WAL or value log, then the SST at flush).
// A negative need marks a delete.
func (s *Store) checkSpace(need int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return fmt.Errorf("check free space in %s: %w", s.dir, err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	reserve := s.opts.ReserveBytes
	if need < 0 {
		// Deletes only add tombstones and are how space comes back: they may
		// dip into half the reserve.
		reserve, need = reserve/2, 0
	}
	// Badger also needs new files (memtables, tables, value-log files);
	// without an inode it fails inside a flush (see recovering).
	if st.Files > 0 && st.Ffree < s.minInodes {
		return fmt.Errorf("state dir %s: %d inodes free, need %d: %w", s.dir, st.Ffree, s.minInodes, ErrDiskFull)
	}
	if free < reserve+2*need {
		return fmt.Errorf("state dir %s: %d bytes free, need %d (%d for this write + %d reserve): %w",
			s.dir, free, 2*need+reserve, 2*need, reserve, ErrDiskFull)
	}
	return nil
}

const minFreeInodes = 16

// freeBytes is the space available to us on the state dir's file system.
func (s *Store) freeBytes() int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(s.dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// classify maps out-of-space errors from Badger or the OS to ErrDiskFull
// naming the state dir; other errors pass through.
func (s *Store) classify(err error) error {
	if err == nil || errors.Is(err, ErrDiskFull) {
		return err
	}
	// Badger wraps some errors as text, so match the message too.
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), syscall.ENOSPC.Error()) || strings.Contains(err.Error(), syscall.EDQUOT.Error()) {
		return fmt.Errorf("state dir %s: %w: %w", s.dir, ErrDiskFull, err)
	}
	return err
}

// allocated is the space a file takes on disk (blocks, not apparent size).
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}
