package replies

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/tts"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// fakeEngine "speaks" each text as chunks 50 ms chunks (a test double: the
// real engine is tested in audio/tts and end to end in the daemon).
type fakeEngine struct{ chunks int }

func (e fakeEngine) Name() string { return "fake" }
func (e fakeEngine) Close() error { return nil }
func (e fakeEngine) Synthesize(ctx context.Context, text, lang string) (tts.Stream, error) {
	return &fakeStream{left: e.chunks, text: lang + ":" + text}, nil
}

type fakeStream struct {
	left int
	text string
}

func (s *fakeStream) Read() ([]float32, error) {
	if s.left == 0 {
		return nil, io.EOF
	}
	s.left--
	return make([]float32, 800), nil
}
func (s *fakeStream) Close() error { return nil }

// fakeSpeaker plays 50 ms chunks in 5 ms and records what it played.
type fakeSpeaker struct {
	mu     sync.Mutex
	played []string // text, with "!" appended when cut short
}

func (f *fakeSpeaker) PlayStream(ctx context.Context, src audio.SampleReader, started func(time.Time)) (<-chan error, error) {
	done := make(chan error, 1)
	go func() {
		text := src.(*fakeStream).text
		for first := true; ; first = false {
			_, err := src.Read()
			if errors.Is(err, io.EOF) {
				f.record(text)
				done <- nil
				return
			}
			if first {
				started(time.Now())
			}
			select {
			case <-ctx.Done():
				f.record(text + "!")
				done <- ctx.Err()
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return done, nil
}

func (f *fakeSpeaker) record(s string) {
	f.mu.Lock()
	f.played = append(f.played, s)
	f.mu.Unlock()
}

func (f *fakeSpeaker) get() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.played...)
}

type rig struct {
	t      *testing.T
	store  *buffer.Store
	spk    *fakeSpeaker
	p      *Player
	mode   atomic.Value
	cancel context.CancelFunc
	done   chan struct{}
	earcon atomic.Int32
}

func newRig(t *testing.T, dir string, engine tts.Engine, chunks int) *rig {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := buffer.Open(dir, buffer.Options{Sync: buffer.SyncNone, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, store: st, spk: &fakeSpeaker{}}
	r.mode.Store("feedback")
	if engine == nil && chunks > 0 {
		engine = fakeEngine{chunks: chunks}
	}
	r.p, err = New(Options{Store: st, Engine: engine, EngineErr: errors.New("no voice"),
		Speaker: func() (Speaker, error) { return r.spk, nil },
		Earcon:  func(string) { r.earcon.Add(1) },
		Mode:    func() string { return r.mode.Load().(string) },
		LangOf: func(id string) string {
			if id == "u-nl" {
				return "nl"
			}
			return ""
		},
		DefaultLang: "en", MaxAge: time.Hour, MaxChars: 100, HalfDuplex: true, Tail: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() { defer close(r.done); _ = r.p.Run(ctx) }()
	t.Cleanup(r.close)
	return r
}

func (r *rig) close() {
	r.cancel()
	<-r.done
	r.store.Close()
}

func (r *rig) receive(rep protocol.Reply) {
	r.t.Helper()
	if err := r.p.Receive(context.Background(), rep); err != nil {
		r.t.Fatal(err)
	}
}

// acks returns reply id -> outcomes acknowledged, in order.
func (r *rig) acks() map[string][]string {
	es, err := r.store.Pending(0)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, e := range es {
		var a protocol.AckBody
		if e.Kind == buffer.KindAck && json.Unmarshal(e.Body, &a) == nil && a.CommandType == protocol.CmdReply {
			out[a.CommandID] = append(out[a.CommandID], a.Outcome)
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func eq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSpokenInArrivalOrderOnce(t *testing.T) {
	r := newRig(t, "", nil, 4)
	r.receive(protocol.Reply{ID: "a", Text: "one", InReplyTo: "u-nl"})
	r.receive(protocol.Reply{ID: "b", Text: "two\x07 [[x]]", Spoken: ""})
	r.receive(protocol.Reply{ID: "a", Text: "one again"}) // redelivery
	r.receive(protocol.Reply{ID: "c", Text: "three", Spoken: "drie", Lang: "nl"})
	want := []string{"nl:one", "en:two [ [x] ]", "nl:drie"}
	waitFor(t, "three replies spoken", func() bool { return len(r.spk.get()) >= 3 })
	time.Sleep(50 * time.Millisecond)
	if got := r.spk.get(); !eq(got, want) {
		t.Errorf("played %q, want %q", got, want)
	}
	waitFor(t, "the last reply acked", func() bool { return len(r.acks()["c"]) >= 1 }) // after its audio ends
	acks := r.acks()
	for _, id := range []string{"a", "b", "c"} {
		if !eq(acks[id], []string{"spoken"}) {
			t.Errorf("acks of %s: %v", id, acks[id])
		}
	}
}

func TestHeldInListenModeAndExpired(t *testing.T) {
	r := newRig(t, "", nil, 2)
	r.mode.Store("listen")
	r.receive(protocol.Reply{ID: "h1", Text: "held one"})
	r.receive(protocol.Reply{ID: "u", Text: "urgent", Urgent: true})
	r.receive(protocol.Reply{ID: "x", Text: "expires soon", ExpiresAt: time.Now().Add(150 * time.Millisecond)})
	r.receive(protocol.Reply{ID: "old", Text: "already expired", ExpiresAt: time.Now().Add(-time.Second)})
	waitFor(t, "urgent spoken", func() bool { return len(r.spk.get()) == 1 })
	waitFor(t, "x expired", func() bool { return len(r.acks()["x"]) == 2 })
	if got := r.spk.get(); !eq(got, []string{"en:urgent"}) {
		t.Errorf("played in listen mode: %q", got)
	}
	if st := r.p.Status(); st.Waiting != 1 {
		t.Errorf("waiting %d, want 1", st.Waiting)
	}
	if r.earcon.Load() != 2 {
		t.Errorf("%d reply-waiting earcons, want 2 (h1, x)", r.earcon.Load())
	}
	r.mode.Store("feedback")
	r.p.Wake()
	// The "spoken" ack follows the end of the audio, not its start: wait
	// for it (checking right after the speaker got the text raced it).
	waitFor(t, "held spoken", func() bool { return len(r.spk.get()) == 2 && len(r.acks()["h1"]) == 2 })
	acks := r.acks()
	for id, want := range map[string][]string{"h1": {"held", "spoken"}, "u": {"spoken"}, "x": {"held", "expired"}, "old": {"expired"}} {
		if !eq(acks[id], want) {
			t.Errorf("acks of %s: %v, want %v", id, acks[id], want)
		}
	}
	if _, err := r.p.Play("old"); err == nil {
		t.Error("replay of an expired reply accepted")
	}
	list, _ := r.p.List(0)
	if len(list) != 4 {
		t.Errorf("listed %d replies, want 4 (expired ones kept)", len(list))
	}
}

func TestPlayOnRequestInListenMode(t *testing.T) {
	r := newRig(t, "", nil, 2)
	r.mode.Store("listen")
	r.receive(protocol.Reply{ID: "h1", Text: "first"})
	r.receive(protocol.Reply{ID: "h2", Text: "second"})
	waitFor(t, "held", func() bool { return len(r.acks()["h2"]) == 1 })
	if _, err := r.p.Play("h2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "h2 spoken", func() bool { return len(r.spk.get()) == 1 })
	if _, err := r.p.Play(""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "h1 spoken", func() bool { return len(r.spk.get()) == 2 })
	if _, err := r.p.Play("h2"); err != nil { // replay
		t.Fatal(err)
	}
	waitFor(t, "h2 replayed", func() bool { return len(r.spk.get()) == 3 })
	if got := r.spk.get(); !eq(got, []string{"en:second", "en:first", "en:second"}) {
		t.Errorf("played %q", got)
	}
}

func TestBargeInAndHalfDuplex(t *testing.T) {
	r := newRig(t, "", nil, 200) // 10 s of speech
	if r.p.Muted() {
		t.Error("muted before speaking")
	}
	r.receive(protocol.Reply{ID: "long", Text: "long"})
	r.receive(protocol.Reply{ID: "next", Text: "next"})
	waitFor(t, "speaking", func() bool { return r.p.Status().Speaking == "long" })
	if !r.p.Muted() {
		t.Error("not muted while speaking")
	}
	at := time.Now()
	r.p.SetPTT(true)
	waitFor(t, "interrupted", func() bool { return len(r.spk.get()) == 1 })
	if d := time.Since(at); d > 100*time.Millisecond {
		t.Errorf("barge-in took %v", d)
	}
	time.Sleep(100 * time.Millisecond)
	if len(r.spk.get()) != 1 || r.p.Status().Speaking != "" {
		t.Errorf("something started while push-to-talk is held: %q", r.spk.get())
	}
	if r.p.Muted() {
		t.Error("still muted after the tail")
	}
	r.p.SetPTT(false)
	waitFor(t, "next speaking", func() bool { return r.p.Status().Speaking == "next" })
	if id := r.p.Stop(); id != "next" {
		t.Errorf("Stop interrupted %q", id)
	}
	waitFor(t, "stopped", func() bool { return len(r.acks()["next"]) == 1 })
	if got := r.spk.get(); !eq(got, []string{"en:long!", "en:next!"}) {
		t.Errorf("played %q", got)
	}
	if acks := r.acks(); !eq(acks["long"], []string{"interrupted"}) || !eq(acks["next"], []string{"interrupted"}) {
		t.Errorf("acks %v", acks)
	}
}

func TestCrashWhileSpeakingAndNoEngine(t *testing.T) {
	dir := t.TempDir()
	st, err := buffer.Open(dir, buffer.Options{Sync: buffer.SyncNone, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// As a crash leaves it: one reply marked speaking, one stored.
	st.AddReply(buffer.Reply{ID: "s", Text: "was speaking", Lang: "en", ExpiresAt: time.Now().Add(time.Hour)})
	st.UpdateReply("s", buffer.ReplySpeaking, "", nil, false)
	st.AddReply(buffer.Reply{ID: "q", Text: "queued", Lang: "en", ExpiresAt: time.Now().Add(time.Hour)})
	st.Close()

	r := newRig(t, dir, nil, 0)                        // no engine: earcons only
	r.receive(protocol.Reply{ID: "q", Text: "queued"}) // redelivered after the crash
	waitFor(t, "outcomes", func() bool { a := r.acks(); return len(a["s"]) == 1 && len(a["q"]) == 1 })
	acks := r.acks()
	if !eq(acks["s"], []string{"interrupted"}) || !eq(acks["q"], []string{"failed"}) {
		t.Errorf("acks %v", acks)
	}
	if st := r.p.Status(); st.EngineError != "no voice" {
		t.Errorf("status %+v", st)
	}
	if len(r.spk.get()) != 0 {
		t.Errorf("played %q without an engine", r.spk.get())
	}
}
