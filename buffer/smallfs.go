package buffer

import (
	"fmt"
	"syscall"
)

// Sizes for a small file system. Badger's defaults here (4 MiB memtables,
// 16 MiB value-log files, a 24 MiB reserve) need a file system of a few
// hundred MiB; on a 20 MiB one every write was refused (the reserve alone
// was larger than the disk). On a file system too small for them, the
// memtable, the value-log files and the reserve are scaled down with it,
// keeping the reserve at most a quarter of it.
const (
	minMemTable = 256 << 10
	// compactionSlack is room for two compactors writing 1 MiB tables at
	// once (BaseTableSize), with the memtable flushes on top: with less, a
	// compaction's mmap write on a full tmpfs died of SIGBUS (TestDiskFull).
	compactionSlack = 2 << 20
)

// smallReserve is the reserve kept for Badger with memtables of m bytes
// on a small file system.
func smallReserve(m int64) int64 { return 4*m + compactionSlack }

// fitToFS scales the sizes the caller left to their defaults (given: the
// caller's options; o: with defaults) to the size of the file system
// holding dir, and refuses a file system too small for the smallest.
func fitToFS(dir string, given, o Options) (Options, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return o, fmt.Errorf("size of the file system of %s: %w", dir, err)
	}
	total := int64(st.Blocks) * st.Bsize
	if given.ReserveBytes > 0 || o.ReserveBytes <= total/4 {
		return o, nil // the caller's choice, or the defaults fit
	}
	if given.MemTableSize > 0 {
		return o, nil // sized by the caller: the caller's reserve
	}
	if need := 2 * smallReserve(minMemTable); total < need {
		return o, fmt.Errorf("state dir %s: its file system holds %d bytes; the store needs one of at least %d (%d kept free for Badger's memtable flushes and compactions, and as much for data): %w",
			dir, total, need, smallReserve(minMemTable), ErrDiskFull)
	}
	m := int64(minMemTable)
	for 2*m < o.MemTableSize && smallReserve(2*m) <= total/4 {
		m *= 2
	}
	o.MemTableSize = m
	o.ReserveBytes = smallReserve(m)
	if given.ValueLogFileSize <= 0 {
		o.ValueLogFileSize = min(o.ValueLogFileSize, max(1<<20, total/8))
	}
	return o, nil
}
