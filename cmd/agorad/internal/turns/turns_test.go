package turns

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type recorder struct {
	mu sync.Mutex
	d  map[string][]time.Duration
}

func (r *recorder) TurnStage(stage string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.d == nil {
		r.d = map[string][]time.Duration{}
	}
	r.d[stage] = append(r.d[stage], d)
}

func (r *recorder) get(stage string) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.d[stage]...)
}

// Each stage is observed once, from the end of speech, whatever order the
// events come in; a note (no question id) has only the speech path's two.
func TestStagesInAnyOrder(t *testing.T) {
	end := time.Now().Add(-10 * time.Second)
	at := func(ms int) time.Time { return end.Add(time.Duration(ms) * time.Millisecond) }
	want := map[string]time.Duration{TurnEnd: 1200 * time.Millisecond, Transcribed: 1500 * time.Millisecond,
		Published: 1520 * time.Millisecond, Reply: 1700 * time.Millisecond, FirstAudio: 1710 * time.Millisecond}
	heard := func(c *Clock) { c.Heard("q", end, at(1200), at(1500)) }
	pub := func(c *Clock) { c.Published("q", at(1520)) }
	rep := func(c *Clock) { c.Replied("q", at(1700)) }
	first := func(c *Clock) { c.FirstAudio("q", at(1710)) }
	tests := []struct {
		name   string
		events []func(*Clock)
	}{
		{"in order", []func(*Clock){heard, pub, rep, first}},
		{"published before heard", []func(*Clock){pub, heard, rep, first}},
		{"heard last", []func(*Clock){pub, rep, first, heard}},
		{"published twice", []func(*Clock){heard, pub, pub, rep, first}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			c := New(Options{Observer: r, Logger: slog.New(slog.DiscardHandler)})
			for _, e := range tc.events {
				e(c)
			}
			for _, s := range Stages {
				got := r.get(s)
				if len(got) != 1 || got[0] != want[s] {
					t.Errorf("%s: observed %v, want [%v]", s, got, want[s])
				}
			}
			c.mu.Lock()
			open := len(c.turns)
			c.mu.Unlock()
			if tc.name != "heard last" && open != 0 {
				t.Errorf("%d turns kept after first_audio", open)
			}
		})
	}
	r := &recorder{}
	c := New(Options{Observer: r, Logger: slog.New(slog.DiscardHandler)})
	c.Heard("", end, at(1200), at(1600))
	if got := r.get(Transcribed); len(got) != 1 || got[0] != 1600*time.Millisecond || len(r.get(Published)) != 0 {
		t.Errorf("note: %v", r.d)
	}
}

// The cue plays once when the answer is late, not when it comes in time,
// not in listen mode, and not after Close.
func TestThinkingCue(t *testing.T) {
	const after = 150 * time.Millisecond
	tests := []struct {
		name      string
		replyIn   time.Duration // 0: never
		listening bool
		close     bool
		want      int32
	}{
		{"late answer", 600 * time.Millisecond, false, false, 1},
		{"no answer", 0, false, false, 1},
		{"answer in time", 50 * time.Millisecond, false, false, 0},
		{"listen mode", 0, true, false, 0},
		{"closed", 0, false, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cues atomic.Int32
			c := New(Options{Logger: slog.New(slog.DiscardHandler), ThinkingAfter: after,
				Thinking: func() { cues.Add(1) }, Listening: func() bool { return tc.listening }})
			now := time.Now()
			c.Heard("q", now.Add(-2*time.Second), now.Add(-800*time.Millisecond), now)
			c.Published("q", now)
			c.Published("q", now.Add(10*time.Millisecond)) // a re-publish arms nothing more
			if tc.close {
				c.Close()
			}
			if tc.replyIn > 0 {
				time.Sleep(tc.replyIn)
				c.Replied("q", time.Now())
			}
			time.Sleep(3 * after)
			if got := cues.Load(); got != tc.want {
				t.Errorf("%d cues, want %d", got, tc.want)
			}
		})
	}
}

// Questions whose answer never comes are forgotten beyond MaxOpen.
func TestBounded(t *testing.T) {
	c := New(Options{Logger: slog.New(slog.DiscardHandler)})
	now := time.Now()
	for i := range 3 * MaxOpen {
		c.Heard(string(rune('a'+i%26))+time.Duration(i).String(), now, now, now)
	}
	c.mu.Lock()
	n, o := len(c.turns), len(c.order)
	c.mu.Unlock()
	if n != MaxOpen || o != MaxOpen {
		t.Errorf("%d turns (%d in order) kept, want %d", n, o, MaxOpen)
	}
	var nilClock *Clock
	nilClock.Heard("x", now, now, now) // a daemon without a clock
	nilClock.Close()
}
