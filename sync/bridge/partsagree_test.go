package bridge_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// rawPart is part index of n of batch id, holding the notes named, as a
// device (or a stranger) could publish it; count is the whole batch's
// messageCount.
func rawPart(device, id string, seq uint64, index, n, count int, notes ...string) []byte {
	items := make([]protocol.Item, len(notes))
	for i, note := range notes {
		items[i] = protocol.Item{ID: "note-" + note, Text: "note " + note, Lang: "en"}
	}
	b, _ := json.Marshal(protocol.Batch{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeBatch, ID: id, Seq: seq,
		DeviceID: device, StoreID: "s", CreatedAt: protocol.FormatTime(time.Now())}, Count: len(items), Items: items,
		Context: protocol.BatchContext{IsOfflineBatch: true, MessageCount: count}, Part: &protocol.BatchPart{Index: index, Of: n}})
	return b
}

// outcomeOf waits for the bridge's last word on message id: "ack" or
// "parked: <reason>".
func outcomeOf(t *testing.T, sub *brokertest.Subscriber, id string, timeout time.Duration) string {
	t.Helper()
	got := ""
	waitFor(t, timeout, "the bridge's answer to "+id, func() bool {
		got = ""
		for _, c := range commands(t, sub.Messages()) {
			if len(c.IDs) == 1 && c.IDs[0] == id {
				switch {
				case c.Type == protocol.CmdParked:
					got = "parked: " + c.Reason
				case c.Type == protocol.CmdAck && got == "":
					got = "ack"
				}
			}
		}
		return got != "" && ackedIDs(t, sub.Messages())[id]
	})
	return got
}

// Issue 49: parts are joined only when they agree, and nothing kept is
// dropped until the whole batch is run or parked whole.
func TestPartsJoinedOnlyWhenTheyAgree(t *testing.T) {
	t.Run("mosquitto", func(t *testing.T) {
		broker := brokertest.Start(t)
		agent := aguitest.Start()
		defer agent.Close()
		h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
		partsAgree(t, agent, broker.URL(), broker.Subscribe(t, "agora/v1/+/commands"), h.store,
			func() ([]bridge.DeadLetter, error) { return bridge.ReadDeadLetterFiles(h.stateDir, 0) })
	})
	t.Run("nats", func(t *testing.T) {
		n := brokertest.StartNATS(t, 2)
		agent := aguitest.Start()
		defer agent.Close()
		cmds := subscribeNATS(t, n)
		fb := startFleetBridge(t, n, 2, agent.URL, "parts-bridge")
		defer fb.stop()
		partsAgree(t, agent, n.MQTTURL(), cmds, fb.js.Store(), func() ([]bridge.DeadLetter, error) { return fb.js.Store().DeadLetters(0) })
	})
}

func partsAgree(t *testing.T, agent *aguitest.Server, brokerURL string, cmds *brokertest.Subscriber, store bridge.Store,
	deadLetters func() ([]bridge.DeadLetter, error)) {
	pub := publisher(t, brokerURL)
	type msg struct {
		topic   string
		payload []byte
	}
	for i, tc := range []struct {
		name  string
		msgs  func(dev string) []msg
		want  string // outcome prefix
		notes string // the batch run's text ("" when not run)
		dead  []string
	}{
		{"the same part twice is one part", func(dev string) []msg {
			p1 := rawPart(dev, dev+"b", 10, 1, 2, 2, "a")
			return []msg{{"batches", p1}, {"batches", p1}, {"batches", rawPart(dev, dev+"b", 10, 2, 2, 2, "b")}}
		}, "ack", "note a\nnote b", nil},
		{"a part sent again with other contents", func(dev string) []msg {
			return []msg{{"batches", rawPart(dev, dev+"b", 10, 1, 2, 2, "a")}, {"batches", rawPart(dev, dev+"b", 10, 1, 2, 2, "forged")}}
		}, "parked: batch_part_conflict", "", []string{"note a", "note forged"}},
		{"a note repeated across parts", func(dev string) []msg {
			return []msg{{"batches", rawPart(dev, dev+"b", 10, 1, 2, 3, "a", "b")}, {"batches", rawPart(dev, dev+"b", 10, 2, 2, 3, "b")}}
		}, "parked: batch_part: note", "", []string{"note a", "note b"}},
		{"a late last part after a newer message", func(dev string) []msg {
			return []msg{{"batches", rawPart(dev, dev+"b", 10, 1, 2, 2, "a")},
				{"utterances", rawUtterance(dev, dev+"newer", "s", 11, "a newer question")},
				{"batches", rawPart(dev, dev+"b", 10, 2, 2, 2, "b")}}
		}, "ack", "note a\nnote b", nil},
	} {
		dev := fmt.Sprintf("agree-%d", i)
		for _, m := range tc.msgs(dev) {
			publish(t, pub, protocol.Topic(dev, m.topic), m.payload)
			if m.topic == "utterances" {
				outcomeOf(t, cmds, dev+"newer", 10*time.Second)
			}
		}
		got := outcomeOf(t, cmds, dev+"b", 10*time.Second)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %s…", tc.name, got, tc.want)
		}
		var ran string
		for _, r := range agent.Runs() {
			if r.ForwardedProps.(map[string]any)["deviceId"] == dev && r.Messages[0].ID == dev+"b" {
				ran = aguitest.UserText(r)
			}
		}
		if ran != tc.notes {
			t.Errorf("%s: batch run %q, want %q", tc.name, ran, tc.notes)
		}
		if tc.dead != nil {
			dls, err := deadLetters()
			if err != nil {
				t.Fatal(err)
			}
			var payload string
			for _, dl := range dls {
				if dl.DeviceID == dev && dl.ID == dev+"b" {
					payload = string(dl.Payload)
				}
			}
			for _, w := range tc.dead {
				if !strings.Contains(payload, w) {
					t.Errorf("%s: dead letter %q lacks %q", tc.name, payload, w)
				}
			}
		}
		if pb, found, _ := store.PendingBatch(dev, dev+"b"); found {
			t.Errorf("%s: parts still kept: %+v", tc.name, pb)
		}
	}
}

// Issue 49: parts whose batch never completes were kept forever. They
// expire (limits.part_ttl) into a dead letter of their own (reason
// batch_incomplete, listed), without marking the batch: a device that comes
// back and re-sends the whole batch still gets it run. A batch whose parts
// add up to more than limits.max_batch_bytes is parked at once, not joined.
// Other devices are answered meanwhile.
func TestIncompleteAndOversizeBatchesParked(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridgeWith(t, broker.URL(), agent.URL, fastRetry, "", func(o *bridge.Options) {
		o.PartTTL = time.Second
		o.MaxBatchBytes = 4 << 10
	}, bridge.MQTTOptions{})
	pub := publisher(t, broker.URL())
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	for i := range 20 {
		dev := fmt.Sprintf("inc-%02d", i)
		publish(t, pub, protocol.Topic(dev, "batches"), rawPart(dev, dev+"b", 10, 1, 3, 3, "first"))
	}
	big := strings.Repeat("x", 3000)
	publish(t, pub, protocol.Topic("huge", "batches"), rawPart("huge", "hugeb", 10, 1, 3, 3, big))
	publish(t, pub, protocol.Topic("huge", "batches"), rawPart("huge", "hugeb", 10, 2, 3, 3, big))
	publish(t, pub, protocol.Topic("honest", "utterances"), rawUtterance("honest", "q", "s", 1, "a question"))
	if got := outcomeOf(t, cmds, "q", 10*time.Second); got != "ack" {
		t.Errorf("honest device: %q", got)
	}
	if got := outcomeOf(t, cmds, "hugeb", 10*time.Second); !strings.HasPrefix(got, "parked: batch_too_large") {
		t.Fatalf("oversize batch: %q", got)
	}
	waitFor(t, 15*time.Second, "every incomplete batch parked", func() bool {
		pend, _ := h.store.Pending(0)
		return len(pend) == 0
	})
	dls, err := bridge.ReadDeadLetterFiles(h.stateDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, dl := range dls {
		reason, _, _ := strings.Cut(dl.Reason, ":")
		reasons[reason]++
		if reason == "batch_incomplete" && !strings.Contains(string(dl.Payload), "note first") {
			t.Errorf("incomplete batch of %s parked without its part: %s", dl.DeviceID, dl.Payload)
		}
	}
	if reasons["batch_incomplete"] != 20 || reasons["batch_too_large"] != 1 {
		t.Errorf("dead letters by reason: %v", reasons)
	}
	for _, c := range commands(t, cmds.Messages()) {
		if c.Type == protocol.CmdParked && strings.HasPrefix(c.Reason, "batch_incomplete") {
			t.Errorf("device told its incomplete batch was parked: %+v", c)
		}
	}
	// inc-00 comes back and re-sends its batch whole: it runs.
	dev := "inc-00"
	for i := 1; i <= 3; i++ {
		publish(t, pub, protocol.Topic(dev, "batches"), rawPart(dev, dev+"b", 10, i, 3, 3, fmt.Sprint("n", i)))
	}
	if got := outcomeOf(t, cmds, dev+"b", 10*time.Second); got != "ack" {
		t.Errorf("the batch re-sent whole after its parts expired: %q, want ack", got)
	}
}

// Issue 49: a batch whose answer the AG-UI client cannot take (an SSE line
// over its MaxEventBytes: the graph echoing a huge batch in its state) was
// retried for retry.max_elapsed, each attempt another graph run. It is
// parked after the first.
func TestAnswerTooLargeParkedNotRetried(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	agent.SetBehaviour(func(types.RunAgentInput) *aguitest.Answer {
		return &aguitest.Answer{Written: strings.Repeat("long answer ", 500)}
	})
	retry := fastRetry
	retry.MaxElapsed, retry.RejectAttempts = 5*time.Second, 1
	startBridgeWith(t, broker.URL(), agent.URL, retry, "", func(o *bridge.Options) {
		c := agui.New(agent.URL, 4, 10*time.Second)
		c.MaxEventBytes = 1 << 10
		o.Agent = c
	}, bridge.MQTTOptions{})
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	pub := publisher(t, broker.URL())
	publish(t, pub, protocol.Topic("big-answer", "utterances"), rawUtterance("big-answer", "q-big", "s", 1, "tell me everything"))
	got := outcomeOf(t, cmds, "q-big", 10*time.Second)
	if !strings.HasPrefix(got, "parked: rejected") || !strings.Contains(got, "too long") {
		t.Errorf("outcome %q, want parked as rejected (SSE line too long)", got)
	}
	if n := len(agent.Runs()); n != 1 {
		t.Errorf("%d graph runs, want 1", n)
	}
}
