package bridge_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// An utterance a device with a failed store sent unstored (seq 0, no
// store_id) is handed over and acknowledged; the same id delivered later as
// a stored entry (the failed commit reached the device's log after all) is
// a duplicate, not run again; the device's sequence goes on after it.
func TestUnstoredUtterance(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/uns-1/commands")
	pub := publisher(t, broker.URL())
	msg := func(id, store string, seq uint64, unstored bool) []byte {
		b, _ := json.Marshal(protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance, ID: id, Seq: seq,
			DeviceID: "uns-1", StoreID: store, CreatedAt: protocol.FormatTime(time.Now()), Unstored: unstored},
			Text: "question " + id, Lang: "en"})
		return b
	}
	acks := func(id string) (n int) {
		for _, c := range commands(t, cmds.Messages()) {
			if c.Type == "ack" && len(c.IDs) == 1 && c.IDs[0] == id {
				n++
			}
		}
		return n
	}
	const topic = "agora/v1/uns-1/utterances"
	for _, tc := range []struct {
		name, id, store string
		seq             uint64
		unstored        bool
		runs, acks      int
	}{
		{"stored before the failure", "id-a", "store-1", 5, false, 1, 1},
		{"sent unstored", "id-u", "", 0, true, 2, 1},
		{"the same, delivered stored later", "id-u", "store-1", 6, false, 2, 2},
		{"the sequence goes on", "id-b", "store-1", 7, false, 3, 1},
	} {
		publish(t, pub, topic, msg(tc.id, tc.store, tc.seq, tc.unstored))
		waitFor(t, 10*time.Second, tc.name+": ack", func() bool { return acks(tc.id) >= tc.acks })
		if got := len(agent.Runs()); got != tc.runs {
			t.Errorf("%s: %d runs, want %d", tc.name, got, tc.runs)
		}
	}
}
