package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"

	"github.com/agora/agorad/sync/protocol"
)

// data hands an utterance or batch over to the graph, once.
func (b *Bridge) data(ctx context.Context, device, name, topic string, payload []byte, onWait func()) error {
	var (
		env     protocol.Envelope
		refused string // "reason: what" of bad input
		utt     protocol.Utterance
		batch   protocol.Batch
		typ     string
	)
	if name == protocol.TopicUtterances {
		typ = protocol.TypeUtterance
		env, refused = b.envelope(device, typ, topic, payload, &utt)
		if refused == "" && strings.TrimSpace(utt.Text) == "" {
			refused = b.bad("empty_text", "utterance without text", topic, payload)
		}
	} else {
		typ = protocol.TypeBatch
		env, refused = b.envelope(device, typ, topic, payload, &batch)
		if refused == "" && (len(batch.Items) == 0 || batch.Count != len(batch.Items)) {
			refused = b.bad("batch_count", fmt.Sprintf("count %d with %d items", batch.Count, len(batch.Items)), topic, payload)
		}
		if err := protocol.ValidatePart(batch); refused == "" && err != nil {
			refused = b.bad("batch_part", err.Error(), topic, payload)
		}
	}
	if refused != "" {
		b.counted(ctx, device, typ, env, "invalid")
		return b.parkBad(device, topic, payload, refused)
	}
	rec, found, err := b.o.Store.Get(device, env.ID)
	if err != nil {
		return err
	}
	if found {
		// Redelivered (the device's at-least-once, or our crash before the
		// transport ack): the graph is not asked again; the answer and the
		// ack are re-sent in case they were lost (once per batch: on its
		// last part).
		b.counted(ctx, device, typ, env, "duplicate")
		if batch.Part != nil && batch.Part.Index != batch.Part.Of {
			return nil
		}
		b.dropStreamed(device, env.ID, rec)
		return b.finish(ctx, device, env, rec)
	}
	if env.StoreID != "" {
		// The same (store_id, seq) under another id: the device re-sent
		// an entry whose id it lost. Not run again; the stored answer is
		// re-sent and the new id acknowledged.
		orig, dup, err := b.o.Store.BySeq(device, env.StoreID, env.Seq)
		if err != nil {
			return err
		}
		if dup {
			rec, found, err := b.o.Store.Get(device, orig)
			if err != nil {
				return err
			}
			if found {
				b.counted(ctx, device, typ, env, "duplicate")
				b.log.Warn("same store_id and seq as a message handed over before, under a new id; not run again",
					"device", device, "id", env.ID, "first_id", orig, "store_id", env.StoreID, "seq", env.Seq)
				if batch.Part != nil && batch.Part.Index != batch.Part.Of {
					return nil
				}
				return b.finish(ctx, device, env, rec)
			}
		}
	}
	ds, err := b.o.Store.Device(device)
	if err != nil {
		return err
	}
	// A later part of a batch whose first part was taken is not checked
	// again: its seq is the first's (JoinParts holds them to it), and a
	// newer message run meanwhile must not cut the batch in two.
	var collecting bool
	if batch.Part != nil {
		if _, collecting, err = b.o.Store.PendingBatch(device, env.ID); err != nil {
			return err
		}
	}
	if why := b.seqJump(ds, env); why != "" && !collecting {
		b.m.BadInput.WithLabelValues("seq_jump").Inc()
		b.counted(ctx, device, typ, env, "invalid")
		return b.parkRefused(ctx, device, topic, &env, payload, why)
	}
	if env.StoreID != "" && env.StoreID == ds.StoreID && env.Seq < ds.StoreSeq && !collecting {
		// A new id with a seq below one already handed over from the same
		// store: the device never produces that (it re-sends under the
		// original id), so it is refused rather than run out of order.
		b.m.BadInput.WithLabelValues("seq_regression").Inc()
		b.counted(ctx, device, typ, env, "invalid")
		return b.parkRefused(ctx, device, topic, &env, payload,
			fmt.Sprintf("seq_regression: seq %d under a new id, below %d of store %s", env.Seq, ds.StoreSeq, env.StoreID))
	}
	if batch.Part != nil {
		var complete bool
		var release func()
		if batch, payload, release, complete, err = b.collectPart(ctx, device, env, batch, payload); err != nil || !complete {
			return err
		}
		defer release()
	}
	if env.Seq <= ds.LastSeq {
		// A new id with an old seq: the device re-published a batch after
		// later messages (batch_ack_required) or its store was reset. It is
		// still handed over; order is what the device produced.
		b.m.BadInput.WithLabelValues("seq_regression").Inc()
		b.log.Warn("message seq not above the last handed over", "device", device, "id", env.ID,
			"seq", env.Seq, "last_seq", ds.LastSeq)
	}
	var in types.RunAgentInput
	var lang string
	var st *streamer
	if typ == protocol.TypeUtterance {
		in, lang = b.utteranceInput(device, utt), utt.Lang
		if st, err = b.newStreamer(device, env, lang); err != nil {
			return err
		}
	} else {
		in = b.batchInput(device, batch)
	}
	res, attempts, err := b.runWithRetry(ctx, device, env, in, onWait, st)
	if st != nil && st.err != nil {
		return st.err // the parts sent are kept: the redelivery goes on after them
	}
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	now := time.Now()
	rec = Record{Seq: env.Seq, StoreID: env.StoreID, At: now}
	var dl *DeadLetter
	if err != nil {
		rec.State, rec.Reason = StateParked, err.Error()
		dl = &DeadLetter{DeviceID: device, ID: env.ID, Seq: env.Seq, Topic: topic, Payload: payload,
			Reason: err.Error(), Attempts: attempts, At: now}
		rec.Stream = st.end(true)
	} else {
		rec.State = StateDone
		if answered(res, typ) {
			rec.Reply = b.reply(env, res, lang)
		}
		rec.Stream = st.end(false)
	}
	if env.Seq > ds.LastSeq {
		ds.LastSeq, ds.LastID = env.Seq, env.ID
	}
	if env.StoreID != "" && (env.StoreID != ds.StoreID || env.Seq > ds.StoreSeq) {
		ds.StoreID, ds.StoreSeq = env.StoreID, env.Seq
	}
	if env.Offline {
		ds.Offline++
	}
	ds.UpdatedAt = now
	t0 := time.Now()
	if err := b.o.Store.Commit(device, env.ID, rec, ds, dl); err != nil {
		return err
	}
	b.m.Stage.WithLabelValues("commit").Observe(time.Since(t0).Seconds())
	b.dropStreamed(device, env.ID, rec)
	if dl != nil {
		b.m.Parked.Inc()
		b.counted(ctx, device, typ, env, "parked")
		b.log.Error("message parked as a dead letter; the device's later messages go on", "device", device,
			"id", env.ID, "seq", env.Seq, "attempts", attempts, "reason", excerptString(dl.Reason))
	} else {
		b.counted(ctx, device, typ, env, "run")
	}
	if rec.Stream != nil {
		// The parts before the last went while the graph wrote them.
		return b.finishFrom(ctx, device, env, rec, len(rec.Stream)-1)
	}
	return b.finish(ctx, device, env, rec)
}

// counted counts what became of a device message and logs it at debug
// level: which device and message, never its content (the inspector's
// words stay out of the bridge's logs).
func (b *Bridge) counted(ctx context.Context, device, kind string, env protocol.Envelope, outcome string) {
	b.m.Messages.WithLabelValues(kind, outcome).Inc()
	var took time.Duration
	if t0, ok := ctx.Value(handleStartKey{}).(time.Time); ok {
		took = time.Since(t0)
	}
	b.log.Debug("device message", "device", device, "id", env.ID, "seq", env.Seq, "kind", kind, "outcome", outcome,
		"duration", took.Round(time.Microsecond))
}

// handleStartKey keys the time Handle took a message in (the debug line's
// duration: to its outcome; for a run, the graph's answer).
type handleStartKey struct{}

// finish publishes the reply (if any), then the ack that lets the device
// delete the message. A reply re-sent after a crash carries the same id.
func (b *Bridge) finish(ctx context.Context, device string, env protocol.Envelope, rec Record) error {
	return b.finishFrom(ctx, device, env, rec, 0)
}

// finishFrom is finish sending a streamed answer's parts from index skip
// on (the ones before went while the graph wrote them).
func (b *Bridge) finishFrom(ctx context.Context, device string, env protocol.Envelope, rec Record, skip int) error {
	cmdTopic := protocol.Topic(device, protocol.TopicCommands)
	t0 := time.Now()
	var payloads [][]byte
	if len(rec.Stream) > 0 {
		for _, part := range rec.Stream[skip:] {
			payload, err := json.Marshal(part)
			if err != nil {
				return fmt.Errorf("encode reply part %s: %w", part.ID, err)
			}
			payloads = append(payloads, payload)
		}
	} else if rec.Reply != nil {
		// An answer longer than about 25 s of speech goes as numbered reply
		// commands, in order, each acked by the device with its outcome
		// (sized for speech: protocol.SplitReplyForSpeech).
		for _, part := range protocol.SplitReplyForSpeech(*rec.Reply) {
			payload, err := json.Marshal(part)
			if err != nil {
				return fmt.Errorf("encode reply to %s: %w", env.ID, err)
			}
			payloads = append(payloads, payload)
		}
	}
	if rec.State == StateParked {
		payloads = append(payloads, parkedNotice(env.ID, rec.Reason))
	}
	ack, _ := json.Marshal(map[string]any{"id": "ack-" + env.ID, "type": protocol.CmdAck, "ids": []string{env.ID}})
	payloads = append(payloads, ack)
	// Reply then ack, pipelined on one connection (MQTT keeps their order).
	// If either is not confirmed the broker message stays unacknowledged and
	// comes back as a duplicate, which re-sends both.
	if err := b.o.Publisher.Publish(ctx, cmdTopic, payloads...); err != nil {
		return fmt.Errorf("publish reply/ack of %s/%s: %w", device, env.ID, err)
	}
	if rec.Reply != nil || len(rec.Stream) > 0 {
		b.m.Replies.Inc()
	}
	b.m.Stage.WithLabelValues("publish").Observe(time.Since(t0).Seconds())
	if created, err := time.Parse(time.RFC3339Nano, env.CreatedAt); err == nil {
		lag := time.Since(created).Seconds()
		b.m.Handover.Observe(lag)
		if b.o.PerDeviceLag {
			b.m.DeviceLag.WithLabelValues(device).Set(lag)
		}
	}
	return nil
}
