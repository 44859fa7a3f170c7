package uplink

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// One status per connect, reconnects included (also when a status was
// asked for while offline), and a last will that says
// only "offline": the counts it would carry are those of the connect,
// minutes stale by the time the broker sends it.
func TestStatusOncePerConnectAndWillWithoutCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	p := brokertest.NewProxy(t, b.Addr())
	sub := b.Subscribe(t, "agora/v1/dev-w/status")
	var buffered atomic.Int64
	buffered.Store(1)
	opts := testOptions("dev-w", p.URL())
	opts.Status = func() protocol.Status {
		return protocol.Status{Mode: "listen", Buffered: int(buffered.Load()), Version: "t", Model: "m"}
	}
	c := newClient(t, opts, newStore(t), nil)
	runClient(t, c)
	online := func(ms []brokertest.Message) (n int) {
		for _, m := range ms {
			var w wireMsg
			if json.Unmarshal(m.Payload, &w) == nil && w.Online {
				n++
			}
		}
		return n
	}
	settle := 1500 * time.Millisecond // long enough for a second status to show
	tests := []struct {
		name string
		act  func()
	}{
		{"connect", func() {}},
		{"reconnect", func() {
			buffered.Store(0) // the will registered at the connect said 1
			before := len(sub.Messages())
			p.Cut() // abrupt: the broker sends the will
			msgs, ok := sub.WaitFor(10*time.Second, func(ms []brokertest.Message) bool { return len(ms) > before })
			if !ok {
				t.Fatal("no last will")
			}
			waitUntil(t, 10*time.Second, "client notices it is offline", func() bool { return !c.Online() })
			will := string(msgs[len(msgs)-1].Payload)
			if !strings.Contains(will, `"online":false`) || strings.Contains(will, `"buffered"`) || strings.Contains(will, `"outbox"`) || strings.Contains(will, `"mode"`) {
				t.Errorf("last will %s: want online:false without counts or mode", will)
			}
			// Asked while offline (a note, a mode change): the connect's
			// own status already says it.
			c.PublishStatus()
			p.Restore()
		}},
	}
	for _, tc := range tests {
		before := online(sub.Messages())
		tc.act()
		waitUntil(t, 10*time.Second, "online after "+tc.name, c.Online)
		if _, ok := sub.WaitFor(10*time.Second, func(ms []brokertest.Message) bool { return online(ms) > before }); !ok {
			t.Fatalf("%s: no online status", tc.name)
		}
		time.Sleep(settle)
		if n := online(sub.Messages()) - before; n != 1 {
			t.Errorf("%s: %d online statuses published, want 1", tc.name, n)
		}
	}
}
