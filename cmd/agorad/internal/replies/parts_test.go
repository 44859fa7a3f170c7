package replies

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// partsPlayer is a player on a real store with test doubles for the engine
// and speaker (the real ones: parts_e2e_test.go).
func partsPlayer(t *testing.T, chunks int, maxAge, partWait time.Duration) (*Player, *fakeSpeaker, *buffer.Store) {
	st, err := buffer.Open(t.TempDir(), buffer.Options{Sync: buffer.SyncNone, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	spk := &fakeSpeaker{}
	p, err := New(Options{Store: st, Engine: fakeEngine{chunks: chunks}, Speaker: func() (Speaker, error) { return spk, nil },
		Mode: func() string { return "feedback" }, DefaultLang: "en", MaxAge: maxAge, PartWait: partWait, MaxChars: 200,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; st.Close() })
	return p, spk, st
}

func receive(t *testing.T, p *Player, id, text string) {
	t.Helper()
	if err := p.Receive(context.Background(), protocol.Reply{ID: id, Text: text, Lang: "en"}); err != nil {
		t.Fatal(err)
	}
}

func waitPlayed(t *testing.T, spk *fakeSpeaker, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(spk.get()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // nothing more comes
	return spk.get()
}

func TestReplyParts(t *testing.T) {
	notice := "en:Part 2 of 3 of this answer did not arrive."
	for _, tc := range []struct {
		name     string
		chunks   int // 5 ms each
		maxAge   time.Duration
		partWait time.Duration
		run      func(t *testing.T, p *Player)
		want     []string
		states   map[string]string
	}{
		{"max_age counts from the part before", 100, 300 * time.Millisecond, time.Second, func(t *testing.T, p *Player) {
			// Each part takes 500 ms, longer than max_age: from arrival, part 2 expired.
			receive(t, p, "r.p1of2", "one")
			receive(t, p, "r.p2of2", "two")
		}, []string{"en:one", "en:two"}, map[string]string{"r.p2of2": "spoken"}},
		{"in index order", 2, time.Minute, time.Second, func(t *testing.T, p *Player) {
			receive(t, p, "r.p3of3", "three")
			receive(t, p, "r.p2of3", "two")
			receive(t, p, "r.p1of3", "one")
		}, []string{"en:one", "en:two", "en:three"}, nil},
		{"missing part said, late copy not spoken", 2, time.Minute, 200 * time.Millisecond, func(t *testing.T, p *Player) {
			receive(t, p, "r.p3of3", "three")
			receive(t, p, "r.p1of3", "one")
			time.Sleep(600 * time.Millisecond)
			receive(t, p, "r.p2of3", "two, too late")
		}, []string{"en:one", notice, "en:three"}, map[string]string{"r.p2of3": "missing", "r.p3of3": "spoken"}},
		{"later replies wait for the answer", 2, time.Minute, 200 * time.Millisecond, func(t *testing.T, p *Player) {
			receive(t, p, "r.p1of3", "one")
			receive(t, p, "r.p3of3", "three")
			receive(t, p, "other", "another answer")
		}, []string{"en:one", notice, "en:three", "en:another answer"}, nil},
		// Streamed answers (ids .s<i>, the last .s<i>e): the same order and waits.
		{"streamed parts in index order", 2, time.Minute, time.Second, func(t *testing.T, p *Player) {
			receive(t, p, "r.s3e", "three")
			receive(t, p, "r.s2", "two")
			receive(t, p, "r.s1", "one")
		}, []string{"en:one", "en:two", "en:three"}, map[string]string{"r.s3e": "spoken"}},
		{"streamed part missing said, late copy not spoken", 2, time.Minute, 200 * time.Millisecond, func(t *testing.T, p *Player) {
			receive(t, p, "r.s1", "one")
			receive(t, p, "r.s3e", "three")
			time.Sleep(600 * time.Millisecond)
			receive(t, p, "r.s2", "two, too late")
		}, []string{"en:one", "en:Part 2 of this answer did not arrive.", "en:three"},
			map[string]string{"r.s2": "missing", "r.s3e": "spoken"}},
		{"a part after the streamed one spoken comes too late", 2, time.Minute, time.Second, func(t *testing.T, p *Player) {
			receive(t, p, "r.s2e", "two")
			time.Sleep(1500 * time.Millisecond) // part 1 declared missing, part 2 spoken
			receive(t, p, "r.s1", "one, too late")
		}, []string{"en:Part 1 of this answer did not arrive.", "en:two"}, map[string]string{"r.s1": "missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, spk, st := partsPlayer(t, tc.chunks, tc.maxAge, tc.partWait)
			tc.run(t, p)
			got := waitPlayed(t, spk, len(tc.want))
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("played %q, want %q", got, tc.want)
			}
			for id, want := range tc.states {
				r, err := st.GetReply(id)
				if err != nil || string(r.State) != want {
					t.Errorf("%s: %s %v, want %s", id, r.State, err, want)
				}
			}
		})
	}
}

// Listen mode holds a streamed answer as it holds a reply: every part held,
// one "reply waiting" earcon (on part 1), then spoken whole, in order, once
// back in feedback mode.
func TestStreamedPartsHeldInListenMode(t *testing.T) {
	r := newRig(t, "", nil, 2)
	r.mode.Store("listen")
	r.receive(protocol.Reply{ID: "reply-u.s1", Text: "one"})
	r.receive(protocol.Reply{ID: "reply-u.s2", Text: "two"})
	r.receive(protocol.Reply{ID: "reply-u.s3e", Text: "three"})
	waitFor(t, "all held", func() bool { return len(r.acks()["reply-u.s3e"]) == 1 })
	if got := r.spk.get(); len(got) != 0 {
		t.Errorf("played in listen mode: %q", got)
	}
	if n := r.earcon.Load(); n != 1 {
		t.Errorf("%d reply-waiting earcons, want 1 for the answer", n)
	}
	r.mode.Store("feedback")
	r.p.Wake()
	waitFor(t, "spoken", func() bool { return len(r.acks()["reply-u.s3e"]) == 2 })
	if got := r.spk.get(); strings.Join(got, "|") != "en:one|en:two|en:three" {
		t.Errorf("played %q", got)
	}
	for _, id := range []string{"reply-u.s1", "reply-u.s2", "reply-u.s3e"} {
		if acks := r.acks()[id]; !eq(acks, []string{"held", "spoken"}) {
			t.Errorf("acks of %s: %v", id, acks)
		}
	}
}
