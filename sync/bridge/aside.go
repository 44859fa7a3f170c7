package bridge

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Fleet mode's per-device backlog ("aside"), the JetStream counterpart of
// the mosquitto mode's Spill: a partition hands out one message at a time
// (MaxAckPending 1, which keeps a device's order across bridges), so a
// device whose run takes longer than DeviceHold is moved aside: its message
// is kept in the KV bucket and acknowledged, its run goes on in the
// background, and every later message of that device is appended behind it
// (kept, acknowledged) while the partition goes on with the other devices.
// One drainer per device, on the bridge that owns the backlog's lease,
// hands the backlog over in order and removes it when empty.
//
// Keys: "a.<hex device>" the head (asideHead), "b.<hex device>.<n>" the
// entries head..tail-1. Every change of the head is a compare-and-set on
// its revision: the partition consumer only appends (it is the only one
// that moves tail: a device's messages come through one partition, one at
// a time), the drainer only moves head and deletes it when empty, the
// lease refresh and a takeover only change owner and lease.
type asideHead struct {
	Head  uint64 `json:"head"`
	Tail  uint64 `json:"tail"`
	Bytes int64  `json:"bytes"`
	Owner string `json:"owner"`
	Lease int64  `json:"lease"` // unix ns of the owner's last refresh
}

type asideEntry struct {
	Topic   string `json:"topic"`
	Payload []byte `json:"payload"`
}

// errAsideFull: the device's backlog is at its bound; the partition waits.
var errAsideFull = errors.New("device backlog full")

func asideHeadKey(device string) string { return "a." + kvDev(device) }

func asideKey(device string, n uint64) string {
	return "b." + kvDev(device) + "." + strconv.FormatUint(n, 10)
}

// readAside returns the device's backlog head and its revision; found is
// false when the device has none.
func (j *JetStream) readAside(device string) (h asideHead, rev uint64, found bool, err error) {
	e, err := j.kv.Get(asideHeadKey(device))
	if errors.Is(err, nats.ErrKeyNotFound) {
		return h, 0, false, nil
	}
	if err != nil {
		return h, 0, false, fmt.Errorf("read the backlog head of %s: %w", device, err)
	}
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		return h, 0, false, fmt.Errorf("decode the backlog head of %s: %w", device, err)
	}
	return h, e.Revision(), true, nil
}

// updateAside writes h at revision rev; conflict reports a lost race.
func (j *JetStream) updateAside(device string, h asideHead, rev uint64) (conflict bool, err error) {
	b, err := json.Marshal(h)
	if err != nil {
		return false, err
	}
	_, err = j.kv.Update(asideHeadKey(device), b, rev)
	if errors.Is(err, nats.ErrKeyExists) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("update the backlog head of %s: %w", device, err)
	}
	return false, nil
}

func (j *JetStream) putAsideEntry(device string, n uint64, topic string, payload []byte) error {
	b, err := json.Marshal(asideEntry{Topic: topic, Payload: payload})
	if err != nil {
		return err
	}
	if _, err := j.kv.Put(asideKey(device, n), b); err != nil {
		return fmt.Errorf("keep backlog message %d of %s: %w", n, device, err)
	}
	return nil
}

// appendAside keeps a message behind the device's backlog; kept is false
// when the device has none (the message is then handled directly).
func (j *JetStream) appendAside(device, topic string, payload []byte) (kept bool, err error) {
	for {
		h, rev, found, err := j.readAside(device)
		if err != nil || !found {
			return false, err
		}
		if h.Tail-h.Head >= uint64(j.o.MaxBacklog) || h.Bytes >= j.o.MaxBacklogBytes {
			return false, fmt.Errorf("%w: %s has %d messages, %d bytes", errAsideFull, device, h.Tail-h.Head, h.Bytes)
		}
		n := h.Tail
		if err := j.putAsideEntry(device, n, topic, payload); err != nil {
			return false, err
		}
		h.Tail++
		h.Bytes += int64(len(payload))
		conflict, err := j.updateAside(device, h, rev)
		if err != nil {
			return false, err
		}
		if !conflict {
			return true, nil
		}
		// A lease refresh (retry) or the drainer ended the backlog: then
		// the entry just written is an orphan.
		if _, _, found, err := j.readAside(device); err == nil && !found {
			if err := j.kv.Purge(asideKey(device, n)); err != nil {
				j.log.Warn("dropping an unused backlog entry", "device", device, "n", n, "err", err)
			}
		}
	}
}

// startAside makes msg the first entry of a new backlog owned by this
// bridge.
func (j *JetStream) startAside(device, topic string, payload []byte) error {
	if err := j.putAsideEntry(device, 0, topic, payload); err != nil {
		return err
	}
	b, err := json.Marshal(asideHead{Head: 0, Tail: 1, Bytes: int64(len(payload)), Owner: j.id, Lease: time.Now().UnixNano()})
	if err != nil {
		return err
	}
	if _, err := j.kv.Create(asideHeadKey(device), b); err != nil {
		return fmt.Errorf("start the backlog of %s: %w", device, err)
	}
	return nil
}

// reserveDrainer takes one of MaxAsideDevices drainer slots.
func (j *JetStream) reserveDrainer() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.drainers >= j.o.MaxAsideDevices {
		return false
	}
	j.drainers++
	return true
}

func (j *JetStream) releaseDrainer() {
	j.mu.Lock()
	j.drainers--
	j.mu.Unlock()
}

// Drainers reports the devices whose backlog this bridge is handing over.
func (j *JetStream) Drainers() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.drainers
}

// drain hands the device's backlog over in order, then removes it. inHand,
// when not nil, reports the end of the run of entry 0 (inHandSize bytes)
// started by the partition consumer (true: handed over). It owns a drainer slot and
// returns when the backlog is empty, at shutdown or when another bridge
// took the lease over (this one's having lapsed).
func (j *JetStream) drain(ctx context.Context, cancel context.CancelFunc, device string, inHand <-chan bool, inHandSize int,
	handle func(ctx context.Context, topic string, payload []byte) error) {
	defer j.releaseDrainer()
	defer cancel()
	go j.keepLease(ctx, cancel, device)
	if inHand != nil {
		if !<-inHand || !j.advanceAside(ctx, device, 0, inHandSize) {
			return
		}
	}
	for ctx.Err() == nil {
		h, rev, found, err := j.readAside(device)
		if err != nil {
			j.log.Error("reading a device backlog; retrying", "device", device, "err", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		if !found || h.Owner != j.id {
			return
		}
		if h.Head == h.Tail {
			err := j.kv.Delete(asideHeadKey(device), nats.LastRevision(rev))
			if err == nil {
				return
			}
			if !errors.Is(err, nats.ErrKeyExists) {
				j.log.Error("removing an empty device backlog; retrying", "device", device, "err", err)
				sleepCtx(ctx, time.Second)
			}
			continue
		}
		e, err := j.kv.Get(asideKey(device, h.Head))
		var ent asideEntry
		if err == nil {
			err = json.Unmarshal(e.Value(), &ent)
		}
		switch {
		case errors.Is(err, nats.ErrKeyNotFound):
			j.log.Error("device backlog entry missing; skipped", "device", device, "n", h.Head)
		case err != nil:
			j.log.Error("reading a device backlog entry; retrying", "device", device, "n", h.Head, "err", err)
			sleepCtx(ctx, time.Second)
			continue
		default:
			if !retryHandle(ctx, j.log, func(ctx context.Context) error { return handle(ctx, ent.Topic, ent.Payload) },
				"device", device, "topic", ent.Topic) {
				return
			}
		}
		if !j.advanceAside(ctx, device, h.Head, len(ent.Payload)) {
			return
		}
	}
}

// advanceAside drops backlog entry n of size bytes (handed over) and moves
// the head past it; false at shutdown or when taken over.
func (j *JetStream) advanceAside(ctx context.Context, device string, n uint64, size int) bool {
	for ctx.Err() == nil {
		h, rev, found, err := j.readAside(device)
		if err == nil && (!found || h.Head != n || h.Owner != j.id) {
			return false // taken over: the new owner goes on from its head
		}
		if err == nil {
			h.Head++
			h.Bytes = max(h.Bytes-int64(size), 0)
			if h.Head == h.Tail {
				h.Bytes = 0
			}
			var conflict bool
			if conflict, err = j.updateAside(device, h, rev); err == nil && conflict {
				continue
			}
		}
		if err != nil {
			j.log.Error("moving a device backlog's head; retrying", "device", device, "n", n, "err", err)
			sleepCtx(ctx, time.Second)
			continue
		}
		if err := j.kv.Purge(asideKey(device, n)); err != nil {
			j.log.Warn("dropping a handled backlog entry", "device", device, "n", n, "err", err)
		}
		return true
	}
	return false
}

// keepLease refreshes this bridge's lease on the device's backlog every
// AckWait/3 until ctx ends; when another bridge holds it, it cancels the
// drainer.
func (j *JetStream) keepLease(ctx context.Context, cancel context.CancelFunc, device string) {
	t := time.NewTicker(j.o.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			h, rev, found, err := j.readAside(device)
			if err != nil {
				j.log.Warn("refreshing a device backlog's lease", "device", device, "err", err)
				break
			}
			if !found {
				break // emptied; the drainer ends
			}
			if h.Owner != j.id {
				j.log.Warn("device backlog taken over by another bridge; stopping here", "device", device, "owner", h.Owner)
				cancel()
				return
			}
			h.Lease = time.Now().UnixNano()
			conflict, err := j.updateAside(device, h, rev)
			if err != nil {
				j.log.Warn("refreshing a device backlog's lease", "device", device, "err", err)
			}
			if err != nil || !conflict {
				break
			}
		}
	}
}

// claimAside takes over the backlogs whose owner's lease lapsed (a bridge
// that died or lost NATS) and drains them here; run every AckWait.
func (j *JetStream) claimAside(ctx context.Context, handle func(ctx context.Context, topic string, payload []byte) error) error {
	w, err := j.kv.Watch("a.*", nats.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("list device backlogs: %w", err)
	}
	type stale struct {
		device string
		h      asideHead
		rev    uint64
	}
	var found []stale
	for e := range w.Updates() {
		if e == nil {
			break
		}
		var h asideHead
		raw, derr := hex.DecodeString(strings.TrimPrefix(e.Key(), "a."))
		if derr != nil || json.Unmarshal(e.Value(), &h) != nil {
			j.log.Warn("unreadable device backlog head", "key", e.Key())
			continue
		}
		if h.Owner != j.id && time.Since(time.Unix(0, h.Lease)) > j.o.AckWait {
			found = append(found, stale{string(raw), h, e.Revision()})
		}
	}
	if err := w.Stop(); err != nil {
		j.log.Warn("stopping the device backlog listing", "err", err)
	}
	for _, s := range found {
		if !j.reserveDrainer() {
			return nil // the others wait for a slot here or on another bridge
		}
		s.h.Owner, s.h.Lease = j.id, time.Now().UnixNano()
		conflict, err := j.updateAside(s.device, s.h, s.rev)
		if err != nil || conflict {
			j.releaseDrainer()
			if err != nil {
				j.log.Warn("taking a device backlog over", "device", s.device, "err", err)
			}
			continue
		}
		j.log.Info("took over a device backlog whose bridge went quiet", "device", s.device, "messages", s.h.Tail-s.h.Head)
		dctx, cancel := context.WithCancel(ctx)
		j.wg.Add(1)
		go func() { defer j.wg.Done(); j.drain(dctx, cancel, s.device, nil, 0, handle) }()
	}
	return nil
}

// retryHandle calls fn until it returns nil (true) or ctx ends (false),
// backing off from 200 ms to 10 s; logArgs name the message in the log.
func retryHandle(ctx context.Context, log interface{ Error(string, ...any) }, fn func(context.Context) error, logArgs ...any) bool {
	backoff := 200 * time.Millisecond
	for {
		err := fn(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		log.Error("handing over failed; retrying", append(logArgs, "err", err, "in", backoff)...)
		if !sleepCtx(ctx, backoff) {
			return false
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// sleepCtx waits d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
