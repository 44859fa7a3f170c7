package buffer

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// CheckWritable fails while the free-space guard refuses writes and passes
// once space is back, and it takes no sequence number.
func TestCheckWritable(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	dir := mountTmpfs(t, "8m")
	s, err := Open(filepath.Join(dir, "store"), smallDevice())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AppendListen(Record{Text: "before"}); err != nil {
		t.Fatal(err)
	}
	seq := s.seq
	for _, tc := range []struct {
		name    string
		ballast bool
		want    error
	}{
		{"room", false, nil},
		{"below the reserve", true, ErrDiskFull},
		{"space back", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ballast := filepath.Join(dir, "ballast")
			if tc.ballast {
				var st syscall.Statfs_t
				if err := syscall.Statfs(dir, &st); err != nil {
					t.Fatal(err)
				}
				free := int64(st.Bavail) * st.Bsize
				if err := os.WriteFile(ballast, make([]byte, free-(1<<20)), 0o600); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Remove(ballast); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			err := s.CheckWritable()
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("CheckWritable: %v, want %v", err, tc.want)
			}
		})
	}
	if s.seq != seq {
		t.Errorf("CheckWritable took sequence numbers: %d -> %d", seq, s.seq)
	}
	if n, err := s.ListenCount(); err != nil || n != 1 {
		t.Errorf("listen count %d, %v; want 1", n, err)
	}
}
