package bridge_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// Issue 49: one worker per device id ever seen, never freed (3,000 devices
// sending once left 3,000 goroutines for good). A device's worker ends
// after limits.worker_idle, and the goroutines come back to where they
// were.
func TestIdleWorkersEnd(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridgeWith(t, broker.URL(), agent.URL, fastRetry, "", nil, bridge.MQTTOptions{WorkerIdle: 300 * time.Millisecond})
	waitFor(t, 5*time.Second, "no workers", func() bool { return h.mqtt.Workers() == 0 })
	base := runtime.NumGoroutine()
	pub := publisher(t, broker.URL())
	const devices = 500
	peak := 0
	for i := range devices {
		publish(t, pub, fmt.Sprintf("agora/v1/once-%04d/events", i), []byte(`{}`))
		peak = max(peak, h.mqtt.Workers())
	}
	waitFor(t, 20*time.Second, "every worker ended", func() bool { return h.mqtt.Workers() == 0 })
	time.Sleep(200 * time.Millisecond)
	after := runtime.NumGoroutine()
	t.Logf("%d devices: peak %d workers; goroutines %d before, %d after", devices, peak, base, after)
	if peak < 2 {
		t.Errorf("peak %d workers: the test did not start workers", peak)
	}
	if after > base+10 {
		t.Errorf("goroutines %d after the devices went quiet, %d before", after, base)
	}
}

// Issue 49: 1,100 messages of one device whose runs hang used to hold the
// others for minutes (its worker's queue full, paho's delivery waits). The
// device's messages beyond its queue go to its backlog in the bridge's
// state; every other device is answered promptly; the hanging device's
// messages are all handled, in order, once its runs come back.
func TestHangingDeviceDoesNotDelayOthers(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	release := make(chan struct{})
	agent.SetBehaviour(func(in types.RunAgentInput) *aguitest.Answer {
		if in.ThreadID == "hang" {
			<-release
		}
		return nil
	})
	h := startBridgeWith(t, broker.URL(), agent.URL, fastRetry, "", nil, bridge.MQTTOptions{})
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	pub := publisher(t, broker.URL())
	const hung = 1100
	ok, took := hangThenAsk(t, pub, cmds, hung)
	close(release)
	if !ok {
		t.Fatalf("other devices not all answered within 15s while one device hangs with %d messages", hung)
	}
	t.Logf("20 other devices answered in %v while %q hung with %d messages", took.Round(time.Millisecond), "hang", hung)
	_, ok = cmds.WaitFor(120*time.Second, func(m []brokertest.Message) bool {
		got := ackedIDs(t, m)
		return got[fmt.Sprintf("hang-%05d", hung-1)]
	})
	if !ok {
		t.Fatalf("the hanging device's messages were not all handled after it came back")
	}
	var order []string
	for _, r := range agent.Runs() {
		if r.ThreadID == "hang" {
			order = append(order, r.Messages[0].ID)
		}
	}
	if len(order) != hung {
		t.Errorf("%d runs of the hanging device, want %d", len(order), hung)
	}
	for i, id := range order {
		if id != fmt.Sprintf("hang-%05d", i) {
			t.Fatalf("run %d of the hanging device is %s: out of order", i, id)
		}
	}
	_ = h
}

// The backlog is acknowledged to the broker once kept: a bridge stopped
// while a device's backlog waits hands it all over after its restart, in
// order, none lost.
func TestBacklogSurvivesRestart(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	release := make(chan struct{})
	agent.SetBehaviour(func(in types.RunAgentInput) *aguitest.Answer {
		if in.ThreadID == "bk" {
			<-release
		}
		return nil
	})
	state := t.TempDir()
	mq := bridge.MQTTOptions{ClientID: "bridge-backlog"}
	h := startBridgeWith(t, broker.URL(), agent.URL, fastRetry, state, nil, mq)
	cmds := broker.Subscribe(t, "agora/v1/bk/commands")
	pub := publisher(t, broker.URL())
	const n = 100
	for i := range n {
		publish(t, pub, protocol.Topic("bk", protocol.TopicUtterances), rawUtterance("bk", fmt.Sprintf("bk-%03d", i), "s", uint64(i+1), "question"))
	}
	waitFor(t, 10*time.Second, "the device's backlog", func() bool {
		bls, _ := h.store.SpillBacklogs()
		return bls["bk"].Tail-bls["bk"].Head >= n-16-1
	})
	h.stop()
	close(release)
	startBridgeWith(t, broker.URL(), agent.URL, fastRetry, state, nil, mq)
	_, ok := cmds.WaitFor(30*time.Second, func(m []brokertest.Message) bool {
		got := ackedIDs(t, m)
		for i := range n {
			if !got[fmt.Sprintf("bk-%03d", i)] {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("not every message of the backlog handed over after the restart: %d acked", len(ackedIDs(t, cmds.Messages())))
	}
	var order []string
	seen := map[string]bool{}
	for _, r := range agent.Runs() {
		if id := r.Messages[0].ID; !seen[id] {
			seen[id] = true
			order = append(order, id)
		}
	}
	for i, id := range order {
		if id != fmt.Sprintf("bk-%03d", i) {
			t.Fatalf("run %d is %s: out of order", i, id)
		}
	}
}
