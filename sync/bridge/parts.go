package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/agora/agorad/sync/protocol"
)

// Defaults of the limits on batches sent in parts (docs/bridge.md "Limits").
const (
	// DefaultMaxBatchBytes bounds the parts of one batch kept and joined:
	// the largest listen buffer a device store holds (one Badger value,
	// 16 MiB).
	DefaultMaxBatchBytes = 16 << 20
	// DefaultJoinBudget bounds the bytes of all batches being joined and
	// run at once; a batch waits for its share.
	DefaultJoinBudget = 64 << 20
	// DefaultPartTTL parks a batch whose parts have not all come this long
	// after its first one.
	DefaultPartTTL = time.Hour
)

// partLock serialises a batch's collection with its expiry (the transports
// already serialise one device's messages; the expiry runs beside them).
func (b *Bridge) partLock(device string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(device))
	mu := &b.partMu[h.Sum32()%uint32(len(b.partMu))]
	mu.Lock()
	return mu.Unlock
}

// collectPart keeps one part of a batch sent in parts (protocol.BatchPart)
// in the Store, so that parts acknowledged to the transport survive a crash,
// and returns the whole batch (and its payload, for a dead letter) once all
// parts are there. Until then complete is false and the part may be acked.
// Parts are joined only when they agree: a part sent again with other
// contents, a batch over MaxBatchBytes, parts that do not add up or repeat
// a note park the whole batch (every part kept, as received) with the
// reason. release (set when complete) gives back the batch's share of the
// join budget once the run is over.
func (b *Bridge) collectPart(ctx context.Context, device string, env protocol.Envelope, part protocol.Batch, payload []byte) (whole protocol.Batch, wholePayload []byte, release func(), complete bool, err error) {
	unlock := b.partLock(device)
	defer unlock()
	idx, of := part.Part.Index, part.Part.Of
	if prev, found, err := b.o.Store.Part(device, env.ID, idx); err != nil {
		return whole, nil, nil, false, err
	} else if found && !bytes.Equal(prev, payload) && !samePart(prev, part) {
		b.m.BadInput.WithLabelValues("batch_part_conflict").Inc()
		return whole, nil, nil, false, b.parkWhole(ctx, device, env, payload,
			fmt.Sprintf("batch_part_conflict: part %d of %d sent again with other contents (both kept here)", idx, of))
	}
	pb, err := b.o.Store.PutPart(device, env.ID, idx, of, payload)
	if err != nil {
		return whole, nil, nil, false, err
	}
	if pb.Bytes > int64(b.o.MaxBatchBytes) {
		b.m.BadInput.WithLabelValues("batch_too_large").Inc()
		return whole, nil, nil, false, b.parkWhole(ctx, device, env, nil,
			fmt.Sprintf("batch_too_large: %d bytes in %d of %d parts, over the bridge's max %d (limits.max_batch_bytes)", pb.Bytes, pb.Parts, of, b.o.MaxBatchBytes))
	}
	if pb.Parts < of {
		b.m.Messages.WithLabelValues(protocol.TypeBatch, "part_kept").Inc()
		b.log.Debug("batch part kept", "device", device, "id", env.ID, "part", idx, "of", of, "kept", pb.Parts)
		return whole, nil, nil, false, nil
	}
	// The join holds the batch (and the run its text) in memory: at most
	// JoinBudget bytes of batches at once.
	weight := min(pb.Bytes, int64(b.o.JoinBudget))
	if err := b.joins.Acquire(ctx, weight); err != nil {
		return whole, nil, nil, false, err
	}
	rel := func() { b.joins.Release(weight) }
	defer func() {
		if !complete {
			rel()
		}
	}()
	raws, err := b.o.Store.Parts(device, env.ID)
	if err != nil {
		return whole, nil, nil, false, err
	}
	parts := make([]protocol.Batch, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal(raw, &parts[i]); err != nil {
			return whole, nil, nil, false, fmt.Errorf("decode kept part of %s/%s: %w", device, env.ID, err)
		}
	}
	whole, jerr := protocol.JoinParts(parts)
	if jerr == nil {
		jerr = repeatedNotes(whole)
	}
	if jerr != nil {
		// Parts that disagree (a device bug, or a stranger): the graph
		// gets nothing it cannot trust, the operator gets every part.
		b.m.BadInput.WithLabelValues("batch_part").Inc()
		return whole, nil, nil, false, b.parkWhole(ctx, device, env, nil, "batch_part: "+jerr.Error())
	}
	if wholePayload, err = json.Marshal(whole); err != nil {
		return whole, nil, nil, false, fmt.Errorf("encode batch %s/%s: %w", device, env.ID, err)
	}
	b.log.Debug("batch parts joined", "device", device, "id", env.ID, "parts", len(parts), "notes", whole.Count)
	return whole, wholePayload, rel, true, nil
}

// samePart reports whether raw (a part kept) says what p says: a part sent
// again is the same part when its numbering and notes are the same.
func samePart(raw []byte, p protocol.Batch) bool {
	var q protocol.Batch
	if json.Unmarshal(raw, &q) != nil || q.Part == nil || *q.Part != *p.Part || q.Seq != p.Seq || len(q.Items) != len(p.Items) {
		return false
	}
	a, _ := json.Marshal(q.Items)
	c, _ := json.Marshal(p.Items)
	return bytes.Equal(a, c)
}

// repeatedNotes refuses a joined batch that holds one note twice (by id,
// or by its seq in the device's listen buffer): the graph would take it
// twice.
func repeatedNotes(whole protocol.Batch) error {
	ids := make(map[string]int, len(whole.Items))
	seqs := make(map[uint64]int, len(whole.Items))
	for i, it := range whole.Items {
		if j, ok := ids[it.ID]; ok && it.ID != "" {
			return fmt.Errorf("note %q is item %d and item %d", excerptString(it.ID), j+1, i+1)
		}
		ids[it.ID] = i
		if j, ok := seqs[it.Seq]; ok && it.Seq != 0 {
			return fmt.Errorf("note seq %d is item %d and item %d", it.Seq, j+1, i+1)
		}
		seqs[it.Seq] = i
	}
	return nil
}

// parkWhole parks batch env.ID with every part kept (and extra, a part not
// kept, when not nil) as its dead letter: a JSON array of the parts as
// received. The commit drops the parts only together with the dead letter
// that holds them.
func (b *Bridge) parkWhole(ctx context.Context, device string, env protocol.Envelope, extra []byte, reason string) error {
	raws, err := b.o.Store.Parts(device, env.ID)
	if err != nil {
		return err
	}
	if extra != nil {
		raws = append(raws, extra)
	}
	all := append([]byte{'['}, bytes.Join(raws, []byte{','})...)
	all = append(all, ']')
	topic := protocol.Topic(device, protocol.TopicBatches)
	b.log.Warn("batch parked whole", "device", device, "id", env.ID, "parts", len(raws), "bytes", len(all), "reason", excerptString(reason))
	return b.parkRefused(ctx, device, topic, &env, all, reason)
}

// ExpireParts parks every batch whose first part was kept more than
// PartTTL ago and whose other parts never all came, whole, with the reason;
// it returns how many it parked. SweepParts calls it periodically.
func (b *Bridge) ExpireParts(ctx context.Context) (int, error) {
	pending, err := b.o.Store.Pending(maxExpiredPerSweep)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pb := range pending {
		if time.Since(pb.Since) < b.o.PartTTL || ctx.Err() != nil {
			continue
		}
		if err := b.expire(ctx, pb); err != nil {
			return n, fmt.Errorf("expire batch %s/%s: %w", pb.Device, pb.ID, err)
		}
		n++
	}
	return n, nil
}

// maxExpiredPerSweep bounds one sweep's listing (and memory); the next
// sweep takes the rest.
const maxExpiredPerSweep = 10000

// expire moves an incomplete batch's parts into a dead letter of their own
// ("expired-<id>", reason batch_incomplete) and drops them: the batch id
// itself is not marked, and nothing is sent to the device. A live device
// re-sends a batch the backend has not acked, all parts, so one that comes
// back later (days later) still gets its batch run whole; parts from a
// device that never does (or from a stranger) no longer cost the bridge
// anything but the dead letter the operator sees.
func (b *Bridge) expire(ctx context.Context, pb PendingBatch) error {
	unlock := b.partLock(pb.Device)
	defer unlock()
	if _, still, err := b.o.Store.PendingBatch(pb.Device, pb.ID); err != nil || !still {
		return err // joined (or expired) meanwhile
	}
	raws, err := b.o.Store.Parts(pb.Device, pb.ID)
	if err != nil {
		return err
	}
	var env protocol.Envelope
	if len(raws) > 0 {
		_ = json.Unmarshal(raws[0], &env) // the kept part's seq
	}
	all := append([]byte{'['}, bytes.Join(raws, []byte{','})...)
	all = append(all, ']')
	reason := fmt.Sprintf("batch_incomplete: %d of %d parts of batch %s kept, the first %v ago, over limits.part_ttl %v", pb.Parts, pb.Of,
		pb.ID, time.Since(pb.Since).Round(time.Second), b.o.PartTTL)
	id := "expired-" + pb.ID
	ds, err := b.o.Store.Device(pb.Device)
	if err != nil {
		return err
	}
	now := time.Now()
	ds.UpdatedAt = now
	dl := &DeadLetter{DeviceID: pb.Device, ID: id, Seq: env.Seq, Topic: protocol.Topic(pb.Device, protocol.TopicBatches),
		Payload: all, Reason: reason, At: now}
	if err := b.o.Store.Commit(pb.Device, id, Record{Seq: env.Seq, State: StateParked, Reason: reason, At: now}, ds, dl); err != nil {
		return err
	}
	if err := b.o.Store.DropParts(pb.Device, pb.ID); err != nil {
		return err
	}
	b.m.BadInput.WithLabelValues("batch_incomplete").Inc()
	b.m.Parked.Inc()
	b.log.Warn("incomplete batch expired; its parts kept as a dead letter", "device", pb.Device, "id", pb.ID,
		"parts", pb.Parts, "of", pb.Of, "bytes", len(all))
	return nil
}

// SweepParts runs ExpireParts every interval until ctx ends.
func (b *Bridge) SweepParts(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := b.ExpireParts(ctx); err != nil {
				b.log.Error("expiring incomplete batches", "err", err)
			} else if n > 0 {
				b.log.Warn("incomplete batches parked", "batches", n, "part_ttl", b.o.PartTTL)
			}
		}
	}
}
