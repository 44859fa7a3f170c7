package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// bigBatchNotes is the listen buffer of the large-batch tests: 2,000 notes
// by default (several parts), AGORA_BIG_BATCH_NOTES=10000 for issue 27's
// full size.
func bigBatchNotes(t *testing.T) int {
	if v := os.Getenv("AGORA_BIG_BATCH_NOTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("AGORA_BIG_BATCH_NOTES=%q", v)
		}
		return n
	}
	return 2000
}

func noteText(i int) string {
	return fmt.Sprintf("note %05d: crack in the weld at frame four, north column, level two, photo taken", i)
}

// deviceWith is newDevice with the delivery mode chosen.
func deviceWith(t *testing.T, id, brokerURL, delivery string) *device {
	t.Helper()
	return startDevice(t, uplink.Options{DeviceID: id, BrokerURL: brokerURL, Delivery: delivery, AckTimeout: 60 * time.Second,
		Status: func() protocol.Status { return protocol.Status{Mode: "listen", Version: "test"} }})
}

// A listen buffer far larger than one message reaches the graph as one
// batch run, every note once and in order, under both delivery modes; the
// device's outbox empties, and under delivery: backend only on the
// bridge's ack.
func TestLargeBatchOneRunInOrder(t *testing.T) {
	n := bigBatchNotes(t)
	for _, delivery := range []string{uplink.DeliveryBroker, uplink.DeliveryBackend} {
		t.Run(delivery, func(t *testing.T) {
			broker := brokertest.Start(t)
			agent := aguitest.Start()
			defer agent.Close()
			h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
			cmds := broker.Subscribe(t, "agora/v1/+/commands")
			batches := broker.Subscribe(t, "agora/v1/+/batches")
			dev := deviceWith(t, "big-"+delivery, broker.URL(), delivery)
			for i := range n {
				dev.note(t, noteText(i))
			}
			batch := dev.flush(t)
			after := dev.say(t, "and what about the north column")
			if !agent.WaitRuns(context.Background(), 2) {
				t.Fatalf("%d runs\n%s", len(agent.Runs()), h.log.String())
			}
			waitFor(t, 30*time.Second, "device outbox empty", func() bool { c, _ := dev.store.OutboxCount(); return c == 0 })
			runs := agent.Runs()
			if len(runs) != 2 || runs[0].Messages[0].ID != batch.ID || runs[1].Messages[0].ID != after.ID {
				t.Fatalf("%d runs, want the batch then the utterance", len(runs))
			}
			lines := strings.Split(aguitest.UserText(runs[0]), "\n")
			if len(lines) != n {
				t.Fatalf("batch run has %d notes, want %d", len(lines), n)
			}
			for i, l := range lines {
				if l != noteText(i) {
					t.Fatalf("note %d is %q", i, l)
				}
			}
			ctx := map[string]string{}
			for _, c := range runs[0].Context {
				ctx[c.Description] = c.Value
			}
			if ctx["isOfflineBatch"] != "true" || ctx["messageCount"] != strconv.Itoa(n) {
				t.Errorf("batch context isOfflineBatch=%s messageCount=%s", ctx["isOfflineBatch"], ctx["messageCount"])
			}
			parts := batches.Messages()
			if n >= 2000 && len(parts) < 2 {
				t.Errorf("the batch went as %d message(s), want parts", len(parts))
			}
			for i, m := range parts {
				if len(m.Payload) > protocol.MaxMessageBytes {
					t.Errorf("batch message %d is %d bytes", i, len(m.Payload))
				}
			}
			acked := 0
			for _, c := range commands(t, cmds.Messages()) {
				if c.Type == "ack" && c.IDs[0] == batch.ID {
					acked++
				}
			}
			if acked != 1 {
				t.Errorf("batch acked %d times, want 1", acked)
			}
			// A batch in parts waits for the bridge's ack in both modes.
			wantConfirmed := uint64(1)
			if delivery == uplink.DeliveryBackend {
				wantConfirmed = 2 // and the utterance
			}
			if st := dev.up.Stats(); len(parts) > 1 && st.Confirmed < wantConfirmed {
				t.Errorf("device confirmed %d entries, want %d", st.Confirmed, wantConfirmed)
			}
		})
	}
}

// Parts the bridge took before a restart are kept: the rest completes the
// batch after it, and parts re-sent afterwards run nothing again.
func TestBatchPartsSurviveBridgeRestart(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	pub := publisher(t, broker.URL())
	const dev = "restart-1"
	items := make([]buffer.Record, 3000)
	for i := range items {
		items[i] = buffer.Record{ID: fmt.Sprintf("rec-%05d", i), Seq: uint64(i + 1), Text: noteText(i), Lang: "en"}
	}
	body, _ := json.Marshal(buffer.BatchBody{Items: items, Count: len(items)})
	e := buffer.Entry{ID: "019c0000-0000-7000-8000-00000000b001", Seq: 3001, Kind: buffer.KindBatch, StoreID: "s1",
		CreatedAt: time.Now(), Body: body}
	topic, payloads, err := protocol.RenderParts(dev, e)
	if err != nil || len(payloads) < 3 {
		t.Fatalf("%d parts, %v", len(payloads), err)
	}
	half := len(payloads) / 2
	for _, p := range payloads[:half] {
		publish(t, pub, topic, p)
	}
	waitFor(t, 10*time.Second, "parts kept", func() bool {
		return strings.Count(h.log.String(), "batch part kept") >= half
	})
	h.stop()
	if len(agent.Runs()) != 0 {
		t.Fatalf("a run before the last part")
	}
	h2 := startBridge(t, broker.URL(), agent.URL, fastRetry, h.stateDir)
	for _, p := range payloads[half:] {
		publish(t, pub, topic, p)
	}
	if !agent.WaitRuns(context.Background(), 1) {
		t.Fatalf("no run after the restart\n%s", h2.log.String())
	}
	for _, p := range payloads { // the device re-sending everything
		publish(t, pub, topic, p)
	}
	waitFor(t, 10*time.Second, "re-sent parts seen as duplicates", func() bool {
		return testutil.ToFloat64(h2.m.Messages.WithLabelValues("batch", "duplicate")) >= float64(len(payloads))
	})
	time.Sleep(300 * time.Millisecond)
	runs := agent.Runs()
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	lines := strings.Split(aguitest.UserText(runs[0]), "\n")
	if len(lines) != len(items) || lines[0] != noteText(0) || lines[len(lines)-1] != noteText(len(items)-1) {
		t.Fatalf("joined batch: %d notes", len(lines))
	}
}

// An answer far longer than one command reaches the device as reply parts
// its own parser accepts, in order, together the whole answer.
func TestLongAnswerInParts(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	sentence := "The weld at frame four shows a crack of about two centimetres. "
	long := strings.Repeat(sentence, 200<<10/len(sentence))
	agent.SetBehaviour(func(types.RunAgentInput) *aguitest.Answer { return &aguitest.Answer{Written: long} })
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	dev := deviceWith(t, "long-1", broker.URL(), uplink.DeliveryBackend)
	e := dev.say(t, "tell me everything about the weld")
	// The utterance's own ack: the bridge publishes it after every reply
	// part's PUBACK. (An ack of anything else the device sent may come
	// first and says nothing about the answer.)
	msgs, ok := cmds.WaitFor(20*time.Second, func(m []brokertest.Message) bool {
		for _, c := range commands(t, m) {
			if c.Type == "ack" && slices.Contains(c.IDs, e.ID) {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no ack of %s\n%s", e.ID, h.log.String())
	}
	// Replies are at-least-once and the device keeps one per id: a re-sent
	// part is the same part.
	var text strings.Builder
	parts := 0
	seen := map[string]bool{}
	lastID := ""
	for _, m := range msgs {
		if len(m.Payload) > protocol.MaxCommandBytes {
			t.Errorf("command of %d bytes, over the device's %d", len(m.Payload), protocol.MaxCommandBytes)
		}
		cmd, err := protocol.ParseCommand(dev.id, m.Payload)
		if err != nil {
			t.Fatalf("device refuses a command: %v", err)
		}
		if cmd.Type != protocol.CmdReply || seen[cmd.ID] {
			continue
		}
		seen[cmd.ID] = true
		lastID = cmd.ID
		parts++
		if cmd.Reply.InReplyTo != e.ID || !strings.HasPrefix(cmd.ID, fmt.Sprintf("reply-%s.p%dof", e.ID, parts)) {
			t.Fatalf("reply part %d: id %s in_reply_to %s", parts, cmd.ID, cmd.Reply.InReplyTo)
		}
		text.WriteString(cmd.Reply.Text)
	}
	if parts < 2 || !strings.HasSuffix(lastID, fmt.Sprintf(".p%dof%d", parts, parts)) ||
		strings.Join(strings.Fields(text.String()), " ") != strings.Join(strings.Fields(long), " ") {
		var got []string
		for _, c := range commands(t, msgs) {
			got = append(got, c.Type+" "+c.ID+" "+strings.Join(c.IDs, ","))
		}
		t.Fatalf("%d reply parts, %d of %d bytes; commands seen: %s", parts, text.Len(), len(long), strings.Join(got, "; "))
	}
	waitFor(t, 10*time.Second, "device outbox empty", func() bool { c, _ := dev.store.OutboxCount(); return c == 0 })
	if st := dev.up.Stats(); st.RejectedCommands != 0 {
		t.Errorf("device rejected %d commands", st.RejectedCommands)
	}
}

// (device_id, store_id, seq) identifies a message as well as its id, across
// a restart: the same seq under a new id is not run again but acked, a seq
// going back within a store is refused and parked with its content, and a
// new store starts over.
func TestDedupByStoreAndSeq(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	cmds := broker.Subscribe(t, "agora/v1/seq-1/commands")
	pub := publisher(t, broker.URL())
	msg := func(id, store string, seq uint64, text string) []byte {
		b, _ := json.Marshal(protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance, ID: id, Seq: seq,
			DeviceID: "seq-1", StoreID: store, CreatedAt: protocol.FormatTime(time.Now())}, Text: text, Lang: "en"})
		return b
	}
	acked := func(id string) bool {
		for _, c := range commands(t, cmds.Messages()) {
			if c.Type == "ack" && len(c.IDs) == 1 && c.IDs[0] == id {
				return true
			}
		}
		return false
	}
	const topic = "agora/v1/seq-1/utterances"
	publish(t, pub, topic, msg("id-a", "store-1", 5, "first question"))
	publish(t, pub, topic, msg("id-b", "store-1", 7, "second question"))
	waitFor(t, 10*time.Second, "two acks", func() bool { return acked("id-a") && acked("id-b") })
	h.stop()
	h2 := startBridge(t, broker.URL(), agent.URL, fastRetry, h.stateDir)
	cases := []struct {
		id, store string
		seq       uint64
		runs      int
		parked    bool
	}{
		{"id-a2", "store-1", 5, 2, false}, // same (store, seq), new id: a duplicate
		{"id-c", "store-1", 6, 2, true},   // below 7 under a new id: refused
		{"id-d", "store-2", 1, 3, false},  // a new store starts over
		{"id-e", "store-1", 8, 4, false},  // on from the old store's last seq
	}
	for _, tc := range cases {
		publish(t, pub, topic, msg(tc.id, tc.store, tc.seq, "question "+tc.id))
		waitFor(t, 10*time.Second, "ack of "+tc.id, func() bool { return acked(tc.id) })
		if got := len(agent.Runs()); got != tc.runs {
			t.Errorf("%s: %d runs, want %d", tc.id, got, tc.runs)
		}
		dls, err := h2.store.DeadLetters(0)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, d := range dls {
			found = found || d.ID == tc.id && strings.Contains(string(d.Payload), "question "+tc.id) && strings.Contains(d.Reason, "seq_regression")
		}
		if found != tc.parked {
			t.Errorf("%s: parked %v, want %v (%+v)", tc.id, found, tc.parked, dls)
		}
	}
	// The duplicate got the first answer again, under its first id.
	replies := 0
	for _, c := range commands(t, cmds.Messages()) {
		if c.Type == "reply" && c.ID == "reply-id-a" {
			replies++
		}
	}
	if replies != 2 {
		t.Errorf("reply to id-a sent %d times, want 2", replies)
	}
}

// A message over the limit is parked whole, and listed from the files while
// the bridge holds its database.
func TestOversizeParkedWhole(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	h := startBridge(t, broker.URL(), agent.URL, fastRetry, "")
	pub := publisher(t, broker.URL())
	big := strings.Repeat("very long note ", (protocol.MaxMessageBytes+1000)/15)
	_, p := utterance("over-1", 1, big)
	publish(t, pub, "agora/v1/over-1/utterances", p)
	var dls []bridge.DeadLetter
	waitFor(t, 10*time.Second, "dead letter file", func() bool {
		dls, _ = bridge.ReadDeadLetterFiles(h.stateDir, 0)
		return len(dls) == 1
	})
	if string(dls[0].Payload) != string(p) || !strings.Contains(dls[0].Reason, "oversize") || dls[0].DeviceID != "over-1" {
		t.Errorf("dead letter %s %s, %d of %d bytes", dls[0].DeviceID, dls[0].Reason, len(dls[0].Payload), len(p))
	}
	if len(agent.Runs()) != 0 {
		t.Errorf("an oversize message ran")
	}
}
