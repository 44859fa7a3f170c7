package bridge_test

import (
	"encoding/json"
	"fmt"
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
