package buffer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenAfterCrashLeftEmptyLogs: a kill between Badger creating a log
// file and sizing it leaves it empty; Open must still succeed with every
// record (Badger alone refuses with "Create a new file", badger#2207).
func TestOpenAfterCrashLeftEmptyLogs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string // created empty, fids after the store's own
	}{
		{"mem", []string{"%05d.mem"}},
		{"vlog", []string{"%06d.vlog"}},
		{"mem and vlog", []string{"%05d.mem", "%06d.vlog"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openT(t, "", Options{})
			for i := range 20 {
				if _, err := s.AppendListen(rec(fmt.Sprint("meting ", i))); err != nil {
					t.Fatal(err)
				}
			}
			dir := s.dir
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			var made []string
			for _, f := range tc.files {
				p := filepath.Join(dir, fmt.Sprintf(f, 900))
				if err := os.WriteFile(p, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				made = append(made, p)
			}
			s2, err := Open(dir, Options{Logger: quiet()})
			if err != nil {
				t.Fatalf("Open with empty %v: %v", tc.files, err)
			}
			t.Cleanup(func() { _ = s2.Close() })
			if n := rawListenKeys(t, s2); n != 20 {
				t.Fatalf("%d listen records after reopen, want 20", n)
			}
			for _, p := range made {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s still there (err %v)", filepath.Base(p), err)
				}
			}
		})
	}
}
