// Package controltest has a scriptable control.Handler and a helper that
// serves it on a real unix socket, for tests of the control protocol and of
// agoractl.
package controltest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
)

// Fake is an in-memory daemon: a mode, a listen buffer and an outbox. Set Err
// to make every operation fail with it.
type Fake struct {
	mu      sync.Mutex
	Mode    string
	Records []control.Record
	Entries []control.OutboxEntry
	Online  bool
	PTTDown bool
	Calls   []string // "op arg" per call, in order
	Err     error
	seq     uint64
}

// NewFake returns a Fake in listen mode with n buffered records.
func NewFake(n int) *Fake {
	f := &Fake{Mode: control.ModeListen, Online: true}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i < n; i++ {
		f.seq++
		f.Records = append(f.Records, control.Record{
			ID: fmt.Sprintf("rec-%d", i+1), Seq: f.seq, Text: fmt.Sprintf("meting %d", i+1), Lang: "nl",
			StartedAt: base.Add(time.Duration(i) * time.Minute), DurationMS: 1500, Source: "mic",
			CreatedAt: base.Add(time.Duration(i)*time.Minute + 2*time.Second),
		})
	}
	return f
}

func (f *Fake) call(s string) error {
	f.Calls = append(f.Calls, s)
	return f.Err
}

// CallLog returns a copy of Calls.
func (f *Fake) CallLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.Calls...)
}

func (f *Fake) Status(ctx context.Context) (control.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := control.Status{DeviceID: "dev-1", Mode: f.Mode, Buffered: len(f.Records), Outbox: len(f.Entries),
		Online: f.Online, Model: "base", Version: "test", UptimeSeconds: 3723, Refused: 2}
	if n := len(f.Records); n > 0 {
		s.LastUtterance = &control.LastUtterance{Text: f.Records[n-1].Text, At: f.Records[n-1].StartedAt}
	}
	return s, f.call("status")
}

// flushLocked moves the listen buffer into one outbox entry.
func (f *Fake) flushLocked() control.FlushResult {
	n := len(f.Records)
	if n == 0 {
		return control.FlushResult{}
	}
	f.seq++
	e := control.OutboxEntry{ID: fmt.Sprintf("batch-%d", f.seq), Seq: f.seq, Lane: "data", Kind: "batch",
		CreatedAt: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC), Bytes: 100 * n}
	f.Entries = append(f.Entries, e)
	f.Records = nil
	return control.FlushResult{Items: n, EntryID: e.ID, Seq: e.Seq}
}

func (f *Fake) SetMode(ctx context.Context, mode string) (control.ModeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("mode " + mode); err != nil {
		return control.ModeResult{}, err
	}
	r := control.ModeResult{Previous: f.Mode, Mode: mode}
	if mode == control.ModeFeedback && f.Mode != mode {
		r.Flushed = f.flushLocked().Items
	}
	f.Mode = mode
	return r, nil
}

func (f *Fake) Say(ctx context.Context, text string) (control.SayResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("say " + text); err != nil {
		return control.SayResult{}, err
	}
	f.seq++
	id := fmt.Sprintf("say-%d", f.seq)
	if f.Mode == control.ModeListen {
		f.Records = append(f.Records, control.Record{ID: id, Seq: f.seq, Text: text, Source: "typed"})
		return control.SayResult{Mode: f.Mode, Stored: "listen_buffer", ID: id}, nil
	}
	f.Entries = append(f.Entries, control.OutboxEntry{ID: id, Seq: f.seq, Lane: "data", Kind: "utterance", Bytes: len(text)})
	return control.SayResult{Mode: f.Mode, Stored: "outbox", ID: id}, nil
}

func (f *Fake) BufferList(ctx context.Context, limit int) (control.BufferList, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs := f.Records
	if limit > 0 && limit < len(recs) {
		recs = recs[:limit]
	}
	return control.BufferList{Total: len(f.Records), Records: append([]control.Record{}, recs...)},
		f.call(fmt.Sprintf("buffer.list %d", limit))
}

func (f *Fake) BufferExport(ctx context.Context, emit func(control.Record) error) error {
	f.mu.Lock()
	recs := append([]control.Record(nil), f.Records...)
	err := f.call("buffer.export")
	f.mu.Unlock()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := emit(r); err != nil {
			return err
		}
	}
	return nil
}

func (f *Fake) BufferClear(ctx context.Context) (control.ClearResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("buffer.clear"); err != nil {
		return control.ClearResult{}, err
	}
	n := len(f.Records)
	f.Records = nil
	return control.ClearResult{Deleted: n}, nil
}

func (f *Fake) Outbox(ctx context.Context, limit int) (control.Outbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	es := f.Entries
	if limit > 0 && limit < len(es) {
		es = es[:limit]
	}
	return control.Outbox{Count: len(f.Entries), Online: f.Online, Entries: append([]control.OutboxEntry{}, es...)},
		f.call(fmt.Sprintf("outbox %d", limit))
}

func (f *Fake) Flush(ctx context.Context) (control.FlushResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("flush"); err != nil {
		return control.FlushResult{}, err
	}
	return f.flushLocked(), nil
}

func (f *Fake) PTT(ctx context.Context, down bool) (control.PTTResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(fmt.Sprintf("ptt %v", down)); err != nil {
		return control.PTTResult{}, err
	}
	f.PTTDown = down
	return control.PTTResult{Down: down}, nil
}

// Serve listens on a fresh socket in a temporary directory and serves h until
// the test ends; it returns the socket path.
func Serve(t testing.TB, h control.Handler) string {
	t.Helper()
	dir, err := shortTempDir(t)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "agorad.sock")
	ln, err := control.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- control.Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("control.Serve: %v", err)
		}
	})
	return path
}

// shortTempDir keeps socket paths under the 108-byte sun_path limit, which
// t.TempDir() (it includes the test name) can exceed.
func shortTempDir(t testing.TB) (string, error) {
	dir, err := os.MkdirTemp("", "agctl")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}
