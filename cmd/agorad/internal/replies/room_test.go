package replies

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// Issue 27: a far-future expires_at (9999-12-31) was accepted and kept the
// reply open for good. It is capped at max_age from arrival; an earlier
// one is kept.
func TestExpiresAtCappedAtMaxAge(t *testing.T) {
	r := newRig(t, "", nil, 1)
	r.mode.Store("listen")
	far := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	soon := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	for _, tc := range []struct {
		name string
		exp  time.Time
		want func(received time.Time) time.Time
	}{
		{"far future", far, func(rc time.Time) time.Time { return rc.Add(time.Hour) }},
		{"none", time.Time{}, func(rc time.Time) time.Time { return rc.Add(time.Hour) }},
		{"within max_age", soon, func(time.Time) time.Time { return soon }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "exp-" + tc.name
			before := time.Now()
			r.receive(protocol.Reply{ID: id, Text: "x", ExpiresAt: tc.exp})
			got, err := r.store.GetReply(id)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want(before)
			if d := got.ExpiresAt.Sub(want); d < -time.Second || d > time.Second {
				t.Errorf("expires_at %v, want %v", got.ExpiresAt, want)
			}
		})
	}
}

// Issue 27: open replies are capped at buffer.MaxReplies; beyond, the
// oldest waiting one is finished as dropped and acked so, and every reply
// ends acked (held, then dropped for the oldest ones).
func TestFloodDropsOldestWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("stores MaxReplies+50 replies")
	}
	r := newRig(t, "", nil, 1)
	r.mode.Store("listen")
	n := buffer.MaxReplies + 50
	for i := range n {
		r.receive(protocol.Reply{ID: fmt.Sprint("f", i), Text: "x"})
	}
	if open, _ := r.store.ReplyCounts(); open != buffer.MaxReplies {
		t.Errorf("%d replies open, want the cap %d", open, buffer.MaxReplies)
	}
	waitFor(t, "every reply acked", func() bool { return len(r.acks()) == n })
	acks := r.acks()
	for i := range n {
		id := fmt.Sprint("f", i)
		got := acks[id]
		last := got[len(got)-1]
		switch {
		case i < 50 && last != protocol.OutcomeDropped:
			t.Errorf("%s (one of the 50 oldest): acks %q, want dropped last", id, got)
		case i >= 50 && last != protocol.OutcomeHeld:
			t.Errorf("%s: acks %q, want held", id, got)
		}
		if len(got) > 2 {
			t.Errorf("%s acked %d times: %q", id, len(got), got)
		}
	}
	// The dropped ones, finished, are the first evicted: at most
	// MaxReplies stored in all.
	if open, done := r.store.ReplyCounts(); open+done > buffer.MaxReplies {
		t.Errorf("%d open + %d finished replies stored, cap %d", open, done, buffer.MaxReplies)
	}
}
