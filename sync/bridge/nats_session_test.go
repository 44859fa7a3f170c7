package bridge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/brokertest"
)

// The device's real uplink against nats-server's MQTT: retained status, the
// last will when the link drops, and a reply published while the device is
// offline delivered to its persistent session when it comes back.
func TestNATSDeviceSessionWillAndRetained(t *testing.T) {
	const partitions = 4
	n := brokertest.StartNATS(t, partitions)
	agent := aguitest.Start()
	defer agent.Close()
	agent.Delay = 1500 * time.Millisecond
	fb := startFleetBridge(t, n, partitions, agent.URL, "sess-bridge")
	defer fb.stop()
	store := fb.js.Store()
	proxy := brokertest.NewProxy(t, n.MQTTURL()[len("tcp://"):])
	dev := newDevice(t, "nats-dev", proxy.URL(), false)
	waitFor(t, 15*time.Second, "online status at the bridge", func() bool {
		ds, _ := store.Device("nats-dev")
		return ds.Online && ds.Mode == "feedback"
	})
	// Retained: a client subscribing now still gets the status.
	late := brokertest.SubscribeURL(t, n.MQTTURL(), "agora/v1/nats-dev/status")
	if msgs, ok := late.WaitCount(1, 10*time.Second); !ok || !msgs[0].Retained {
		t.Fatalf("no retained status for a late subscriber: %+v", msgs)
	}
	// A question, then the link drops while the graph is still answering.
	dev.say(t, "is the anchor bolt torqued")
	waitFor(t, 10*time.Second, "the run to start", func() bool { return len(agent.Runs()) == 1 })
	before := dev.up.Stats()
	proxy.Cut()
	waitFor(t, 20*time.Second, "the last will (online:false) at the bridge", func() bool {
		ds, _ := store.Device("nats-dev")
		return !ds.Online
	})
	time.Sleep(2 * time.Second) // the reply and the ack are published to the offline session now
	proxy.Restore()
	waitFor(t, 30*time.Second, "reply and ack delivered to the persistent session", func() bool {
		s := dev.up.Stats()
		return s.Commands+s.RejectedCommands >= before.Commands+before.RejectedCommands+2
	})
	waitFor(t, 15*time.Second, "online again", func() bool {
		ds, _ := store.Device("nats-dev")
		return ds.Online
	})
	s := dev.up.Stats()
	t.Logf("device commands: %d valid, %d rejected (reply is issue 7's: rejected until then)", s.Commands, s.RejectedCommands)
	if len(agent.Runs()) != 1 {
		t.Errorf("%d runs, want 1", len(agent.Runs()))
	}
	_ = fmt.Sprint
}
