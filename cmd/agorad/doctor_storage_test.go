package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/buffer/fsfault"
)

// agorad doctor names a failed state directory and the fix, on a real
// ext4 broken by the kernel.
func TestDoctorStorage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fault   func(fs *fsfault.Ext4)
		status  string
		detail  string // the detail contains it
		fix     string // the fix contains it
		doctorE bool   // also run the whole doctor: storage is its only failed check
	}{
		{"healthy", func(*fsfault.Ext4) {}, "ok", "is writable", "", false},
		{"read-only after an ext4 error", func(fs *fsfault.Ext4) { fs.TriggerError(t) }, "fail",
			"is read-only (EROFS since 10:02:11)", "e2fsck", true},
		{"full", func(fs *fsfault.Ext4) { fs.Fill(t) }, "fail", "is full (ENOSPC since 10:02:11)", "free space", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := fsfault.MountExt4(t, 128)
			cfg := securedDaemon(t, "dev-doctor-storage")
			cfg.Replies.Enabled = false
			cfg.StateDir = filepath.Join(fs.Dir, "state")
			s, err := buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.AppendListen(buffer.Record{Text: "a note"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tc.fault(fs)
			now := time.Date(2026, 3, 1, 10, 2, 11, 0, time.Local)
			got := checkStorage(cfg, now)
			if got.Status != tc.status || !strings.Contains(got.Detail, tc.detail) || !strings.Contains(got.Fix, tc.fix) {
				t.Fatalf("checkStorage: %+v; want %s, detail with %q, fix with %q", got, tc.status, tc.detail, tc.fix)
			}
			if tc.doctorE {
				env := realDoctorEnv()
				env.now = func() time.Time { return now }
				runDoctorCase(t, cfg, env, "storage")
			}
		})
	}
}
