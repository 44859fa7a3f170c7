package bridge_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
)

// fleetBridge is one in-process bridge in JetStream mode.
type fleetBridge struct {
	js     *bridge.JetStream
	mq     *bridge.MQTT
	cancel context.CancelFunc
	done   chan struct{}
}

func startFleetBridge(t *testing.T, n *brokertest.NATS, partitions int, agentURL, name string) *fleetBridge {
	t.Helper()
	return startFleetBridgeWith(t, n, partitions, agentURL, name, nil)
}

// startFleetBridgeWith is startFleetBridge with JetStream options changed
// by opt.
func startFleetBridgeWith(t *testing.T, n *brokertest.NATS, partitions int, agentURL, name string, opt func(*bridge.JetStreamOptions)) *fleetBridge {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	jo := bridge.JetStreamOptions{URL: n.URL(), Partitions: partitions, AckWait: 2 * time.Second, Logger: logger}
	if opt != nil {
		opt(&jo)
	}
	js, err := bridge.ConnectJetStream(jo)
	if err != nil {
		t.Fatal(err)
	}
	mq, err := bridge.NewMQTT(bridge.MQTTOptions{BrokerURL: n.MQTTURL(), ClientID: name, NoSubscribe: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bridge.New(bridge.Options{Agent: agui.New(agentURL, 32, 10*time.Second), Store: js.Store(), Publisher: mq,
		Logger: logger, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fb := &fleetBridge{js: js, mq: mq, cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = mq.Run(ctx, nil, nil) }()
	go func() {
		defer wg.Done()
		_ = js.Run(ctx, func(ctx context.Context, topic string, payload []byte) error {
			return b.Handle(ctx, topic, payload, nil)
		})
	}()
	go func() { wg.Wait(); js.Close(); close(fb.done) }()
	waitFor(t, 10*time.Second, "bridge MQTT publisher", mq.Connected)
	return fb
}

// crash drops the bridge's connections without a goodbye (no Nak, no
// ack): what the broker sees of a kill -9.
func (fb *fleetBridge) crash() {
	fb.js.Close()
	fb.cancel()
	<-fb.done
}

func (fb *fleetBridge) stop() {
	fb.cancel()
	<-fb.done
}

// Three bridges share the partitions of a nats-server that the devices'
// real uplinks talk MQTT to; one bridge crashes mid-run and comes back.
// Every message is handed over once, in order per device, with one reply
// and one ack each.
func TestFleetJetStreamFailover(t *testing.T) {
	const partitions, devices, perDevice = 8, 12, 8
	n := brokertest.StartNATS(t, partitions)
	agent := aguitest.Start()
	defer agent.Close()
	agent.Idempotent = true
	agent.Delay = 100 * time.Millisecond
	cmds := subscribeNATS(t, n)
	bridges := []*fleetBridge{
		startFleetBridge(t, n, partitions, agent.URL, "b0"),
		startFleetBridge(t, n, partitions, agent.URL, "b1"),
		startFleetBridge(t, n, partitions, agent.URL, "b2"),
	}
	defer func() {
		for _, b := range bridges {
			b.stop()
		}
	}()
	devs := make([]*device, devices)
	want := map[string][]string{}
	for i := range devs {
		devs[i] = newDevice(t, fmt.Sprintf("dev-%02d", i), n.MQTTURL(), false)
	}
	var entries []buffer.Entry
	for j := range perDevice {
		for i, d := range devs {
			e := d.say(t, fmt.Sprintf("question %d of %s", j, d.id))
			want[devs[i].id] = append(want[devs[i].id], e.ID)
			entries = append(entries, e)
		}
	}
	total := devices * perDevice
	acked := func(m []brokertest.Message) int {
		ids := map[string]bool{}
		for _, c := range commands(t, m) {
			for _, id := range c.IDs {
				ids[id] = true
			}
		}
		return len(ids)
	}
	cmds.WaitFor(30*time.Second, func(m []brokertest.Message) bool { return acked(m) >= total/3 })
	before := len(agent.Runs())
	bridges[1].crash()
	t.Logf("bridge b1 crashed after %d runs", before)
	bridges[1] = startFleetBridge(t, n, partitions, agent.URL, "b1")
	msgs, ok := cmds.WaitFor(60*time.Second, func(m []brokertest.Message) bool { return acked(m) >= total })
	got := commands(t, msgs)
	if !ok {
		t.Fatalf("not all acked: %d commands; nats log: %s", len(got), n.Log())
	}
	replies := map[string]string{}
	for _, c := range got {
		if c.Type == "reply" {
			if prev, ok := replies[c.InReplyTo]; ok && prev != c.Topic {
				t.Errorf("reply to %s on %s and %s", c.InReplyTo, prev, c.Topic)
			}
			replies[c.InReplyTo] = c.Topic
		}
	}
	for _, e := range entries {
		if _, ok := replies[e.ID]; !ok {
			t.Errorf("no reply to %s", e.ID)
		}
	}
	eff := agent.Effective()
	for _, e := range entries {
		if eff[bridge.RunID(e.ID)] != 1 {
			t.Errorf("message %s: %d effective runs, want 1", e.ID, eff[e.ID])
		}
	}
	// Per device, first attempts in seq order.
	order := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range agent.Runs() {
		if seen[r.RunID] {
			continue
		}
		seen[r.RunID] = true
		r.RunID = r.Messages[0].ID
		d := r.ForwardedProps.(map[string]any)["deviceId"].(string)
		order[d] = append(order[d], r.RunID)
	}
	for d, ids := range want {
		if fmt.Sprint(order[d]) != fmt.Sprint(ids) {
			t.Errorf("device %s: run order %v, want %v", d, order[d], ids)
		}
	}
	if agent.Overlaps() != 0 {
		t.Errorf("%d runs overlapped another of the same device", agent.Overlaps())
	}
	t.Logf("%d messages, %d runs posted (%d redelivered/replayed)", total, len(agent.Runs()), len(agent.Runs())-total)
}

func subscribeNATS(t *testing.T, n *brokertest.NATS) *brokertest.Subscriber {
	t.Helper()
	return brokertest.SubscribeURL(t, n.MQTTURL(), "agora/v1/+/commands")
}
