package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is what failed.
type Kind string

// Kinds of storage failure.
const (
	ReadOnly Kind = "read_only" // EROFS: the file system was remounted read-only
	IO       Kind = "io"        // EIO, or a probe the kernel does not answer
	Full     Kind = "full"      // ENOSPC, or the store's own free-space guard
	Gone     Kind = "gone"      // the state directory or its identity file no longer exists
	Replaced Kind = "replaced"  // another directory (another file system) is where the state directory was
	Write    Kind = "write"     // any other error of the probe's write or fsync
)

// Phase of the storage.
type Phase string

// Phases.
const (
	OK         Phase = "ok"
	Failed     Phase = "failed"
	Recovering Phase = "recovering" // the probe passes again; the owner's Recover check runs
)

// State is the storage's health. Kind, Since and Err describe the failure
// of the current (or, when OK, the last) episode.
type State struct {
	Phase   Phase
	Kind    Kind
	Since   time.Time // when the episode began
	Err     string    // the first error of the episode, or the latest of another kind
	Episode uint64    // failures episodes since the monitor was made
}

// Options configure a Monitor.
type Options struct {
	Dir      string // the store directory (its device and inode are taken by New)
	Identity string // the identity file beside it; "" = not watched
	// ProbeDir is where the probe file is written; default: the parent of
	// Dir (the directory that holds the identity file).
	ProbeDir string
	Interval time.Duration // probe period; default 2s
	// WriteEvery is the period of the probe's write and fsync; default
	// 30s. In between, the probe only opens the probe file for writing
	// (what a read-only file system refuses, with no block written): an SD
	// card is not worn by a write every Interval.
	WriteEvery   time.Duration
	ProbeTimeout time.Duration // a probe taking longer is an io failure; default 5s
	// Recover, if set, is run when the probe passes after a failure; OK
	// is reached only when it returns nil (the daemon writes to the store).
	// Its attempts back off from Interval to 30s within one episode.
	Recover func(ctx context.Context) error
	Logger  *slog.Logger
	Now     func() time.Time // default time.Now
}

// ProbeName is the probe file's name in ProbeDir.
const ProbeName = ".agorad-health-probe"

// MinFree is the least free space (for this process's user) the probe
// accepts; below it the file system is full.
const MinFree = 64 << 10

// FileID is a directory's identity: the device and inode of a stat.
type FileID struct{ Dev, Ino uint64 }

// Monitor probes the storage and holds its State.
type Monitor struct {
	o       Options
	id      FileID
	changes chan struct{}

	mu    sync.Mutex
	state State

	probing  chan error // the result of the probe in flight, nil when none
	written  time.Time  // when the last probe that wrote began
	backoff  time.Duration
	nextTry  time.Time
	recovers int // Recover attempts that failed in this episode
}

// StatID returns the device and inode of path.
func StatID(path string) (FileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, fmt.Errorf("stat %s: no device and inode on this platform", path)
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino}, nil
}

// New takes the identity of o.Dir (which must exist) and returns a
// monitor in state OK.
func New(o Options) (*Monitor, error) {
	if o.Dir == "" {
		return nil, errors.New("health monitor: no directory to watch")
	}
	if o.ProbeDir == "" {
		o.ProbeDir = filepath.Dir(filepath.Clean(o.Dir))
	}
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.WriteEvery <= 0 {
		o.WriteEvery = 30 * time.Second
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	id, err := StatID(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("health monitor: identity of the state directory: %w", err)
	}
	o.Logger = o.Logger.With("component", "storage-health", "dir", o.Dir)
	return &Monitor{o: o, id: id, changes: make(chan struct{}, 1), state: State{Phase: OK}}, nil
}

// Changes is signalled (coalesced) when the phase or the kind changes.
func (m *Monitor) Changes() <-chan struct{} { return m.changes }

// State is the current state.
func (m *Monitor) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Dir is the watched directory.
func (m *Monitor) Dir() string { return m.o.Dir }

// Report classifies an error a store write returned. A storage failure
// moves the state to Failed and is returned with true; anything else (a
// cap, a closed store, a nil error) leaves the state alone.
func (m *Monitor) Report(err error) (Kind, bool) {
	k, ok := Classify(err)
	if ok {
		m.Fail(k, err)
	}
	return k, ok
}

// Fail records a failure of kind k.
func (m *Monitor) Fail(k Kind, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failLocked(k, err)
}

func (m *Monitor) failLocked(k Kind, err error) {
	msg := "unknown error"
	if err != nil {
		msg = err.Error()
	}
	prev := m.state
	// OK again needs a quiet Interval after the last failure seen.
	if next := m.o.Now().Add(m.o.Interval); next.After(m.nextTry) {
		m.nextTry = next
	}
	switch prev.Phase {
	case OK:
		m.state = State{Phase: Failed, Kind: k, Since: m.o.Now(), Err: msg, Episode: prev.Episode + 1}
		m.backoff, m.recovers = 0, 0
		m.o.Logger.Error("storage failed", "kind", k, "err", msg)
	default:
		m.state.Phase = Failed
		if k == prev.Kind {
			return
		}
		m.state.Kind, m.state.Err = k, msg
		m.o.Logger.Error("storage failure changed", "kind", k, "was", prev.Kind, "err", msg)
	}
	m.signal()
}

func (m *Monitor) signal() {
	select {
	case m.changes <- struct{}{}:
	default:
	}
}

// Run probes every Interval until ctx ends.
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTicker(m.o.Interval)
	defer t.Stop()
	for {
		m.Step(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step runs one probe (or waits up to ProbeTimeout for the one in flight)
// and, after a failure, the Recover check when the probe passes.
func (m *Monitor) Step(ctx context.Context) {
	if m.probing == nil {
		done := make(chan error, 1)
		m.probing = done
		// Write while failed (recovery is proven by a write) and every
		// WriteEvery.
		write := m.State().Phase != OK || m.o.Now().Sub(m.written) >= m.o.WriteEvery
		if write {
			m.written = m.o.Now()
		}
		go func() { done <- probe(m.o.Dir, m.o.Identity, m.o.ProbeDir, m.id, write) }()
	}
	var err error
	select {
	case err = <-m.probing:
		m.probing = nil
	case <-time.After(m.o.ProbeTimeout):
		m.Fail(IO, fmt.Errorf("storage probe of %s did not finish within %s: the device does not answer", m.o.Dir, m.o.ProbeTimeout))
		return
	case <-ctx.Done():
		return
	}
	if err != nil {
		k, ok := Classify(err)
		if !ok {
			k = Write
		}
		m.Fail(k, err)
		return
	}
	m.mu.Lock()
	if m.state.Phase == OK || m.o.Now().Before(m.nextTry) {
		m.mu.Unlock()
		return
	}
	m.state.Phase = Recovering
	m.mu.Unlock()
	if m.o.Recover != nil {
		if err := m.o.Recover(ctx); err != nil {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.backoff = min(max(2*m.backoff, m.o.Interval), 30*time.Second)
			m.nextTry = m.o.Now().Add(m.backoff)
			m.recovers++
			k, ok := Classify(err)
			if !ok {
				k = m.state.Kind
			}
			m.failLocked(k, err)
			m.o.Logger.Warn("storage writable again but the store is not yet", "err", err, "retry_in", m.backoff)
			return
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.o.Logger.Info("storage recovered", "kind", m.state.Kind, "failed_for", m.o.Now().Sub(m.state.Since).Round(time.Millisecond))
	m.state.Phase = OK
	m.signal()
}

// Probe checks dir once: it exists and is still the directory want (its
// device and inode; a zero want is not compared), identity (if not "")
// exists, the file system has MinFree bytes free and a small write and
// fsync in probeDir succeed.
func Probe(dir, identity, probeDir string, want FileID) error {
	return probe(dir, identity, probeDir, want, true)
}

// probe is Probe; without write, the probe file is only opened for
// writing.
func probe(dir, identity, probeDir string, want FileID, write bool) error {
	id, err := StatID(dir)
	if err != nil {
		return fmt.Errorf("stat state directory: %w", err)
	}
	if want != (FileID{}) && id != want {
		return &ReplacedError{Dir: dir, Was: want, Now: id}
	}
	if identity != "" {
		if _, err := os.Stat(identity); err != nil {
			return fmt.Errorf("stat identity file: %w", err)
		}
	}
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(probeDir, &sfs); err != nil {
		return fmt.Errorf("statfs %s: %w", probeDir, err)
	}
	if free := int64(sfs.Bavail) * int64(sfs.Bsize); free < MinFree {
		return fmt.Errorf("%s: %d bytes free: %w", probeDir, free, syscall.ENOSPC)
	}
	// Rewritten in place, never truncated: the probe needs no new block,
	// so a nearly full file system fails it by statfs, not by chance.
	path := filepath.Join(probeDir, ProbeName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open probe file: %w", err)
	}
	var werr error
	if write {
		_, werr = f.Write([]byte("agorad storage probe\n"))
		if werr == nil {
			werr = f.Sync()
		}
	}
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write probe file %s: %w", path, werr)
	}
	if cerr != nil {
		return fmt.Errorf("close probe file %s: %w", path, cerr)
	}
	return nil
}

// ReplacedError: the path names another directory than at the start.
type ReplacedError struct {
	Dir      string
	Was, Now FileID
}

func (e *ReplacedError) Error() string {
	return fmt.Sprintf("%s is another directory now (device %d inode %d, was device %d inode %d)",
		e.Dir, e.Now.Dev, e.Now.Ino, e.Was.Dev, e.Was.Ino)
}

// Classify names the storage failure in err. Badger flattens some errors
// to text, so the kernel's messages are matched too.
func Classify(err error) (Kind, bool) {
	if err == nil {
		return "", false
	}
	var re *ReplacedError
	switch {
	case errors.As(err, &re):
		return Replaced, true
	case errors.Is(err, syscall.EROFS):
		return ReadOnly, true
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.ENODEV):
		return IO, true
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return Full, true
	case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ESTALE):
		return Gone, true
	}
	msg := err.Error()
	for _, t := range []struct {
		text string
		kind Kind
	}{
		{"read-only file system", ReadOnly},
		{"input/output error", IO},
		{"no space left on device", Full},
		{"no such file or directory", Gone},
		{"stale file handle", Gone},
	} {
		if strings.Contains(msg, t.text) {
			return t.kind, true
		}
	}
	return "", false
}

// errnoName is the kernel's name of a kind's usual error, for messages.
var errnoName = map[Kind]string{ReadOnly: "EROFS", IO: "EIO", Full: "ENOSPC", Gone: "ENOENT", Replaced: "another device/inode", Write: "write error"}

// Describe says what failed and how to fix it, for agoractl status, agorad
// doctor and the log. dir is the state directory as the operator knows it.
func (s State) Describe(dir string) (what, fix string) {
	if s.Phase == OK {
		return "state directory " + dir + " is writable", ""
	}
	since := s.Since.Local().Format("15:04:05")
	tag := fmt.Sprintf("(%s since %s)", errnoName[s.Kind], since)
	switch s.Kind {
	case ReadOnly:
		what = fmt.Sprintf("state directory %s is read-only %s: the filesystem was remounted read-only after an error", dir, tag)
		fix = "check the card or disk (dmesg), then stop agorad, unmount it, run e2fsck, mount it read-write and start agorad"
	case IO:
		what = fmt.Sprintf("state directory %s has I/O errors %s: the storage device is failing or gone", dir, tag)
		fix = "check the card or disk (dmesg); replace it, then run `agorad store check`"
	case Full:
		what = fmt.Sprintf("state directory %s is full %s", dir, tag)
		fix = "free space on its filesystem: writes resume by themselves"
	case Gone:
		what = fmt.Sprintf("state directory %s or its identity file is gone %s: the card was removed or the directory deleted", dir, tag)
		fix = "put the card back (or restore the directory), then restart agorad"
	case Replaced:
		what = fmt.Sprintf("a different filesystem is mounted at state directory %s %s", dir, tag)
		fix = "mount the state directory's own filesystem there again, then restart agorad"
	default:
		what = fmt.Sprintf("state directory %s cannot be written %s", dir, tag)
		fix = "check the directory's permissions and the disk (dmesg)"
	}
	if s.Phase == Recovering {
		what += "; writable again, the store is being checked"
	}
	return what + ": " + s.Err, fix
}
