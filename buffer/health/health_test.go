package health_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/buffer/fsfault"
	"github.com/agora/agorad/buffer/health"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kind health.Kind
		ok   bool
	}{
		{"nil", nil, "", false},
		{"erofs wrapped", fmt.Errorf("append to listen buffer: %w", &fs.PathError{Op: "write", Path: "x", Err: syscall.EROFS}), health.ReadOnly, true},
		{"erofs as text (Badger)", errors.New("while writing to memtable: sync 000001.mem: read-only file system"), health.ReadOnly, true},
		{"eio", fmt.Errorf("sync: %w", syscall.EIO), health.IO, true},
		{"eio text", errors.New("read 000002.vlog: input/output error"), health.IO, true},
		{"enospc", fmt.Errorf("write: %w", syscall.ENOSPC), health.Full, true},
		{"edquot", syscall.EDQUOT, health.Full, true},
		{"enoent", fmt.Errorf("open: %w", os.ErrNotExist), health.Gone, true},
		{"enoent text", errors.New("error flushing memtable to disk: open /x/000003.sst: no such file or directory"), health.Gone, true},
		{"replaced", fmt.Errorf("probe: %w", &health.ReplacedError{Dir: "/d"}), health.Replaced, true},
		{"a cap is not a failure", errors.New("append to listen buffer: storage cap reached"), "", false},
		{"a cancel is not a failure", context.Canceled, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, ok := health.Classify(tc.err)
			if k != tc.kind || ok != tc.ok {
				t.Errorf("Classify(%v) = %q, %v; want %q, %v", tc.err, k, ok, tc.kind, tc.ok)
			}
		})
	}
}

// newDirs makes state/store and state/store.identity as the daemon has them.
func newDirs(t *testing.T, root string) (store, ident string) {
	t.Helper()
	store = filepath.Join(root, "state", "store")
	if err := os.MkdirAll(store, 0o700); err != nil {
		t.Fatal(err)
	}
	ident = store + ".identity"
	if err := os.WriteFile(ident, []byte("id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return store, ident
}

func drain(ch <-chan struct{}) int {
	n := 0
	for {
		select {
		case <-ch:
			n++
		default:
			return n
		}
	}
}

// An episode starts once, keeps its first Since across more failures and
// a failed Recover, and ends only when the probe passes and Recover does.
func TestMonitorEpisode(t *testing.T) {
	store, ident := newDirs(t, t.TempDir())
	now := time.Date(2026, 1, 2, 10, 2, 11, 0, time.UTC)
	var recoverErr error
	recovers := 0
	m, err := health.New(health.Options{Dir: store, Identity: ident, Interval: time.Millisecond,
		Now:     func() time.Time { return now },
		Recover: func(context.Context) error { recovers++; return recoverErr }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m.Step(ctx)
	if st := m.State(); st.Phase != health.OK || st.Episode != 0 || recovers != 0 {
		t.Fatalf("healthy start: %+v, %d recovers", st, recovers)
	}
	if _, ok := m.Report(errors.New("append: storage cap reached")); ok || m.State().Phase != health.OK {
		t.Fatalf("a cap changed the state: %+v", m.State())
	}
	start := now
	m.Report(fmt.Errorf("append to listen buffer: %w", syscall.EROFS))
	now = now.Add(time.Second)
	m.Report(fmt.Errorf("flush listen buffer: %w", syscall.EROFS))
	st := m.State()
	if st.Phase != health.Failed || st.Kind != health.ReadOnly || st.Episode != 1 || !st.Since.Equal(start) {
		t.Fatalf("after two EROFS: %+v", st)
	}
	if n := drain(m.Changes()); n != 1 {
		t.Fatalf("%d change signals, want 1", n)
	}
	what, fix := st.Describe("/var/lib/agorad")
	if !strings.Contains(what, "read-only (EROFS since") || !strings.Contains(what, "/var/lib/agorad") || !strings.Contains(fix, "e2fsck") {
		t.Errorf("Describe: %q / %q", what, fix)
	}
	// The probe passes (the directory is fine) but the store still fails.
	recoverErr = fmt.Errorf("store write: %w", syscall.ENOSPC)
	m.Step(ctx) // within Interval of the last failure: no Recover yet
	if recovers != 0 {
		t.Fatalf("Recover within Interval of a failure: %d", recovers)
	}
	now = now.Add(time.Second)
	m.Step(ctx)
	if st := m.State(); st.Phase != health.Failed || st.Kind != health.Full || st.Episode != 1 || recovers != 1 {
		t.Fatalf("after a failed Recover: %+v, %d recovers", st, recovers)
	}
	m.Step(ctx) // backing off: no second Recover yet
	if recovers != 1 {
		t.Fatalf("Recover retried without backoff: %d", recovers)
	}
	recoverErr = nil
	now = now.Add(time.Minute)
	m.Step(ctx)
	if st := m.State(); st.Phase != health.OK || st.Episode != 1 || recovers != 2 {
		t.Fatalf("after recovery: %+v, %d recovers", st, recovers)
	}
	if n := drain(m.Changes()); n != 1 {
		t.Fatalf("%d change signals, want 1 (coalesced)", n)
	}
	m.Report(fmt.Errorf("sync: %w", syscall.EIO))
	if st := m.State(); st.Episode != 2 || st.Kind != health.IO || !st.Since.Equal(now) {
		t.Fatalf("second episode: %+v", st)
	}
}

// The probe on a real ext4 file system, for each fault the kernel can make
// here: it is detected by the next probe, with its kind, and a fault that
// can be undone in place is recovered by the probe after it.
func TestProbeExt4(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(fs *fsfault.Ext4, store, ident string) (undo func() error)
		kind  health.Kind
	}{
		{"ext4 error remounts read-only", func(fs *fsfault.Ext4, _, _ string) func() error {
			fs.TriggerError(t)
			return fs.Repair
		}, health.ReadOnly},
		{"filesystem full", func(fs *fsfault.Ext4, _, _ string) func() error {
			p := fs.Fill(t)
			return func() error { return os.Remove(p) }
		}, health.Full},
		{"directory removed", func(_ *fsfault.Ext4, store, _ string) func() error {
			if err := os.RemoveAll(store); err != nil {
				t.Fatal(err)
			}
			return nil
		}, health.Gone},
		{"identity file removed", func(_ *fsfault.Ext4, _, ident string) func() error {
			b, err := os.ReadFile(ident)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(ident); err != nil {
				t.Fatal(err)
			}
			return func() error { return os.WriteFile(ident, b, 0o600) }
		}, health.Gone},
		{"another filesystem mounted in its place", func(fs *fsfault.Ext4, store, _ string) func() error {
			// As when the card's mount went away and the directory under
			// it was recreated: same path, another device and inode.
			if err := os.Rename(store, store+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(store, 0o700); err != nil {
				t.Fatal(err)
			}
			return nil
		}, health.Replaced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := fsfault.MountExt4(t, 32)
			store, ident := newDirs(t, fs.Dir)
			m, err := health.New(health.Options{Dir: store, Identity: ident, Interval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			m.Step(ctx)
			if st := m.State(); st.Phase != health.OK {
				t.Fatalf("before the fault: %+v", st)
			}
			undo := tc.fault(fs, store, ident)
			began := time.Now()
			m.Step(ctx)
			st := m.State()
			if st.Phase != health.Failed || st.Kind != tc.kind || st.Episode != 1 {
				t.Fatalf("after the fault: %+v, want failed %s", st, tc.kind)
			}
			t.Logf("detected %s in %s: %s", st.Kind, time.Since(began).Round(time.Millisecond), st.Err)
			if undo == nil {
				m.Step(ctx)
				if st := m.State(); st.Phase != health.Failed {
					t.Fatalf("a fault that cannot be undone in place recovered: %+v", st)
				}
				return
			}
			if err := undo(); err != nil {
				t.Fatalf("undo the fault: %v", err)
			}
			time.Sleep(5 * time.Millisecond) // OK again needs Interval without failure
			m.Step(ctx)
			if st := m.State(); st.Phase != health.OK || st.Episode != 1 {
				t.Fatalf("after the fault was undone: %+v", st)
			}
		})
	}
}

// A probe that the kernel does not answer is an io failure after
// ProbeTimeout, not a monitor stuck with it. A FIFO in place of the probe
// file blocks the probe's open as a dead device would.
func TestProbeTimeout(t *testing.T) {
	store, ident := newDirs(t, t.TempDir())
	if err := syscall.Mkfifo(filepath.Join(filepath.Dir(store), health.ProbeName), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	m, err := health.New(health.Options{Dir: store, Identity: ident, ProbeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	m.Step(context.Background())
	if st := m.State(); st.Phase != health.Failed || st.Kind != health.IO {
		t.Fatalf("stuck probe: %+v", st)
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("Step took %s with a 50ms probe timeout", d)
	}
	// Unblock the stuck open so the goroutine ends with the test.
	if f, err := os.OpenFile(filepath.Join(filepath.Dir(store), health.ProbeName), os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		time.Sleep(10 * time.Millisecond)
		f.Close()
	}
}

// Between writes the probe only opens the probe file for writing: the
// file is written once per WriteEvery, and a read-only file system is
// still seen at the next probe.
func TestProbeWritesEveryWriteEvery(t *testing.T) {
	fs := fsfault.MountExt4(t, 32)
	store, ident := newDirs(t, fs.Dir)
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	m, err := health.New(health.Options{Dir: store, Identity: ident, Interval: time.Millisecond, WriteEvery: time.Minute,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(fs.Dir, "state", health.ProbeName)
	ctx := context.Background()
	mtimes := func() time.Time {
		fi, err := os.Stat(probe)
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	m.Step(ctx)
	first := mtimes()
	for range 3 {
		time.Sleep(20 * time.Millisecond)
		now = now.Add(10 * time.Second)
		m.Step(ctx)
	}
	if got := mtimes(); !got.Equal(first) {
		t.Errorf("the probe file was written within WriteEvery (mtime %v, first %v)", got, first)
	}
	now = now.Add(time.Minute)
	time.Sleep(20 * time.Millisecond)
	m.Step(ctx)
	if got := mtimes(); got.Equal(first) {
		t.Errorf("the probe file was not written after WriteEvery")
	}
	now = now.Add(time.Second) // within WriteEvery: an open-only probe
	fs.TriggerError(t)
	m.Step(ctx)
	if st := m.State(); st.Phase != health.Failed || st.Kind != health.ReadOnly {
		t.Fatalf("read-only seen by an open-only probe: %+v", st)
	}
}
