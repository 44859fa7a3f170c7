package uplink

import (
	"testing"
	"time"

	"github.com/agora/agorad/sync/brokertest"
)

// Broker back → backlog flowing again within 5 s: real mosquitto stopped long
// enough for the backoff to reach its cap, restarted on the same port; the
// time from the broker listening again to the first backlog entry PUBACKed.
// The first case is the defaults (BackoffMin/Max unset); the second a
// ceiling of a minute, cut short by a network change.
func TestBacklogFlowsSoonAfterBrokerBack(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	tests := []struct {
		name       string
		min, max   time.Duration
		down       time.Duration
		netChange  bool
		within     time.Duration
		minFailing uint64 // connect failures while down: the backoff grew
	}{
		{"default cap", 0, 0, 9 * time.Second, false, 5 * time.Second, 4},
		{"network change cuts a minute's wait", time.Minute, time.Minute, 2 * time.Second, true, 2 * time.Second, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := brokertest.Start(t)
			sub := b.Subscribe(t, "agora/v1/dev-r/utterances")
			b.Stop()
			st := newStore(t)
			opts := testOptions("dev-r", b.URL())
			opts.BackoffMin, opts.BackoffMax = tc.min, tc.max
			net := make(chan struct{}, 1)
			if tc.netChange {
				opts.NetChanged = net
			}
			c := newClient(t, opts, st, nil)
			runClient(t, c)
			const n = 20
			enqueueUtterances(t, st, n, true, "basement")
			time.Sleep(tc.down)
			failures := c.Stats().ConnectFailures
			if failures < tc.minFailing {
				t.Fatalf("%d connect failures while the broker was down, want >= %d", failures, tc.minFailing)
			}
			b.Start()
			back := time.Now()
			if tc.netChange {
				net <- struct{}{}
			}
			waitUntil(t, 30*time.Second, "first backlog entry delivered", func() bool {
				left, _ := st.OutboxCount()
				return left < n
			})
			took := time.Since(back)
			t.Logf("broker back → first backlog entry PUBACKed: %v (%d connect failures while down)", took.Round(time.Millisecond), failures)
			if took > tc.within {
				t.Errorf("backlog flowing again %v after the broker came back, want < %v", took.Round(time.Millisecond), tc.within)
			}
			if _, ok := sub.WaitFor(20*time.Second, func(m []brokertest.Message) bool { return distinct(t, m) >= n }); !ok {
				t.Errorf("not all %d backlog entries reached the subscriber", n)
			}
		})
	}
}
