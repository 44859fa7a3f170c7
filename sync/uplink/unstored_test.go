package uplink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// Unstored messages reach a subscriber in the order published, marked
// unstored with seq 0; offline, PublishUnstored says so at once.
func TestPublishUnstored(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-u/utterances")
	c := newClient(t, testOptions("dev-u", b.URL()), newStore(t), nil)
	ctx := context.Background()
	if err := c.PublishUnstored(ctx, "agora/v1/dev-u/utterances", []byte("{}")); !errors.Is(err, ErrOffline) {
		t.Fatalf("before Run: %v, want ErrOffline", err)
	}
	stop := runClient(t, c)
	waitUntil(t, 10*time.Second, "online", c.Online)
	const n = 20
	for i := range n {
		topic, payload, err := protocol.RenderUnstored("dev-u", fmt.Sprintf("u-%02d", i), buffer.Record{Text: fmt.Sprintf("note %d", i)}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.PublishUnstored(ctx, topic, payload); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	msgs, ok := sub.WaitFor(10*time.Second, func(m []brokertest.Message) bool { return len(m) >= n })
	if !ok {
		t.Fatalf("%d of %d arrived", len(msgs), n)
	}
	for i, m := range msgs {
		var u protocol.Utterance
		if err := json.Unmarshal(m.Payload, &u); err != nil {
			t.Fatal(err)
		}
		if u.ID != fmt.Sprintf("u-%02d", i) || !u.Unstored || u.Seq != 0 || m.Retained {
			t.Errorf("message %d: id %s unstored %v seq %d retained %v", i, u.ID, u.Unstored, u.Seq, m.Retained)
		}
	}
	stop()
	if err := c.PublishUnstored(ctx, "agora/v1/dev-u/utterances", []byte("{}")); !errors.Is(err, ErrOffline) {
		t.Fatalf("after Run: %v, want ErrOffline", err)
	}
}
