package uplink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// slowHandler takes a long time per command, as storing replies did under
// a flood (each slower than the last).
type slowHandler struct {
	per     time.Duration
	handled atomic.Int64
}

func (h *slowHandler) HandleCommand(ctx context.Context, _ protocol.Command) error {
	select {
	case <-ctx.Done():
	case <-time.After(h.per):
	}
	h.handled.Add(1)
	return nil
}

// Issue 27: with more commands in flight than the uplink's queue held, the
// paho callback blocked; paho reads PUBACKs on that goroutine, so the
// session's own publishes timed out behind the backlog and the session
// dropped (16 failed connects in the issue). Now the callback never blocks:
// while a backlog of slow commands is worked through, outbox entries are
// published and deleted, the session stays up, and a ping is answered at
// once, not after the backlog.
func TestSessionNeverWaitsBehindCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t) // max_inflight_messages 100
	st := newStore(t)
	h := &slowHandler{per: 40 * time.Millisecond}
	opts := testOptions("dev-flood", b.URL())
	opts.PublishTimeout = time.Second
	c := newClient(t, opts, st, h)
	runClient(t, c)
	waitUntil(t, 10*time.Second, "online", c.Online)

	acks := b.Subscribe(t, protocol.Topic("dev-flood", protocol.TopicAcks))
	pub := connectPublisher(t, b)
	const n = 150 // > the broker's in-flight window (100) > the old queue (64)
	for i := range n {
		pub.Publish(protocol.Topic("dev-flood", protocol.TopicCommands), 1, false, fmt.Sprintf(`{"id":"m-%d","type":"set_mode","mode":"listen"}`, i))
	}
	// Stored and acknowledged at once: the backlog waits in the store's
	// inbox, not in memory or in the broker's in-flight window.
	waitUntil(t, 10*time.Second, "a backlog stored", func() bool { return st.InboxCount() > 64 })
	if n := c.commands.Len(); n > maxAcceptBatch {
		t.Errorf("%d commands held in memory", n)
	}
	pingAt := time.Now()
	pub.Publish(protocol.Topic("dev-flood", protocol.TopicCommands), 1, false, `{"id":"probe-ping","type":"ping"}`)
	if _, ok := acks.WaitFor(5*time.Second, func(ms []brokertest.Message) bool {
		return slices.ContainsFunc(ms, func(m brokertest.Message) bool {
			return strings.Contains(string(m.Payload), `"command_id":"probe-ping"`)
		})
	}); !ok {
		t.Errorf("ping not answered within 5 s, behind %d stored commands", st.InboxCount())
	} else if left := n - h.handled.Load(); left < n/4 {
		t.Errorf("ping answered after %v, with only %d of %d commands left: want it ahead of the backlog", time.Since(pingAt), left, n)
	}
	// The backlog takes n*40ms = 6 s; utterances queued meanwhile are
	// published within the publish timeout.
	for i := range 5 {
		start := time.Now()
		if _, err := st.Enqueue(buffer.LaneData, buffer.KindEvent, false, []byte(`{"event":"probe"}`)); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 5*time.Second, "probe published", func() bool {
			es, _ := st.Pending(0)
			for _, e := range es {
				if e.Kind == buffer.KindEvent {
					return false
				}
			}
			return true
		})
		if d := time.Since(start); d > opts.PublishTimeout {
			t.Errorf("probe %d published after %v, behind %d commands", i, d, st.InboxCount())
		}
		time.Sleep(300 * time.Millisecond)
	}
	waitUntil(t, 30*time.Second, "every command handled", func() bool { return h.handled.Load() >= n })
	waitUntil(t, 5*time.Second, "the inbox emptied", func() bool { return st.InboxCount() == 0 })
	if s := c.Stats(); s.Reconnects != 0 || s.Connects != 1 {
		t.Errorf("connects %d, reconnects %d while a backlog was handled: want one session", s.Connects, s.Reconnects)
	}
}

// Issue 27: the broker's in-flight window did not bound the commands held
// between paho and the intake (3,500 replies, 55 MB, with 10,000 queued).
// A bounded inbox makes push wait for room, never longer than maxWait,
// and then not again until the taker has caught up.
func TestInboxBound(t *testing.T) {
	const limit, wait = 4, 100 * time.Millisecond
	tests := []struct {
		name     string
		taker    bool // a goroutine pops as fast as it can
		pushes   int
		wantOver uint64
		maxTook  time.Duration // all pushes together
	}{
		{"taker keeps up: never over", true, 200, 0, 5 * time.Second},
		{"no taker: one wait, then no more", false, limit + 3, 3, wait + 80*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newInbox()
			b.setBound(limit, wait)
			var maxLen atomic.Int64
			stop := make(chan struct{})
			done := make(chan struct{})
			if tt.taker {
				go func() {
					defer close(done)
					for {
						maxLen.Store(max(maxLen.Load(), int64(b.Len())))
						if _, ok := b.pop(); !ok {
							select {
							case <-stop:
								return
							case <-b.ready:
							}
						}
					}
				}()
			} else {
				close(done)
			}
			start := time.Now()
			for range tt.pushes {
				b.push(inbound{})
			}
			took := time.Since(start)
			close(stop)
			<-done
			if got := b.overBound(); got != tt.wantOver {
				t.Errorf("%d pushes past the bound, want %d", got, tt.wantOver)
			}
			if took > tt.maxTook {
				t.Errorf("pushes took %v, want at most %v (push waits once, then not while stalled)", took, tt.maxTook)
			}
			if tt.taker && maxLen.Load() > limit {
				t.Errorf("%d commands queued, bound %d", maxLen.Load(), limit)
			}
			if !tt.taker {
				if took < wait {
					t.Errorf("push past the bound returned after %v, want it to wait %v for room first", took, wait)
				}
				for b.Len() >= limit {
					b.pop()
				}
				if b.stalled {
					t.Error("still stalled below the bound")
				}
			}
		})
	}
}
