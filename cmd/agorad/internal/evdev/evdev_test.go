package evdev

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/testrun"
)

const keyPlayPause = 164

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func ev(ms int, typ, code uint16, value int32) RawEvent {
	return RawEvent{Time: t0.Add(time.Duration(ms) * time.Millisecond), Type: typ, Code: code, Value: value}
}

func key(ms int, value int32) RawEvent { return ev(ms, EvKey, keyPlayPause, value) }
func syn(ms int) RawEvent              { return ev(ms, EvSyn, SynReport, 0) }

func stream(evs ...RawEvent) []byte {
	var b bytes.Buffer
	for _, e := range evs {
		b.Write(Encode(e))
	}
	return b.Bytes()
}

func TestEncodeDecode(t *testing.T) {
	e := RawEvent{Time: time.Unix(1700000000, 123456000), Type: EvKey, Code: 0x2fe, Value: -5}
	b := Encode(e)
	if len(b) != EventSize {
		t.Fatalf("size %d", len(b))
	}
	if got := Decode(b); !got.Time.Equal(e.Time) || got.Type != e.Type || got.Code != e.Code || got.Value != e.Value {
		t.Fatalf("round trip %+v -> %+v", e, got)
	}
}

func TestRead(t *testing.T) {
	down := func(ms int) Event { return Event{Down: true, Time: t0.Add(time.Duration(ms) * time.Millisecond)} }
	up := func(ms int) Event { return Event{Down: false, Time: t0.Add(time.Duration(ms) * time.Millisecond)} }
	tests := []struct {
		name    string
		in      []byte
		want    []Event // events from the stream; a key still down at the end gets one more release
		wantErr string
	}{
		{"press release", stream(key(0, 1), syn(0), key(900, 0), syn(900)), []Event{down(0), up(900)}, "closed"},
		{"autorepeat ignored", stream(key(0, 1), key(250, 2), key(283, 2), key(400, 0)), []Event{down(0), up(400)}, "closed"},
		{"other key ignored", stream(ev(0, EvKey, 30, 1), ev(5, EvKey, 30, 0), key(10, 1), key(20, 0)), []Event{down(10), up(20)}, "closed"},
		{"other type ignored", stream(ev(0, 4 /* EV_MSC */, keyPlayPause, 1), key(10, 1)), []Event{down(10)}, "closed"},
		{"double press once", stream(key(0, 1), key(10, 1), key(20, 0), key(30, 0)), []Event{down(0), up(20)}, "closed"},
		{"release without press", stream(key(0, 0)), nil, "closed"},
		{"dropped while down releases", stream(key(0, 1), ev(5, EvSyn, SynDropped, 0), key(6, 0), key(7, 1), syn(8), key(20, 1)),
			[]Event{down(0), up(8), down(20)}, "closed"},
		{"dropped while up stays up", stream(ev(5, EvSyn, SynDropped, 0), key(6, 1), syn(8)), nil, "closed"},
		{"truncated", append(stream(key(0, 1), key(5, 0)), 1, 2, 3), []Event{down(0), up(5)}, "inside an event"},
		{"empty", nil, nil, "closed (unplugged?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Event
			err := Read(context.Background(), bytes.NewReader(tc.in), "test-dev", Options{Code: keyPlayPause}, func(e Event) { got = append(got, e) })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "test-dev") {
				t.Fatalf("err = %v, want it to name test-dev and contain %q", err, tc.wantErr)
			}
			if n := len(tc.want); n > 0 && tc.want[n-1].Down {
				if len(got) != n+1 || got[n].Down {
					t.Fatalf("key down at end of stream: events %+v, want %+v and a release", got, tc.want)
				}
				got = got[:n]
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("events %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A stream that ends while the key is down releases it.
func TestReadEndWhileDownReleases(t *testing.T) {
	var got []Event
	err := Read(context.Background(), bytes.NewReader(stream(key(0, 1), syn(0))), "dev", Options{Code: keyPlayPause}, func(e Event) { got = append(got, e) })
	if err == nil {
		t.Fatal("no error at end of stream")
	}
	if len(got) != 2 || !got[0].Down || got[1].Down {
		t.Fatalf("events %+v, want down then a release", got)
	}
}

func TestBadCode(t *testing.T) {
	for _, c := range []uint16{0, KeyMax + 1} {
		if err := Read(context.Background(), bytes.NewReader(nil), "d", Options{Code: c}, func(Event) {}); err == nil {
			t.Errorf("code %d accepted", c)
		}
		if err := Watch(context.Background(), "/dev/null", Options{Code: c}, func(Event) {}); err == nil || !strings.Contains(err.Error(), "/dev/null") {
			t.Errorf("Watch code %d: %v", c, err)
		}
	}
}

// A FIFO goes through exactly the code path of a device file: open with
// O_NONBLOCK, the Go poller, Close on cancel.
func TestWatchFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "event0")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	// O_RDWR never blocks on a FIFO and keeps a writer present, so the
	// reader does not see end-of-stream before the first write.
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	events := make(chan Event, 16)
	run := testrun.Start(t, "Watch", func(ctx context.Context) error {
		return Watch(ctx, path, Options{Code: keyPlayPause}, func(e Event) { events <- e })
	})

	next := func() Event {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-run.Done():
			t.Fatalf("Watch ended: %v", run.Err())
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
		return Event{}
	}
	// Written in pieces, including a split event, as a pipe may deliver them.
	b := stream(key(0, 1), syn(0), key(300, 2), key(1200, 0), syn(1200))
	if _, err := w.Write(b[:30]); err != nil {
		t.Fatal(err)
	}
	if e := next(); !e.Down || !e.Time.Equal(t0) {
		t.Fatalf("first event %+v", e)
	}
	if _, err := w.Write(b[30:]); err != nil {
		t.Fatal(err)
	}
	if e := next(); e.Down || !e.Time.Equal(t0.Add(1200*time.Millisecond)) {
		t.Fatalf("second event %+v", e)
	}
	// Cancel while the read is blocked: Watch must return promptly, nil.
	if err := run.Stop(); err != nil {
		t.Fatalf("Watch after cancel: %v", err)
	}
}

func TestWatchDeviceGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "event1")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	got := make(chan Event, 4)
	go func() {
		done <- Watch(context.Background(), path, Options{Code: keyPlayPause}, func(e Event) { got <- e })
	}()
	w.Write(stream(key(0, 1)))
	<-got
	w.Close() // the last writer goes away, like an unplugged device
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not notice the end of the stream")
	}
	if e := <-got; e.Down {
		t.Fatal("unplugged while down: no release")
	}
}

// Run waits for a device that appears late, and survives it going away.
func TestRunHotplug(t *testing.T) {
	path := filepath.Join(t.TempDir(), "event2")
	got := make(chan Event, 8)
	run := testrun.Start(t, "Run", func(ctx context.Context) error {
		return Run(ctx, path, Options{Code: keyPlayPause}, func(e Event) { got <- e })
	})

	plug := func() *os.File {
		t.Helper()
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	expect := func(down bool) {
		t.Helper()
		select {
		case e := <-got:
			if e.Down != down {
				t.Fatalf("event %+v, want down=%v", e, down)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
	}
	time.Sleep(100 * time.Millisecond) // the first attempt finds nothing
	w := plug()
	w.Write(stream(key(0, 1)))
	expect(true)
	w.Close()
	os.Remove(path)
	expect(false) // released when it went away
	w = plug()
	defer w.Close()
	w.Write(stream(key(10, 1), key(20, 0)))
	expect(true)
	expect(false)
	if err := run.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestWatchErrorsNameDevice(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	err := Watch(context.Background(), missing, Options{Code: keyPlayPause}, func(Event) {})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("err = %v", err)
	}
}

func TestKeyStateOnNonDevice(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := keyState(f, keyPlayPause); err == nil {
		t.Fatal("EVIOCGKEY on /dev/null succeeded")
	}
}
