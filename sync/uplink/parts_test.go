package uplink

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// A listen batch too large for one message goes out as numbered parts, each
// within protocol.MaxMessageBytes, and (under both delivery modes) stays
// in the outbox after the parts' PUBACKs until the backend acks the batch id.
func TestPartedBatchHeldUntilBackendAck(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	for _, delivery := range []string{DeliveryBroker, DeliveryBackend} {
		t.Run(delivery, func(t *testing.T) {
			b := brokertest.Start(t)
			sub := b.Subscribe(t, "agora/v1/dev-parts/batches")
			st := newStore(t)
			const n = 3000
			for i := range n {
				if _, err := st.AppendListen(buffer.Record{Text: fmt.Sprintf("note %05d about the weld at frame four, north column, level two", i),
					Lang: "en", StartedAt: time.Now(), Source: "typed"}); err != nil {
					t.Fatal(err)
				}
			}
			e, _, err := st.FlushListen(false)
			if err != nil {
				t.Fatal(err)
			}
			opts := testOptions("dev-parts", b.URL())
			opts.Delivery, opts.AckTimeout = delivery, time.Minute
			c := newClient(t, opts, st, nil)
			runClient(t, c)
			waitUntil(t, 10*time.Second, "batch published", func() bool { return c.Stats().Published >= 1 })
			msgs, _ := sub.WaitFor(10*time.Second, func(m []brokertest.Message) bool {
				if len(m) == 0 {
					return false
				}
				var last protocol.Batch
				_ = json.Unmarshal(m[len(m)-1].Payload, &last)
				return last.Part == nil || last.Part.Index == last.Part.Of
			})
			if len(msgs) < 2 {
				t.Fatalf("%d batch messages, want parts", len(msgs))
			}
			total := 0
			for i, m := range msgs {
				var bt protocol.Batch
				if err := json.Unmarshal(m.Payload, &bt); err != nil {
					t.Fatal(err)
				}
				if len(m.Payload) > protocol.MaxMessageBytes || bt.ID != e.ID || bt.Part == nil || bt.Part.Index != i+1 || bt.Part.Of != len(msgs) {
					t.Fatalf("message %d: %d bytes, id %s, part %+v", i, len(m.Payload), bt.ID, bt.Part)
				}
				total += bt.Count
			}
			if total != n {
				t.Fatalf("parts carry %d notes, want %d", total, n)
			}
			time.Sleep(300 * time.Millisecond)
			if c, _ := st.OutboxCount(); c != 1 {
				t.Fatalf("outbox %d after the PUBACKs: the batch was deleted before the backend confirmed it", c)
			}
			body, _ := json.Marshal(map[string]any{"id": "ack-parts", "type": "ack", "ids": []string{e.ID}})
			publish(t, b, "agora/v1/dev-parts/commands", string(body))
			waitUntil(t, 10*time.Second, "outbox empty after the ack", func() bool { c, _ := st.OutboxCount(); return c == 0 })
			if s := c.Stats(); s.Confirmed != 1 {
				t.Errorf("confirmed %d, want 1", s.Confirmed)
			}
		})
	}
}
