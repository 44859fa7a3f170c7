package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/agora/agorad/sync/protocol"
)

// parkRefused keeps a device message the bridge refuses (oversize, seq
// going back, parts that do not add up) as a dead letter with its full
// content, then acknowledges it like any parked message: the device's later
// messages go on, and `agora-bridge deadletters` shows what it said. A
// payload without a usable envelope id is parked under a content hash.
func (b *Bridge) parkRefused(ctx context.Context, device, topic string, env *protocol.Envelope, payload []byte, reason string) error {
	var e protocol.Envelope
	if env != nil {
		e = *env
	} else {
		_ = json.Unmarshal(payload, &e)
	}
	if !validID(e.ID) || e.DeviceID != device {
		sum := sha256.Sum256(payload)
		e = protocol.Envelope{V: protocol.Version, ID: "refused-" + hex.EncodeToString(sum[:12]), DeviceID: device}
	}
	env = &e
	answer := env.Type == protocol.TypeUtterance || env.Type == protocol.TypeBatch
	// An event or a device dead letter (which carries a whole entry and can
	// be larger than a message) is held by the device until acked.
	ackOnly := env.Type == protocol.TypeEvent || env.Type == protocol.TypeDeadLetter
	if rec, found, err := b.o.Store.Get(device, env.ID); err != nil {
		return err
	} else if found {
		switch {
		case answer: // parked before: the device is told again
			return b.finish(ctx, device, *env, rec)
		case ackOnly:
			return b.ackOnly(ctx, device, env.ID)
		}
		return nil
	}
	ds, err := b.o.Store.Device(device)
	if err != nil {
		return err
	}
	now := time.Now()
	rec := Record{Seq: env.Seq, State: StateParked, Reason: reason, At: now}
	dl := &DeadLetter{DeviceID: device, ID: env.ID, Seq: env.Seq, Topic: topic, Payload: payload, Reason: reason, At: now}
	ds.UpdatedAt = now
	if err := b.o.Store.Commit(device, env.ID, rec, ds, dl); err != nil {
		return err
	}
	b.m.Parked.Inc()
	b.log.Error("device message refused and parked as a dead letter", "device", device, "id", env.ID, "seq", env.Seq,
		"bytes", len(payload), "reason", excerptString(reason))
	switch {
	case answer:
		return b.finish(ctx, device, *env, rec)
	case ackOnly:
		return b.ackOnly(ctx, device, env.ID)
	}
	return nil
}

// parkBad keeps bad input from a device's data topics (not JSON, wrong
// version or type, device mismatch, bad id, empty text, counts that do not
// add up) as a dead letter with its full content, under "refused-" and a
// hash of the content (its id cannot be trusted), and answers nothing: a
// copy that comes again is the same dead letter.
func (b *Bridge) parkBad(device, topic string, payload []byte, reason string) error {
	sum := sha256.Sum256(payload)
	id := "refused-" + hex.EncodeToString(sum[:12])
	if _, found, err := b.o.Store.Get(device, id); err != nil || found {
		return err
	}
	ds, err := b.o.Store.Device(device)
	if err != nil {
		return err
	}
	now := time.Now()
	ds.UpdatedAt = now
	dl := &DeadLetter{DeviceID: device, ID: id, Topic: topic, Payload: payload, Reason: reason, At: now}
	if err := b.o.Store.Commit(device, id, Record{State: StateParked, Reason: reason, At: now}, ds, dl); err != nil {
		return err
	}
	b.m.Parked.Inc()
	return nil
}
