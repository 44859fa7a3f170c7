package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
)

// Issue 27: /healthz said ok: true throughout a device that could not reach
// the backend. Once the link has been down longer than
// mqtt.offline_unhealthy_after with outbox entries waiting, it is not ok
// (503) with the reason; a shorter outage, or an empty outbox, stays ok;
// the link coming back makes it ok again.
func TestHealthNotOKWhenOfflineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	broker := brokertest.Start(t)
	broker.Stop()
	for _, tc := range []struct {
		name    string
		after   time.Duration
		note    bool
		wantOK  bool
		wantWhy string
	}{
		{"down long, waiting", 500 * time.Millisecond, true, false, "backend never reached since start"},
		{"down long, empty", 500 * time.Millisecond, false, true, ""},
		{"check off", 0, true, true, ""},
		{"down short", time.Hour, true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, broker.URL())
			cfg.Mode = "feedback"
			cfg.MQTT.OfflineUnhealthyAfter = configs.Duration(tc.after)
			d, run := startDaemon(t, testOptions(cfg))
			if tc.note {
				if _, err := d.cmds.Say(context.Background(), "The fire door does not close."); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-run.Done():
				t.Fatalf("daemon stopped: %v", run.Err())
			case <-time.After(time.Second):
			}
			h := d.status.health()
			if h.OK != tc.wantOK || !strings.Contains(h.Reason, tc.wantWhy) {
				t.Fatalf("health %+v, want ok=%v reason containing %q", h, tc.wantOK, tc.wantWhy)
			}
			if tc.wantOK {
				return
			}
			broker.Start()
			defer broker.Stop()
			deadline := time.Now().Add(15 * time.Second)
			for !d.status.health().OK {
				if time.Now().After(deadline) {
					t.Fatalf("still not ok after the broker came back: %+v", d.status.health())
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
