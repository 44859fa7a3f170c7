package uplink

import (
	"testing"
	"time"

	"github.com/agora/agorad/sync/brokertest"
)

// A session the broker closes while the drain hands paho a publish ends at
// once, and so does Run when cancelled then. paho's Publish waits up to its
// write timeout (PublishTimeout, 30s by default, a minute here) to hand a
// message to a connection already gone; the reconnect and the daemon's
// shutdown used to wait as long. mosquitto before 2.0.22 with
// max_queued_messages 0 (brokertest's) closes the session after a publish
// its ACL denies, with the device's next publishes unread: every session
// of this test drops in the middle of the drain.
func TestSessionDroppedMidPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	const dev = "dev-drop"
	b := brokertest.Start(t, brokertest.WithPassword(dev, "pw-dev"),
		brokertest.WithACL("user "+dev, "topic read agora/v1/"+dev+"/commands", "topic write agora/v1/"+dev+"/status"))
	st := newStore(t)
	enqueueUtterances(t, st, 2000, false, "denied")
	opts := testOptions(dev, b.URL())
	opts.Username, opts.Password = dev, "pw-dev"
	opts.Delivery, opts.PublishTimeout = DeliveryBackend, time.Minute
	c := newClient(t, opts, st, nil)
	stop := runClient(t, c)
	// Sessions drop and reconnect within the backoff (at most 200ms here):
	// none may stay stuck for anything like PublishTimeout.
	const watch, limit = 12 * time.Second, 5 * time.Second
	last, since, longest := uint64(0), time.Now(), time.Duration(0)
	for end := time.Now().Add(watch); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := c.Stats().Connects; n != last {
			last, since = n, time.Now()
		}
		longest = max(longest, time.Since(since))
	}
	s := c.Stats()
	t.Logf("in %v: %d sessions, the longest %v, %d entries PUBACKed", watch, s.Connects, longest.Round(time.Millisecond), s.Published)
	if longest > limit {
		t.Errorf("a session stayed %v after the broker dropped it (PublishTimeout %v): the reconnect waited for paho's Publish", longest.Round(time.Millisecond), opts.PublishTimeout)
	}
	began := time.Now()
	stop()
	if took := time.Since(began); took > limit {
		t.Errorf("Run returned %v after cancel", took.Round(time.Millisecond))
	}
	if n, _ := st.OutboxCount(); n != 2000 {
		t.Errorf("outbox %d after the denied sessions, want 2000", n)
	}
}
