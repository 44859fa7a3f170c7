package bridge_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// Under both delivery modes every entry the device holds for the bridge's
// word is confirmed: an event (held under delivery: backend), and a batch
// holding a note too large for any message, which the device sends as a
// dead letter: the bridge keeps it whole and acks it. Before, neither was
// ever acked: the device published them again every ack_timeout, for good.
func TestEventsAndDeviceDeadLettersAcked(t *testing.T) {
	for _, delivery := range []string{uplink.DeliveryBroker, uplink.DeliveryBackend} {
		t.Run(delivery, func(t *testing.T) {
			broker := brokertest.Start(t)
			agent := aguitest.Start()
			defer agent.Close()
			h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
			dev := startDevice(t, uplink.Options{DeviceID: "dl-" + delivery, BrokerURL: broker.URL(), Delivery: delivery,
				AckTimeout: 500 * time.Millisecond,
				Status:     func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "test"} }})
			if _, err := dev.store.Enqueue(buffer.LaneControl, buffer.KindEvent, false, []byte(`{"event":"storage_full","detail":{"refused":1}}`)); err != nil {
				t.Fatal(err)
			}
			huge := strings.Repeat("een heel lange notitie ", protocol.MaxMessageBytes/23+10)
			dev.note(t, huge)
			batch := dev.flush(t)
			after := dev.say(t, "and the next question")
			if !waitUntilOK(15*time.Second, func() bool { n, _ := dev.store.OutboxCount(); return n == 0 }) {
				es, _ := dev.store.Pending(10)
				for _, e := range es {
					t.Logf("left: %s %s seq %d", e.Kind, e.ID, e.Seq)
				}
				t.Fatalf("outbox not empty; bridge log:\n%s", h.log.String())
			}
			dls, err := h.store.DeadLetters(0)
			if err != nil {
				t.Fatal(err)
			}
			var kept bool
			for _, d := range dls {
				// Larger than a message itself (it carries the entry in
				// base64): parked as oversize, whole.
				kept = kept || d.ID == batch.ID && strings.Contains(d.Reason, "oversize") && len(d.Payload) > len(huge)
			}
			if !kept {
				t.Errorf("the device's dead letter %s is not kept whole at the bridge: %+v", batch.ID, dls)
			}
			// (Before, the outbox never emptied: the event and the dead
			// letter were published again every ack_timeout.)
			want := uint64(1) // the batch's dead letter
			if delivery == uplink.DeliveryBackend {
				want = 3 // and the event and the question
			}
			if s := dev.up.Stats(); s.Unconfirmed != 0 || s.Confirmed != want {
				t.Errorf("device stats %+v: want %d confirmed by the bridge", s, want)
			}
			if runs := agent.Runs(); len(runs) != 1 || runs[0].Messages[0].ID != after.ID {
				t.Errorf("runs %+v, want only the question", runs)
			}
		})
	}
}

func waitUntilOK(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// A device dead letter and an event (within a message) are each acked
// once; the dead letter is kept with its content and the device's reason,
// also when it comes again.
func TestDeviceDeadLetterKeptAndAcked(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	pub := publisher(t, broker.URL())
	now := protocol.FormatTime(time.Now())
	dl := []byte(`{"v":1,"type":"dead_letter","id":"019c0000-0000-7000-8000-0000000000d1","seq":7,"device_id":"dev-dl","created_at":"` + now +
		`","offline":false,"kind":"utterance","reason":"render utterance entry: body: bad","body_base64":"eyJ0ZXh0Ijo="}`)
	ev := []byte(`{"v":1,"type":"event","id":"019c0000-0000-7000-8000-0000000000e1","seq":8,"device_id":"dev-dl","created_at":"` + now +
		`","offline":false,"event":"storage_full","detail":{"refused":2}}`)
	publish(t, pub, "agora/v1/dev-dl/events", dl)
	publish(t, pub, "agora/v1/dev-dl/events", ev)
	publish(t, pub, "agora/v1/dev-dl/events", dl) // again: acked again, kept once
	msgs, ok := cmds.WaitFor(10*time.Second, func(m []brokertest.Message) bool { return count(commands(t, m), "ack") >= 3 })
	if !ok {
		t.Fatalf("acks %+v\n%s", commands(t, msgs), h.log.String())
	}
	acked := map[string]int{}
	for _, c := range commands(t, msgs) {
		if c.Type == protocol.CmdAck {
			acked[c.IDs[0]]++
		}
	}
	if acked["019c0000-0000-7000-8000-0000000000d1"] != 2 || acked["019c0000-0000-7000-8000-0000000000e1"] != 1 {
		t.Errorf("acks by id %v", acked)
	}
	dls, err := h.store.DeadLetters(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].ID != "019c0000-0000-7000-8000-0000000000d1" || string(dls[0].Payload) != string(dl) ||
		dls[0].Reason != "device dead letter: render utterance entry: body: bad" {
		t.Errorf("dead letters %+v", dls)
	}
}
