package bridge_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// rawUtterance is a hand-made utterance, as a stranger on the broker could
// publish it.
func rawUtterance(device, id, store string, seq uint64, text string) []byte {
	b, _ := json.Marshal(protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance, ID: id, Seq: seq,
		DeviceID: device, StoreID: store, CreatedAt: protocol.FormatTime(time.Now())}, Text: text, Lang: "en"})
	return b
}

func ackedIDs(t testing.TB, msgs []brokertest.Message) map[string]bool {
	ids := map[string]bool{}
	for _, c := range commands(t, msgs) {
		if c.Type == protocol.CmdAck {
			for _, id := range c.IDs {
				ids[id] = true
			}
		}
	}
	return ids
}

// Issue 49: a message id the JetStream KV bucket cannot hold as a key ("x.",
// "a..b", ".x") is parked at once with a reason, never retried, and the
// other devices of its partition keep being answered.
func TestNATSUnstorableIDParkedPartitionFlows(t *testing.T) {
	const partitions = 1 // every device on the one partition
	n := brokertest.StartNATS(t, partitions)
	agent := aguitest.Start()
	defer agent.Close()
	cmds := subscribeNATS(t, n)
	fb := startFleetBridge(t, n, partitions, agent.URL, "kv-bridge")
	defer fb.stop()
	pub := publisher(t, n.MQTTURL())
	bad := []string{"x.", ".x", "a..b"}
	for i, id := range bad {
		publish(t, pub, fmt.Sprintf("agora/v1/bad-%d/utterances", i), rawUtterance(fmt.Sprintf("bad-%d", i), id, "s", 1, "hello"))
	}
	var want []string
	for i := range 8 {
		id := fmt.Sprintf("019c0000-0000-7000-8000-%012d", 4900+i)
		want = append(want, id)
		publish(t, pub, fmt.Sprintf("agora/v1/good-%d/utterances", i), rawUtterance(fmt.Sprintf("good-%d", i), id, "s", 1, "question"))
	}
	_, ok := cmds.WaitFor(20*time.Second, func(m []brokertest.Message) bool {
		got := ackedIDs(t, m)
		for _, id := range want {
			if !got[id] {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("the other devices of the partition were not all answered: acked %v; nats log: %s", ackedIDs(t, cmds.Messages()), n.Log())
	}
	var dls []bridge.DeadLetter
	waitFor(t, 10*time.Second, "a dead letter for each unstorable id", func() bool {
		dls, _ = fb.js.Store().DeadLetters(0)
		return len(dls) >= len(bad)
	})
	for _, dl := range dls {
		if !strings.Contains(dl.Reason, "id") || !strings.HasPrefix(dl.DeviceID, "bad-") {
			t.Errorf("dead letter %s/%s: reason %q", dl.DeviceID, dl.ID, dl.Reason)
		}
	}
}

// rawStatus is a live status of a device store with outbox entries waiting.
func rawStatus(device, store string, outbox int) []byte {
	b, _ := json.Marshal(protocol.StatusMessage{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeStatus,
		ID: fmt.Sprintf("st-%d", time.Now().UnixNano()), DeviceID: device, StoreID: store, CreatedAt: protocol.FormatTime(time.Now())},
		Mode: "feedback", Outbox: outbox, Online: true, UpdatedAt: protocol.FormatTime(time.Now())})
	return b
}

// Issue 49: one forged utterance with the device's store_id (it is in the
// retained status) and seq 999999999 used to make the bridge park every
// later real message of that device as seq_regression, for good. The jump
// is parked with its reason and the real messages go on; a jump within the
// allowance that did get through is undone by the operator's reset-seq,
// requested while the bridge runs.
func TestForgedSeqJumpParkedAndResetSeq(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	const dev, store = "seq-1", "store-a"
	cmds := broker.Subscribe(t, "agora/v1/"+dev+"/commands")
	pub := publisher(t, broker.URL())
	topic := protocol.Topic(dev, protocol.TopicUtterances)
	publish(t, pub, protocol.Topic(dev, protocol.TopicStatus), rawStatus(dev, store, 3))
	outcome := func(id string) string {
		var got string
		waitFor(t, 10*time.Second, "the bridge's answer to "+id, func() bool {
			for _, c := range commands(t, cmds.Messages()) {
				if len(c.IDs) == 1 && c.IDs[0] == id && (c.Type == protocol.CmdParked || c.Type == protocol.CmdAck) {
					if got == "" || c.Type == protocol.CmdParked {
						got = c.Type
						if c.Type == protocol.CmdParked {
							got += ": " + c.Reason
						}
					}
				}
			}
			return got != "" && ackedIDs(t, cmds.Messages())[id]
		})
		return got
	}
	for _, tc := range []struct {
		name, id string
		seq      uint64
		reset    bool
		want     string // prefix of the outcome
	}{
		{"a real message", "id-1", 1, false, "ack"},
		{"the forged far-future seq", "id-forged", 999999999, false, "parked: seq_jump"},
		{"the next real message is answered", "id-2", 2, false, "ack"},
		{"a jump within the allowance gets through", "id-near", 50000, false, "ack"},
		{"then a real message looks old", "id-3", 3, false, "parked: seq_regression"},
		{"after reset-seq the real messages go on", "id-4", 4, true, "ack"},
		{"and the sequence is kept again", "id-5", 5, false, "ack"},
		{"a forged status's outbox widens the allowance only so far", "id-forged2", 999999999, false, "parked: seq_jump"},
	} {
		if tc.id == "id-forged2" {
			publish(t, pub, protocol.Topic(dev, protocol.TopicStatus), rawStatus(dev, store, 2000000000))
			time.Sleep(200 * time.Millisecond)
		}
		if tc.reset {
			if _, err := bridge.RequestResetSeq(h.stateDir, dev); err != nil {
				t.Fatal(err)
			}
		}
		publish(t, pub, topic, rawUtterance(dev, tc.id, store, tc.seq, "question "+tc.id))
		if got := outcome(tc.id); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %s…", tc.name, got, tc.want)
		}
	}
	dls, err := bridge.ReadDeadLetterFiles(h.stateDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var jump bool
	for _, dl := range dls {
		jump = jump || dl.ID == "id-forged" && strings.HasPrefix(dl.Reason, "seq_jump")
	}
	if !jump {
		t.Errorf("no seq_jump dead letter for the forged message: %+v", dls)
	}
}

// Issue 49: a dead letter of a 64-byte device id and a 128-character
// message id got a 262-byte file name, which the file system refused, so
// agora-bridge deadletters could not list it while the bridge ran (and the
// commit failed, again and again). Its file name is now bounded.
func TestLongDeadLetterNameListable(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	dev := strings.Repeat("d", 64)
	id := strings.Repeat("i", 128)
	cmds := broker.Subscribe(t, "agora/v1/"+dev+"/commands")
	pub := publisher(t, broker.URL())
	topic := protocol.Topic(dev, protocol.TopicUtterances)
	publish(t, pub, topic, rawUtterance(dev, "first", "s", 1, "a real question"))
	publish(t, pub, topic, rawUtterance(dev, id, "s", 999999999, "forged"))
	if _, ok := cmds.WaitFor(15*time.Second, func(m []brokertest.Message) bool { return ackedIDs(t, m)[id] }); !ok {
		t.Fatalf("the message was not parked and acked\n%s", h.log.String())
	}
	dls, err := bridge.ReadDeadLetterFiles(h.stateDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].DeviceID != dev || dls[0].ID != id {
		t.Fatalf("dead letter files: %+v", dls)
	}
	ents, _ := os.ReadDir(bridge.DeadLetterDir(h.stateDir))
	for _, e := range ents {
		if len(e.Name()) > 200 {
			t.Errorf("file name of %d bytes: %s", len(e.Name()), e.Name())
		}
	}
}

// The forged far-future seq on nats-server (the fleet's KV store): parked,
// and the device's real messages go on.
func TestNATSForgedSeqJumpParked(t *testing.T) {
	n := brokertest.StartNATS(t, 2)
	agent := aguitest.Start()
	defer agent.Close()
	cmds := subscribeNATS(t, n)
	fb := startFleetBridge(t, n, 2, agent.URL, "seq-bridge")
	defer fb.stop()
	pub := publisher(t, n.MQTTURL())
	const dev, store = "seq-n", "store-n"
	topic := protocol.Topic(dev, protocol.TopicUtterances)
	for _, tc := range []struct {
		id   string
		seq  uint64
		want string
	}{{"n-1", 1, "ack"}, {"n-forged", 999999999, "parked: seq_jump"}, {"n-2", 2, "ack"}} {
		publish(t, pub, topic, rawUtterance(dev, tc.id, store, tc.seq, "question "+tc.id))
		if got := outcomeOf(t, cmds, tc.id, 15*time.Second); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %s…", tc.id, got, tc.want)
		}
	}
	if err := fb.js.Store().ResetSeq(dev); err != nil {
		t.Fatal(err)
	}
	if ds, _ := fb.js.Store().Device(dev); ds.StoreSeq != 0 || ds.LastSeq != 0 {
		t.Errorf("after ResetSeq: %+v", ds)
	}
}
