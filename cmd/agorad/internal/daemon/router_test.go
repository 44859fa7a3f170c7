package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/wake"
)

// recordingSounder remembers the earcons asked for.
type recordingSounder struct {
	mu    sync.Mutex
	names []string
}

func (s *recordingSounder) Play(name string) {
	s.mu.Lock()
	s.names = append(s.names, name)
	s.mu.Unlock()
}

func (s *recordingSounder) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.names
	s.names = nil
	return n
}

func openStore(t *testing.T, dir string) *buffer.Store {
	t.Helper()
	s, err := buffer.Open(dir, buffer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestRouter(t *testing.T, st *buffer.Store, snd Sounder, online bool) *Router {
	t.Helper()
	rules, err := wake.New(wake.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(RouterOptions{Store: st, Rules: rules, Sounds: snd, Online: func() bool { return online }, DefaultMode: buffer.ModeListen})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pendingTexts renders the data lane as the backend will see it:
// "batch[a|b]" for a batch, the text for an utterance.
func pendingTexts(t *testing.T, st *buffer.Store) []string {
	t.Helper()
	es, err := st.Pending(0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		switch e.Kind {
		case buffer.KindBatch:
			var b struct {
				Items []buffer.Record `json:"items"`
			}
			if err := json.Unmarshal(e.Body, &b); err != nil {
				t.Fatal(err)
			}
			s := "batch["
			for i, it := range b.Items {
				if i > 0 {
					s += "|"
				}
				s += it.Text
			}
			out = append(out, s+"]")
		case buffer.KindUtterance:
			var r buffer.Record
			if err := json.Unmarshal(e.Body, &r); err != nil {
				t.Fatal(err)
			}
			out = append(out, r.Text)
		}
	}
	return out
}

func listenTexts(t *testing.T, st *buffer.Store) []string {
	t.Helper()
	recs, err := st.ListListen(0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Text)
	}
	return out
}

// TestRouterInspectionRound runs a spoken round on the real Badger store
// step by step: what is buffered, what is queued, the mode and the sounds.
func TestRouterInspectionRound(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	snd := &recordingSounder{}
	r := newTestRouter(t, st, snd, false)

	steps := []struct {
		say        string
		wantMode   buffer.Mode
		wantListen []string
		wantQueue  []string
		wantSounds []string
	}{
		{"Scheur in balk vier, drie millimeter.", buffer.ModeListen,
			[]string{"Scheur in balk vier, drie millimeter."}, nil, []string{"stored"}},
		{"Rust on the north wall.", buffer.ModeListen,
			[]string{"Scheur in balk vier, drie millimeter.", "Rust on the north wall."}, nil, []string{"stored"}},
		{"And the last one. AGORA, what do you think?", buffer.ModeFeedback, nil,
			[]string{"batch[Scheur in balk vier, drie millimeter.|Rust on the north wall.|And the last one.]", "what do you think?"},
			[]string{"feedback_on"}},
		{"Is the crack structural?", buffer.ModeFeedback, nil,
			[]string{"batch[Scheur in balk vier, drie millimeter.|Rust on the north wall.|And the last one.]", "what do you think?", "Is the crack structural?"},
			nil},
		{"Agora, luister.", buffer.ModeListen, nil,
			[]string{"batch[Scheur in balk vier, drie millimeter.|Rust on the north wall.|And the last one.]", "what do you think?", "Is the crack structural?"},
			[]string{"listen_on"}},
		{"agoraphobia is not a wake word", buffer.ModeListen, []string{"agoraphobia is not a wake word"},
			[]string{"batch[Scheur in balk vier, drie millimeter.|Rust on the north wall.|And the last one.]", "what do you think?", "Is the crack structural?"},
			[]string{"stored"}},
		{"AGORA listen, the ceiling is damp", buffer.ModeListen, []string{"agoraphobia is not a wake word", "the ceiling is damp"},
			[]string{"batch[Scheur in balk vier, drie millimeter.|Rust on the north wall.|And the last one.]", "what do you think?", "Is the crack structural?"},
			[]string{"listen_on"}},
		{"   ", buffer.ModeListen, []string{"agoraphobia is not a wake word", "the ceiling is damp"},
			[]string{"batch[Scheur in balk vier, drie millimeter.|Rust on the north wall.|And the last one.]", "what do you think?", "Is the crack structural?"},
			nil},
	}
	for i, s := range steps {
		if _, err := r.Handle(context.Background(), Heard{Text: s.say, Source: "typed"}); err != nil {
			t.Fatalf("step %d %q: %v", i, s.say, err)
		}
		if got := r.Mode(); got != s.wantMode {
			t.Errorf("step %d %q: mode %s, want %s", i, s.say, got, s.wantMode)
		}
		if m, _ := st.Mode(); m != s.wantMode {
			t.Errorf("step %d %q: persisted mode %s, want %s", i, s.say, m, s.wantMode)
		}
		if got := listenTexts(t, st); !slices.Equal(got, s.wantListen) {
			t.Errorf("step %d %q: listen buffer %q, want %q", i, s.say, got, s.wantListen)
		}
		if got := pendingTexts(t, st); !slices.Equal(got, s.wantQueue) {
			t.Errorf("step %d %q: outbox %q, want %q", i, s.say, got, s.wantQueue)
		}
		if got := snd.take(); !slices.Equal(got, s.wantSounds) {
			t.Errorf("step %d %q: sounds %q, want %q", i, s.say, got, s.wantSounds)
		}
	}
}

// TestRouterOfflineMarking: what is produced while the link is down says so.
func TestRouterOfflineMarking(t *testing.T) {
	for _, online := range []bool{false, true} {
		st := openStore(t, t.TempDir())
		r := newTestRouter(t, st, nil, online)
		if _, err := r.SetMode(context.Background(), buffer.ModeFeedback); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Handle(context.Background(), Heard{Text: "hello"}); err != nil {
			t.Fatal(err)
		}
		es, _ := st.Pending(0)
		if len(es) != 1 || es[0].Offline != !online {
			t.Errorf("online=%v: entries %+v, want one with offline=%v", online, es, !online)
		}
		st.Close()
	}
}

// TestRouterRestartKeepsModeAndFinishesFlush: the mode survives a restart,
// and a listen buffer left non-empty in feedback mode (a crash between the
// steps of a wake) is flushed when the router starts.
func TestRouterRestartKeepsModeAndFinishesFlush(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	r := newTestRouter(t, st, nil, false)
	for _, s := range []string{"one", "two"} {
		if _, err := r.Handle(context.Background(), Heard{Text: s}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	st = openStore(t, dir)
	r = newTestRouter(t, st, nil, false)
	if r.Mode() != buffer.ModeListen || !slices.Equal(listenTexts(t, st), []string{"one", "two"}) {
		t.Fatalf("after restart: mode %s, buffer %q", r.Mode(), listenTexts(t, st))
	}
	// Simulate the crash window: mode persisted as feedback, buffer not moved.
	if err := st.SetMode(buffer.ModeFeedback); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = openStore(t, dir)
	defer st.Close()
	r = newTestRouter(t, st, nil, false)
	if r.Mode() != buffer.ModeFeedback {
		t.Fatalf("mode %s, want feedback", r.Mode())
	}
	if got := pendingTexts(t, st); !slices.Equal(got, []string{"batch[one|two]"}) || len(listenTexts(t, st)) != 0 {
		t.Fatalf("outbox %q, listen %q: want the interrupted flush completed", got, listenTexts(t, st))
	}
}

func TestRouterRejectsBadMode(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	r := newTestRouter(t, st, nil, false)
	if _, err := r.SetMode(context.Background(), "loud"); err == nil {
		t.Fatal("SetMode(loud) succeeded")
	}
	if _, err := NewRouter(RouterOptions{Store: st, DefaultMode: "chatty"}); err == nil {
		t.Fatal("NewRouter with default mode chatty succeeded")
	}
}

// TestRouterReleasesJournaledAudio: the journal entry of an utterance goes
// away in the transaction that stores its text, or is kept as retained audio
// under retention "keep"; audio that yields no text is dropped either way.
func TestRouterReleasesJournaledAudio(t *testing.T) {
	tests := []struct {
		retention    string
		text         string
		wantRetained int
		wantAudioID  bool
	}{
		{buffer.RetainDrop, "a note", 0, false},
		{buffer.RetainKeep, "a note", 1, true},
		{buffer.RetainDrop, "", 0, false},
		{buffer.RetainKeep, "", 0, false},
		{buffer.RetainKeep, "before agora after", 1, true}, // two records, one audio
	}
	for _, tt := range tests {
		t.Run(tt.retention+"/"+tt.text, func(t *testing.T) {
			st, err := buffer.Open(t.TempDir(), buffer.Options{AudioRetention: tt.retention})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			r := newTestRouter(t, st, nil, false)
			id, err := st.JournalAudio(make([]float32, 1600), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Handle(context.Background(), Heard{Text: tt.text, AudioID: id}); err != nil {
				t.Fatal(err)
			}
			stats, err := st.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if stats.JournalPending != 0 || stats.AudioRetained != tt.wantRetained {
				t.Fatalf("journal %d retained %d; want 0 and %d", stats.JournalPending, stats.AudioRetained, tt.wantRetained)
			}
			recs, _ := st.ListListen(0)
			for _, rec := range recs {
				if (rec.AudioID == id) != tt.wantAudioID {
					t.Errorf("record %q audio id %q; want linked=%v", rec.Text, rec.AudioID, tt.wantAudioID)
				}
			}
		})
	}
}

// failingStore makes one step of a wake fail after the words before "agora"
// were stored.
type failingStore struct {
	*buffer.Store
	failSetMode, failEnqueue bool
}

func (f *failingStore) SetMode(m buffer.Mode) error {
	if f.failSetMode {
		return errors.New("disk said no")
	}
	return f.Store.SetMode(m)
}

func (f *failingStore) EnqueueUtterance(rec buffer.Record) (buffer.Entry, error) {
	if f.failEnqueue {
		return buffer.Entry{}, errors.New("disk said no")
	}
	return f.Store.EnqueueUtterance(rec)
}

// Issue 9, item 7: Router.Handle released the journaled audio with the words
// before "agora"; when the mode change or the question after them then
// failed, the question was lost. Now the audio stays journaled until the
// last part is stored; with nothing after the wake word it is released (or
// retained) once the wake is done.
func TestRouterKeepsAudioUntilTheQuestionIsStored(t *testing.T) {
	tests := []struct {
		name                   string
		text                   string
		retention              string
		failSetMode, failQueue bool
		wantErr                bool
		wantJournal, wantKept  int
	}{
		{"question fails", "crack in the weld agora what is the torque", buffer.RetainDrop, false, true, true, 1, 0},
		{"mode change fails", "crack in the weld agora what is the torque", buffer.RetainDrop, true, false, true, 1, 0},
		{"all stored", "crack in the weld agora what is the torque", buffer.RetainDrop, false, false, false, 0, 0},
		{"nothing after agora, drop", "crack in the weld agora", buffer.RetainDrop, false, false, false, 0, 0},
		{"nothing after agora, keep", "crack in the weld agora", buffer.RetainKeep, false, false, false, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := buffer.Open(t.TempDir(), buffer.Options{AudioRetention: tt.retention})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			fs := &failingStore{Store: st}
			rules, _ := wake.New(wake.DefaultConfig())
			r, err := NewRouter(RouterOptions{Store: fs, Rules: rules, DefaultMode: buffer.ModeListen})
			if err != nil {
				t.Fatal(err)
			}
			fs.failSetMode, fs.failEnqueue = tt.failSetMode, tt.failQueue
			id, err := st.JournalAudio(make([]float32, 1600), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Handle(context.Background(), Heard{Text: tt.text, AudioID: id})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Handle error %v, want error %v", err, tt.wantErr)
			}
			stats, _ := st.Stats()
			if stats.JournalPending != tt.wantJournal || stats.AudioRetained != tt.wantKept {
				t.Errorf("journal %d retained %d, want %d and %d", stats.JournalPending, stats.AudioRetained, tt.wantJournal, tt.wantKept)
			}
		})
	}
}

// TestWireModesMatchCore: the control socket keeps its own documented mode
// strings (agoractl does not link the store); they must be buffer's.
func TestWireModesMatchCore(t *testing.T) {
	for _, tt := range []struct {
		wire string
		core buffer.Mode
	}{{control.ModeListen, buffer.ModeListen}, {control.ModeFeedback, buffer.ModeFeedback}} {
		if m, err := buffer.ParseMode(tt.wire); err != nil || m != tt.core {
			t.Errorf("control mode %q parses as %q, %v; want %q", tt.wire, m, err, tt.core)
		}
	}
}

// Setting the mode the device is already in (agoractl mode, the backend's
// set_mode, a reload) is silent: no earcon, no mode-change event.
func TestRouterSetModeUnchangedIsSilent(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	snd := &recordingSounder{}
	rules, err := wake.New(wake.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var events []buffer.Mode
	r, err := NewRouter(RouterOptions{Store: st, Rules: rules, Sounds: snd, Online: func() bool { return false },
		DefaultMode: buffer.ModeListen, OnMode: func(m buffer.Mode) { events = append(events, m) }})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		mode       buffer.Mode
		wantSounds []string
		wantEvents []buffer.Mode
	}{
		{buffer.ModeListen, nil, nil},
		{buffer.ModeFeedback, []string{"feedback_on"}, []buffer.Mode{buffer.ModeFeedback}},
		{buffer.ModeFeedback, nil, nil},
		{buffer.ModeListen, []string{"listen_on"}, []buffer.Mode{buffer.ModeListen}},
		{buffer.ModeListen, nil, nil},
	}
	for i, s := range steps {
		events = nil
		if _, err := r.SetMode(context.Background(), s.mode); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := snd.take(); !slices.Equal(got, s.wantSounds) {
			t.Errorf("step %d set %s: sounds %q, want %q", i, s.mode, got, s.wantSounds)
		}
		if !slices.Equal(events, s.wantEvents) {
			t.Errorf("step %d set %s: mode events %q, want %q", i, s.mode, events, s.wantEvents)
		}
	}
}

// TestRouterSpottedName: when the keyword spotter heard the name whisper
// misheard, the router acts on it as on a written name: the words before
// it are the last note of the batch, the words after it the question; a
// spotted name followed by a listen word switches back.
func TestRouterSpottedName(t *testing.T) {
	st := openStore(t, t.TempDir())
	defer st.Close()
	snd := &recordingSounder{}
	r := newTestRouter(t, st, snd, false)
	ms := func(a, b int) (time.Duration, time.Duration) {
		return time.Duration(a) * time.Millisecond, time.Duration(b) * time.Millisecond
	}
	word := func(text string, a, b int) wake.Word {
		s, e := ms(a, b)
		return wake.Word{Text: text, Start: s, End: e}
	}
	if _, err := r.Handle(context.Background(), Heard{Text: "Rust on the north wall.", Source: "mic"}); err != nil {
		t.Fatal(err)
	}
	// "The gutter is blocked. Agora, is it urgent?" as tiny.en wrote it; the
	// spotter reports the name's end 0.3 s after it ends on the word clock
	// (wake.spotLag).
	h := Heard{Text: "The gutter is blocked. I've got a is it urgent?", Source: "mic", Spot: &wake.Spot{Score: 0.999, End: 2400 * time.Millisecond, Heard: true},
		Words: []wake.Word{word("The", 0, 200), word("gutter", 200, 600), word("is", 600, 700), word("blocked.", 700, 1300),
			word("I've", 1600, 1800), word("got", 1800, 2000), word("a", 2000, 2100), word("is", 2300, 2400), word("it", 2400, 2500), word("urgent?", 2500, 3000)}}
	out, err := r.Handle(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"batch[Rust on the north wall.|The gutter is blocked.]", "is it urgent?"}
	if got := pendingTexts(t, st); out.Wake != wake.Feedback || r.Mode() != buffer.ModeFeedback || !slices.Equal(got, want) {
		t.Errorf("spotted name: wake %q, mode %s, outbox %q; want feedback, %q", out.Wake, r.Mode(), got, want)
	}
	// The same text without the spotter's verdict is a question in feedback mode.
	h2 := Heard{Text: "I don't really listen.", Source: "mic", Spot: &wake.Spot{Score: 0.999, End: 1100 * time.Millisecond, Heard: true},
		Words: []wake.Word{word("I", 0, 200), word("don't", 200, 500), word("really", 500, 800), word("listen.", 900, 1400)}}
	if out, err := r.Handle(context.Background(), h2); err != nil || out.Wake != wake.Listen || r.Mode() != buffer.ModeListen {
		t.Errorf("spotted name + listen: %+v, %v, mode %s; want listen", out, err, r.Mode())
	}
	if got := pendingTexts(t, st); !slices.Equal(got, want) {
		t.Errorf("after the switch back the outbox is %q, want %q", got, want)
	}
}

// TestRouterFusedSpot: a spotter score below its threshold reaches the
// router too; with wake.fuse set, it wakes where whisper wrote something
// name-like at the spotter's place and not where it wrote other words.
func TestRouterFusedSpot(t *testing.T) {
	cfg := wake.DefaultConfig()
	cfg.Fuse, cfg.FuseLike = 0.7, 0.6
	rules, err := wake.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	word := func(text string, a, b int) wake.Word {
		return wake.Word{Text: text, Start: time.Duration(a) * time.Millisecond, End: time.Duration(b) * time.Millisecond}
	}
	// The spotter's end 0.3 s after the name's ("I've got a", 0-0.5 s):
	// 0.1 to 0.3 s after it on the transcriber's word clock.
	tests := []struct {
		name  string
		h     Heard
		wake  wake.Action
		mode  buffer.Mode
		texts []string
	}{
		{"band score, name-like words at the place", Heard{Text: "I've got a is it urgent?", Source: "mic",
			Spot:  &wake.Spot{Score: 0.8, End: 800 * time.Millisecond},
			Words: []wake.Word{word("I've", 0, 200), word("got", 200, 400), word("a", 400, 500), word("is", 700, 800), word("it", 800, 900), word("urgent?", 900, 1400)}},
			wake.Feedback, buffer.ModeFeedback, []string{"is it urgent?"}},
		{"band score, other words at the place", Heard{Text: "The wall is done.", Source: "mic",
			Spot:  &wake.Spot{Score: 0.8, End: 800 * time.Millisecond},
			Words: []wake.Word{word("The", 0, 200), word("wall", 200, 500), word("is", 500, 700), word("done.", 700, 1100)}},
			wake.None, buffer.ModeListen, nil},
		{"below the band", Heard{Text: "I've got a is it urgent?", Source: "mic",
			Spot:  &wake.Spot{Score: 0.5, End: 800 * time.Millisecond},
			Words: []wake.Word{word("I've", 0, 200), word("got", 200, 400), word("a", 400, 500), word("is", 700, 800), word("it", 800, 900), word("urgent?", 900, 1400)}},
			wake.None, buffer.ModeListen, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			defer st.Close()
			r, err := NewRouter(RouterOptions{Store: st, Rules: rules, Sounds: &recordingSounder{}, Online: func() bool { return false }, DefaultMode: buffer.ModeListen})
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Handle(context.Background(), tt.h)
			if err != nil {
				t.Fatal(err)
			}
			if got := pendingTexts(t, st); out.Wake != tt.wake || r.Mode() != tt.mode || !slices.Equal(got, tt.texts) {
				t.Errorf("wake %q, mode %s, outbox %q; want %q, %s, %q", out.Wake, r.Mode(), got, tt.wake, tt.mode, tt.texts)
			}
		})
	}
}

// TestRouterSpotWithoutText: whisper's guard dropped what it wrote (a
// repetition loop, "[Music]"), but the spotter is sure of the name: the
// device wakes all the same, the listen buffer goes over as the batch, and
// the words after the name, heard again, are the question. The journaled
// audio is released either way: nothing of it is waiting for text.
func TestRouterSpotWithoutText(t *testing.T) {
	tests := []struct {
		name  string
		spot  *wake.Spot
		wake  wake.Action
		mode  buffer.Mode
		texts []string
	}{
		{"sure, the question heard again", &wake.Spot{Score: 0.995, End: time.Second, Heard: true, Tail: "Is this beam safe?"},
			wake.Feedback, buffer.ModeFeedback, []string{"batch[Rust on the north wall.]", "Is this beam safe?"}},
		{"sure, nothing heard again", &wake.Spot{Score: 0.995, End: time.Second, Heard: true},
			wake.Feedback, buffer.ModeFeedback, []string{"batch[Rust on the north wall.]"}},
		{"in the band only", &wake.Spot{Score: 0.95, End: time.Second, Tail: "Is this beam safe?"},
			wake.None, buffer.ModeListen, nil},
		{"no spotter", nil, wake.None, buffer.ModeListen, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t, t.TempDir())
			defer st.Close()
			r := newTestRouter(t, st, &recordingSounder{}, false)
			if _, err := r.Handle(context.Background(), Heard{Text: "Rust on the north wall.", Source: "mic"}); err != nil {
				t.Fatal(err)
			}
			id, err := st.JournalAudio(make([]float32, 1600), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Handle(context.Background(), Heard{Text: "", Source: "mic", AudioID: id, Spot: tt.spot})
			if err != nil {
				t.Fatal(err)
			}
			if got := pendingTexts(t, st); out.Wake != tt.wake || r.Mode() != tt.mode || !slices.Equal(got, tt.texts) {
				t.Errorf("wake %q, mode %s, outbox %q; want %q, %s, %q", out.Wake, r.Mode(), got, tt.wake, tt.mode, tt.texts)
			}
			stats, err := st.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if stats.JournalPending != 0 {
				t.Errorf("%d journaled audio left; want it released", stats.JournalPending)
			}
		})
	}
}
