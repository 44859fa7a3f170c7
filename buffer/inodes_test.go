package buffer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutOfInodes makes Badger itself hit ENOSPC (it cannot create its next
// memtable or table file: the tmpfs is out of inodes, not bytes), which the
// byte guard cannot foresee. The write must fail with ErrDiskFull, nothing
// acknowledged may be lost, and once files are freed the store must work
// again (it reopens Badger internally).
func TestOutOfInodes(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a tmpfs")
	}
	tests := []struct {
		name      string
		minInodes uint64
		want      string
	}{
		{"guard", minFreeInodes, "inodes free"},
		{"badger ENOSPC", 0, "no space left on device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testOutOfInodes(t, tt.minInodes, tt.want) })
	}
}

func testOutOfInodes(t *testing.T, minInodes uint64, want string) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=64", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("needs to mount a tmpfs (root or CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	s := openT(t, dir, smallDevice())
	s.minInodes = minInodes
	// Use up every inode but the ones Badger already has.
	var ballast []string
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("ballast%03d", i))
		f, err := os.Create(p)
		if err != nil {
			break
		}
		f.Close()
		ballast = append(ballast, p)
	}
	var acked []Record
	var err error
	text := strings.Repeat("x", 400)
	for len(acked) < 100000 {
		var r Record
		if r, err = s.AppendListen(rec(text)); err != nil {
			break
		}
		acked = append(acked, r)
	}
	t.Logf("after %d appends: %v", len(acked), err)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), want) {
		t.Fatalf("want ErrDiskFull saying %q, got %v", want, err)
	}
	if _, err := s.AppendListen(rec(text)); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("second append on the full disk: %v", err)
	}
	if minInodes == 0 {
		// Badger's own state is gone until space returns: reads say so
		// instead of crashing.
		if _, err := s.ListListen(0); !errors.Is(err, ErrDiskFull) {
			t.Fatalf("read while Badger is retired: %v", err)
		}
	} else {
		checkListen(t, s, acked)
	}
	for _, p := range ballast[:len(ballast)/2] {
		os.Remove(p)
	}
	// The retired Badger retries its flush every second.
	deadline := time.Now().Add(10 * time.Second)
	for added := 0; added < 2000; {
		r, err := s.AppendListen(rec(text))
		if err != nil {
			if errors.Is(err, ErrDiskFull) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			t.Fatalf("append after inodes were freed: %v", err)
		}
		acked = append(acked, r)
		added++
	}
	checkListen(t, s, acked)
	s = reopen(t, s)
	checkListen(t, s, acked)
}
