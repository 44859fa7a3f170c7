package bridge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// hangingAgent holds every run of device "hang" until release is closed.
func hangingAgent(t *testing.T) (*aguitest.Server, chan struct{}) {
	t.Helper()
	agent := aguitest.Start()
	t.Cleanup(agent.Close)
	release := make(chan struct{})
	agent.SetBehaviour(func(in types.RunAgentInput) *aguitest.Answer {
		if in.ThreadID == "hang" {
			<-release
		}
		return nil
	})
	return agent, release
}

// firstRunOrder lists the message ids of device's runs, first attempts only.
func firstRunOrder(agent *aguitest.Server, device string) []string {
	var order []string
	seen := map[string]bool{}
	for _, r := range agent.Runs() {
		if id := r.Messages[0].ID; r.ThreadID == device && !seen[id] {
			seen[id] = true
			order = append(order, id)
		}
	}
	return order
}

func checkOrder(t *testing.T, order []string, n int, format string) {
	t.Helper()
	if len(order) != n {
		t.Errorf("%d distinct runs of the hanging device, want %d", len(order), n)
	}
	for i, id := range order {
		if id != fmt.Sprintf(format, i) {
			t.Fatalf("run %d of the hanging device is %s: out of order", i, id)
		}
	}
}

// Issue 49, fleet mode: a device whose runs hang held its JetStream
// partition (MaxAckPending 1) for retry.max_elapsed per message, so the
// other devices hashed to it waited for minutes. Now a run still going
// after device_hold moves the device aside (its later messages kept in its
// backlog in the KV bucket): the others on the same partition are answered
// promptly, and the hanging device's messages are all handed over, in
// order, once its runs come back.
func TestFleetHangingDeviceDoesNotDelayOthers(t *testing.T) {
	n := brokertest.StartNATS(t, 1) // one partition: every device shares it
	agent, release := hangingAgent(t)
	fb := startFleetBridgeWith(t, n, 1, agent.URL, "b0", func(o *bridge.JetStreamOptions) { o.DeviceHold = 500 * time.Millisecond })
	defer fb.stop()
	cmds := subscribeNATS(t, n)
	pub := publisher(t, n.MQTTURL())
	const hung = 200
	ok, took := hangThenAsk(t, pub, cmds, hung)
	drainers := fb.js.Drainers()
	close(release)
	if !ok {
		t.Fatalf("other devices on the hanging device's partition not all answered within 15s (%d acked)", len(ackedIDs(t, cmds.Messages())))
	}
	t.Logf("20 other devices on the same partition answered in %v while %q hung with %d messages (%d device aside)",
		took.Round(time.Millisecond), "hang", hung, drainers)
	_, ok = cmds.WaitFor(120*time.Second, func(m []brokertest.Message) bool {
		return len(ackedIDs(t, m)) >= hung+20
	})
	if !ok {
		t.Fatalf("the hanging device's messages were not all handled after it came back: %d acked", len(ackedIDs(t, cmds.Messages())))
	}
	checkOrder(t, firstRunOrder(agent, "hang"), hung, "hang-%05d")
	if agent.Overlaps() != 0 {
		t.Errorf("%d runs overlapped another of the same device", agent.Overlaps())
	}
	waitFor(t, 10*time.Second, "the backlog removed", func() bool { return fb.js.Drainers() == 0 })
}

// A bridge that dies while a device's backlog waits: another bridge takes
// the backlog over once its lease lapses and hands all of it over, in
// order, none lost.
func TestFleetBacklogTakenOver(t *testing.T) {
	n := brokertest.StartNATS(t, 2)
	agent, release := hangingAgent(t)
	hold := func(o *bridge.JetStreamOptions) { o.DeviceHold = 300 * time.Millisecond }
	b0 := startFleetBridgeWith(t, n, 2, agent.URL, "b0", hold)
	cmds := subscribeNATS(t, n)
	pub := publisher(t, n.MQTTURL())
	const msgs = 30
	for i := range msgs {
		publish(t, pub, protocol.Topic("hang", protocol.TopicUtterances),
			rawUtterance("hang", fmt.Sprintf("hang-%03d", i), "s", uint64(i+1), "question"))
	}
	waitFor(t, 15*time.Second, "the device moved aside", func() bool { return b0.js.Drainers() == 1 })
	time.Sleep(time.Second) // the rest appended behind it
	b0.crash()
	close(release)
	b1 := startFleetBridgeWith(t, n, 2, agent.URL, "b1", hold)
	defer b1.stop()
	_, ok := cmds.WaitFor(60*time.Second, func(m []brokertest.Message) bool { return len(ackedIDs(t, m)) >= msgs })
	if !ok {
		t.Fatalf("the dead bridge's device backlog not handed over: %d of %d acked", len(ackedIDs(t, cmds.Messages())), msgs)
	}
	checkOrder(t, firstRunOrder(agent, "hang"), msgs, "hang-%03d")
	if agent.Overlaps() != 0 {
		t.Errorf("%d runs overlapped another of the same device", agent.Overlaps())
	}
}
