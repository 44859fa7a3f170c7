package buffer

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer/fsfault"
)

// TestSmallFileSystem (issue 23): a 20 MiB state directory could not keep
// a single note (the default reserve, 24 MiB, was larger than the disk).
// The store now scales its memtables, value-log files and reserve to the
// file system, keeps the defaults where they fit, and refuses one too small
// for the smallest sizes, saying what size it needs.
func TestSmallFileSystem(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts tmpfs file systems")
	}
	tests := []struct {
		size        string
		wantErr     string // "" opens
		memtable    int64
		reserve     int64
		notes, clip int // kept and read back after a reopen
	}{
		{size: "4m", wantErr: "the store needs one of at least 6291456"},
		{size: "8m", memtable: 256 << 10, reserve: 3 << 20, notes: 100},
		{size: "20m", memtable: 512 << 10, reserve: 4 << 20, notes: 300, clip: 10},
		{size: "1g", memtable: 4 << 20, reserve: 24 << 20, notes: 50, clip: 10},
	}
	for _, tt := range tests {
		t.Run(tt.size, func(t *testing.T) {
			dir := filepath.Join(fsfault.MountTmpfs(t, tt.size), "store")
			s, err := Open(dir, Options{Logger: quiet()})
			if tt.wantErr != "" {
				if err == nil {
					s.Close()
					t.Fatalf("opened on a %s file system", tt.size)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrDiskFull) {
					t.Fatalf("Open: %v; want ErrDiskFull saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if s.opts.MemTableSize != tt.memtable || s.opts.ReserveBytes != tt.reserve {
				t.Fatalf("memtable %d reserve %d, want %d and %d", s.opts.MemTableSize, s.opts.ReserveBytes, tt.memtable, tt.reserve)
			}
			var acked []Record
			for i := range tt.notes {
				r, err := s.AppendListen(rec("note " + strconv.Itoa(i) + ": " + strings.Repeat("lekkage bij de dakkapel ", 8)))
				if err != nil {
					t.Fatalf("note %d on a %s file system: %v", i, tt.size, err)
				}
				acked = append(acked, r)
			}
			if tt.clip > 0 {
				if _, err := s.JournalAudio(make([]float32, 16000*tt.clip), time.Now()); err != nil {
					t.Fatalf("a %d s clip on a %s file system: %v", tt.clip, tt.size, err)
				}
			}
			s = reopen(t, s)
			checkListen(t, s, acked)
			t.Logf("%s: memtable %d, value-log files %d, reserve %d, %d notes and a %d s clip kept, %d bytes free",
				tt.size, s.opts.MemTableSize, s.opts.ValueLogFileSize, s.opts.ReserveBytes, tt.notes, tt.clip, s.freeBytes())
		})
	}
}
