package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/agora/agorad/sync/protocol"
)

// parkedNotice is the parked command telling the device that message id
// was refused and parked here as a dead letter (with its content), and why.
// It goes before the ack of the same id: a device that knows parked keeps
// the entry and says so (the ack then does not delete it); an older device
// refuses the unknown command and deletes the entry on the ack, as before.
func parkedNotice(id, reason string) []byte {
	if len(reason) > protocol.MaxReasonBytes {
		cut := protocol.MaxReasonBytes - len("…")
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + "…"
	}
	if reason == "" {
		reason = "parked"
	}
	b, _ := json.Marshal(map[string]any{"id": "parked-" + id, "type": protocol.CmdParked, "ids": []string{id}, "reason": reason})
	return b
}

// ackOnly confirms a device message that needs no run (an event): the
// device holds events until the backend acks them under delivery: backend.
func (b *Bridge) ackOnly(ctx context.Context, device, id string) error {
	ack, _ := json.Marshal(map[string]any{"id": "ack-" + id, "type": protocol.CmdAck, "ids": []string{id}})
	if err := b.o.Publisher.Publish(ctx, protocol.Topic(device, protocol.TopicCommands), ack); err != nil {
		return fmt.Errorf("publish ack of %s/%s: %w", device, id, err)
	}
	return nil
}

// keepDeviceDeadLetter parks a dead letter the device sent (an entry it
// could not render, a note too large for any message) with its full
// content, here too, then acks it: the device holds it until then (every
// batch, and under delivery: backend everything), and the operator finds
// it in agora-bridge deadletters.
func (b *Bridge) keepDeviceDeadLetter(ctx context.Context, device, topic string, env protocol.Envelope, payload []byte, reason string) error {
	return b.parkRefused(ctx, device, topic, &env, payload, "device dead letter: "+reason) // acks it
}
