package uplink

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
)

// A batch (a single message) stays on the device after its PUBACK in both
// delivery modes until the backend acks or parks it; one the backend
// parks (parked command, then the ack) is kept, not published again by
// this process, counted as parked (not unconfirmed, not stuck); a batch
// the backend acks is deleted. A new process publishes the parked one once
// more (the backend, knowing the id, says parked again).
func TestParkedBatchKeptOnDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	for _, delivery := range []string{DeliveryBroker, DeliveryBackend} {
		t.Run(delivery, func(t *testing.T) {
			b := brokertest.Start(t)
			sub := b.Subscribe(t, "agora/v1/dev-park/batches")
			st := newStore(t)
			flush := func(text string) buffer.Entry {
				if _, err := st.AppendListen(buffer.Record{Text: text, Lang: "en", StartedAt: time.Now(), Source: "typed"}); err != nil {
					t.Fatal(err)
				}
				e, _, err := st.FlushListen(false)
				if err != nil {
					t.Fatal(err)
				}
				return e
			}
			bad, good := flush("the graph refuses this one"), flush("the graph takes this one")
			cmd := func(v map[string]any) {
				body, _ := json.Marshal(v)
				publish(t, b, "agora/v1/dev-park/commands", string(body))
			}
			park := func() {
				cmd(map[string]any{"id": "parked-" + bad.ID, "type": "parked", "ids": []string{bad.ID}, "reason": "rejected by the agent"})
				cmd(map[string]any{"id": "ack-" + bad.ID, "type": "ack", "ids": []string{bad.ID}})
			}
			opts := testOptions("dev-park", b.URL())
			opts.Delivery, opts.AckTimeout, opts.StuckAfter = delivery, 300*time.Millisecond, 400*time.Millisecond
			c := newClient(t, opts, st, nil)
			stop := runClient(t, c)
			if _, ok := sub.WaitCount(2, 10*time.Second); !ok {
				t.Fatal("batches not published")
			}
			time.Sleep(100 * time.Millisecond)
			if n, _ := st.OutboxCount(); n != 2 {
				t.Fatalf("outbox %d after the PUBACKs, want both batches held for the backend", n)
			}
			park()
			cmd(map[string]any{"id": "ack-" + good.ID, "type": "ack", "ids": []string{good.ID}})
			waitUntil(t, 10*time.Second, "the parked batch kept, the other deleted", func() bool {
				es, _ := st.Pending(10)
				return len(es) == 1 && es[0].ID == bad.ID && c.Stats().Parked == 1
			})
			// Several ack_timeouts and stuck_afters later: not published
			// again, not unconfirmed, not stuck; still listed.
			before := sub.Count()
			time.Sleep(1500 * time.Millisecond)
			s := c.Stats()
			if sub.Count() != before || s.Unconfirmed != 0 || s.StuckFor != 0 || s.Parked != 1 || s.ParkedNotices != 1 {
				t.Errorf("after parking: %d more publications, stats %+v", sub.Count()-before, s)
			}
			if p := c.Parked(); len(p) != 1 || p[0].ID != bad.ID || p[0].Seq != bad.Seq || p[0].Reason != "rejected by the agent" {
				t.Errorf("Parked() = %+v", p)
			}
			if _, err := c.DropParked(good.ID); err == nil || !strings.Contains(err.Error(), "not parked") {
				t.Errorf("DropParked of an entry not parked: %v", err)
			}
			stop()

			// A new process sends it once more; parked again, kept again.
			c2 := newClient(t, opts, st, nil)
			runClient(t, c2)
			if _, ok := sub.WaitCount(before+1, 10*time.Second); !ok {
				t.Fatal("the parked batch was not published after a restart")
			}
			park()
			waitUntil(t, 10*time.Second, "parked again", func() bool { return c2.Stats().Parked == 1 })
			if n, _ := st.OutboxCount(); n != 1 {
				t.Errorf("outbox %d after the second park, want the batch kept", n)
			}
			// The operator drops it: gone from the outbox and the count.
			if p, err := c2.DropParked(bad.ID); err != nil || p.Seq != bad.Seq {
				t.Fatalf("DropParked: %+v %v", p, err)
			}
			if n, _ := st.OutboxCount(); n != 0 || c2.Stats().Parked != 0 {
				t.Errorf("after the drop: outbox %d, parked %d", n, c2.Stats().Parked)
			}
		})
	}
}

// A parked command for an entry the device no longer holds (an utterance
// under delivery: broker, deleted on its PUBACK) is counted and logged,
// and deletes or keeps nothing else.
func TestParkedNotHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	st := newStore(t)
	us := enqueueUtterances(t, st, 2, false, "u")
	c := newClient(t, testOptions("dev-park2", b.URL()), st, nil)
	runClient(t, c)
	waitUntil(t, 10*time.Second, "utterances delivered", func() bool { n, _ := st.OutboxCount(); return n == 0 })
	body, _ := json.Marshal(map[string]any{"id": "p1", "type": "parked", "ids": []string{us[0].ID}, "reason": "oversize"})
	publish(t, b, "agora/v1/dev-park2/commands", string(body))
	waitUntil(t, 10*time.Second, "parked notice counted", func() bool { return c.Stats().ParkedNotices == 1 })
	if s := c.Stats(); s.Parked != 0 || s.RejectedCommands != 0 {
		t.Errorf("stats %+v", s)
	}
}

// The parked command and the ack after it may be carried out before the
// entry's PUBACK is seen: the entry is then held as parked, not deleted.
func TestParkedBeforePuback(t *testing.T) {
	st := newStore(t)
	us := enqueueUtterances(t, st, 1, false, "u")
	for _, delivery := range []string{DeliveryBroker, DeliveryBackend} {
		opts := testOptions("dev-park3", "")
		opts.Delivery = delivery
		c := newClient(t, opts, st, nil)
		e := us[0]
		e.Kind = buffer.KindBatch
		c.park([]string{e.ID}, "rejected")
		c.confirm([]string{e.ID})
		if c.settled(e, time.Now()) {
			t.Errorf("%s: settled: the parked entry would be deleted", delivery)
		}
		if p := c.Parked(); len(p) != 1 || p[0].ID != e.ID || p[0].Reason != "rejected" {
			t.Errorf("%s: Parked() = %+v", delivery, p)
		}
		if c.holdForAck(e) != true {
			t.Errorf("%s: the parked entry would be published again", delivery)
		}
	}
}

// An entry confirmed while released for re-publication is counted once:
// not again at the re-publication's PUBACK, nor at a second ack for it
// (CI saw 4 confirmed for 3 entries on a loaded machine).
func TestConfirmedCountedOnce(t *testing.T) {
	st := newStore(t)
	us := enqueueUtterances(t, st, 2, false, "u")
	opts := testOptions("dev-count", "")
	opts.Delivery, opts.AckTimeout = DeliveryBackend, time.Millisecond
	c := newClient(t, opts, st, nil)
	t0 := time.Now()
	for _, e := range us {
		if c.settled(e, t0) {
			t.Fatalf("%s settled at its first PUBACK under delivery: backend", e.ID)
		}
	}
	tests := []struct {
		name string
		step func()
		want uint64
	}{
		{"released, then acked", func() { c.releaseDue(t0.Add(time.Second)); c.confirm([]string{us[0].ID}) }, 1},
		{"the re-publication's PUBACK", func() {
			if !c.settled(us[0], t0.Add(time.Second)) {
				t.Error("the re-publication of a confirmed entry is not settled")
			}
		}, 1},
		{"a second ack for it", func() { c.confirm([]string{us[0].ID}) }, 1},
		{"the other acked before its re-publication's PUBACK", func() { c.confirm([]string{us[1].ID}) }, 2},
		{"that PUBACK", func() { c.settled(us[1], t0.Add(time.Second)) }, 2},
	}
	for _, tc := range tests {
		tc.step()
		if got := c.Stats().Confirmed; got != tc.want {
			t.Fatalf("after %s: %d confirmed, want %d", tc.name, got, tc.want)
		}
	}
}

// An entry confirmed after the drain read its page of the outbox is not
// published again from that page, and an ack the backend sends again for
// it (or a re-publication's PUBACK) does not count it twice: CI saw 4
// confirmed of 3 sent under load.
func TestConfirmedNotPublishedAgain(t *testing.T) {
	st := newStore(t)
	us := enqueueUtterances(t, st, 1, false, "u")
	e := us[0]
	opts := testOptions("dev-stale", "")
	opts.Delivery, opts.AckTimeout = DeliveryBackend, time.Minute
	c := newClient(t, opts, st, nil)
	t0 := time.Now()
	if c.settled(e, t0) {
		t.Fatal("settled at its first PUBACK under delivery: backend")
	}
	tests := []struct {
		name     string
		step     func()
		wantHeld bool
		want     uint64
	}{
		{"held for the ack", func() {}, true, 0},
		{"acked", func() { c.confirm([]string{e.ID}) }, true, 1},
		{"acked again (a duplicate at the bridge)", func() { c.confirm([]string{e.ID}) }, true, 1},
		{"a re-publication's PUBACK", func() {
			if !c.settled(e, t0.Add(time.Second)) {
				t.Error("a confirmed entry's re-publication is held again")
			}
		}, false, 1},
		{"acked once more", func() { c.confirm([]string{e.ID}) }, false, 1},
	}
	for _, tc := range tests {
		tc.step()
		if got := c.holdForAck(e); got != tc.wantHeld {
			t.Errorf("after %s: holdForAck %v, want %v (a page read before the delete must not publish it again)", tc.name, got, tc.wantHeld)
		}
		if got := c.Stats().Confirmed; got != tc.want {
			t.Fatalf("after %s: %d confirmed, want %d", tc.name, got, tc.want)
		}
	}
}
