package uplink

import (
	"time"

	"github.com/agora/agorad/buffer"
)

// Delivery says when an outbox entry counts as delivered.
const (
	// DeliveryBroker deletes an entry once the broker PUBACKed it.
	DeliveryBroker = "broker"
	// DeliveryBackend keeps utterances, batches and events after the PUBACK
	// until the backend's ack command names their id: an MQTT 3.1.1 broker
	// PUBACKs a publish its ACL denies, so a PUBACK alone proves nothing.
	DeliveryBackend = "backend"
)

// unconfirmedHint is logged once per episode of unconfirmed entries.
const unconfirmedHint = "the broker accepted but the backend never confirmed: check ACLs and the bridge"

// held is an entry PUBACKed by the broker and waiting for the backend's ack.
type held struct {
	seq      uint64
	first    time.Time // first PUBACK: how long the backend has been silent
	last     time.Time // last PUBACK: when the next re-publication is due
	released bool      // due: being published again (not held back by drain)
	data     bool      // a data-lane entry: re-published through the probe (below)
	parked   string    // the backend parked it (reason): kept, never released (parked.go)
	parkedAt time.Time
}

// needsConfirm reports whether e stays in the outbox after its PUBACK until
// the backend confirms it.
func (c *Client) needsConfirm(e buffer.Entry) bool {
	switch e.Kind {
	case buffer.KindUtterance, buffer.KindEvent:
		return c.opts.Delivery == DeliveryBackend
	case buffer.KindBatch:
		// Every batch, in both delivery modes: a listen buffer is the
		// inspector's morning and leaves the device only once the
		// backend ran or parked it (agora-bridge acks every batch; a
		// batch in parts cannot be taken from its PUBACKs anyway).
		return true
	}
	return false
}

// settled records e's PUBACK. It returns true when e is done (delete it):
// it needs no confirmation, or the backend confirmed it already.
func (c *Client) settled(e buffer.Entry, now time.Time) bool {
	if !c.needsConfirm(e) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settleParked(e.ID, e.Seq, now) {
		return false
	}
	if a, ok := c.early[e.ID]; ok {
		// The backend's ack overtook the PUBACK (or came for a
		// re-publication): done.
		delete(c.early, e.ID)
		if _, held := c.awaiting[e.ID]; !held && !a.counted {
			c.confirmed.Add(1) // counted here: confirm saw it before its PUBACK
		}
		delete(c.awaiting, e.ID)
		return true
	}
	h := c.awaiting[e.ID]
	if h == nil {
		h = &held{seq: e.Seq, first: now, data: e.Lane == buffer.LaneData}
		c.awaiting[e.ID] = h
	}
	h.last, h.released = now, false
	return false
}

// holdForAck reports whether e was PUBACKed and still waits for the
// backend's ack within AckTimeout (drain skips it).
func (c *Client) holdForAck(e buffer.Entry) bool {
	if !c.needsConfirm(e) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.early[e.ID]; ok && a.counted {
		// Confirmed and deleted after the drain read its page of the
		// outbox: publishing it again would only be acked (and counted)
		// again.
		return true
	}
	h, ok := c.awaiting[e.ID]
	return ok && !h.released
}

// releaseDue releases entries for re-publication once one waited
// AckTimeout without the backend's confirmation.
//
// The control lane goes back N: every held event is published again, in
// seq order. The data lane (utterances, batches) probes: only its oldest
// held entry is published again, every AckTimeout, and no other data entry
// goes out (gated) until the backend confirms or parks it. Then every data
// entry that waited AckTimeout follows in seq order, and new ones after
// them. Going back N on the data lane reordered it whenever the backend
// started hearing again in the middle of a burst (an ACL fixed, a bridge
// back): the entries after the switch arrived before the ones before it,
// which were sent again only after another AckTimeout. One entry in flight
// cannot be overtaken, and a long outage costs one message per AckTimeout
// instead of the whole backlog each time.
func (c *Client) releaseDue(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireParkedNotes(now)
	for id, a := range c.early {
		if now.Sub(a.at) > 10*c.opts.AckTimeout {
			delete(c.early, id) // an ack for an entry this process never sent
		}
	}
	c.endProbe(now)
	due := func(h *held) bool {
		return !h.released && h.parked == "" && now.Sub(h.last) >= c.opts.AckTimeout
	}
	n := 0
	var first uint64
	release := func(h *held) {
		h.released = true
		n++
		if first == 0 || h.seq < first {
			first = h.seq
		}
	}
	controlDue, dataDue := false, false
	for _, h := range c.awaiting {
		if due(h) {
			controlDue = controlDue || !h.data
			dataDue = dataDue || h.data
		}
	}
	if controlDue {
		for _, h := range c.awaiting {
			if !h.data && !h.released && h.parked == "" {
				release(h)
			}
		}
	}
	if p := c.awaiting[c.probe]; c.probe != "" && due(p) {
		release(p) // the probe again: still not confirmed
	} else if c.probe == "" && dataDue {
		var oldest *held
		for id, h := range c.awaiting {
			if h.data && h.parked == "" && (oldest == nil || h.seq < oldest.seq) {
				oldest, c.probe = h, id
			}
		}
		if !oldest.released {
			release(oldest)
		}
	}
	if n == 0 {
		return
	}
	c.republished.Add(uint64(n))
	c.log.Debug("entries not confirmed by the backend within ack_timeout, publishing them again",
		"count", n, "from_seq", first, "ack_timeout", c.opts.AckTimeout, "probe", c.probe)
}

// endProbe ends the data lane's probe once the backend confirmed (deleted)
// or parked it: the backend hears again, so every data entry that waited
// AckTimeout is released, in seq order ahead of new ones. c.mu is held.
func (c *Client) endProbe(now time.Time) {
	if !c.probeSettledLocked() {
		return
	}
	c.probe = ""
	for _, h := range c.awaiting {
		if h.data && !h.released && h.parked == "" && now.Sub(h.last) >= c.opts.AckTimeout {
			h.released = true
			c.republished.Add(1)
		}
	}
}

// gated reports whether e waits for the data lane's probe: a data entry
// other than the probe while the probe is out. Only releaseDue ends a probe
// (at the top of each page of the drain, and the session wakes for it): one
// ended in the middle of a page let new entries out ahead of the held ones
// it releases, which that page had already skipped.
func (c *Client) gated(e buffer.Entry) bool {
	if e.Lane != buffer.LaneData {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.probe != "" && e.ID != c.probe
}

// releaseAll releases every held entry (a new session): the data lane goes
// back N too, a new connection is not evidence that the backend stopped
// hearing (mosquitto before 2.0.22 closes the session after the first
// denied publish, so nothing after it can overtake it).
func (c *Client) releaseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probe = ""
	for _, h := range c.awaiting {
		h.released = h.parked == "" // parked: not sent again by this process
	}
}

// nextAckDeadline is when the next held entry becomes due: the probe's
// while one is out (the other data entries wait for it), otherwise the
// oldest held entry's. A probe settled meanwhile has kicked the session.
func (c *Client) nextAckDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for id, h := range c.awaiting {
		if h.released || h.parked != "" || (h.data && c.probe != "" && id != c.probe) {
			continue
		}
		if d := h.last.Add(c.opts.AckTimeout); next.IsZero() || d.Before(next) {
			next = d
		}
	}
	return next, !next.IsZero()
}

// probeSettled wakes the session when the probe was confirmed or parked
// outside it (the backend's commands): the data entries it held back go
// out now, not at the next timer. c.mu is held.
func (c *Client) probeSettled() {
	if !c.probeSettledLocked() {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// probeSettledLocked reports whether a probe is set and the backend
// confirmed (deleted) or parked it. c.mu is held.
func (c *Client) probeSettledLocked() bool {
	if c.probe == "" {
		return false
	}
	h, ok := c.awaiting[c.probe]
	return !ok || h.parked != ""
}

// heldCount is the number of entries PUBACKed and not yet confirmed.
func (c *Client) heldCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.awaiting)
}

// unconfirmedAt counts entries PUBACKed at least AckTimeout before now and
// still not confirmed by the backend.
func (c *Client) unconfirmedAt(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, h := range c.awaiting {
		if h.parked == "" && now.Sub(h.first) >= c.opts.AckTimeout {
			n++
		}
	}
	return n
}

// confirm deletes the entries the backend acknowledged. An id not (yet)
// waiting is remembered for a while (in every delivery mode): its ack may
// overtake its PUBACK. Held entries stay held until their delete is done,
// so a drain running beside it cannot publish them again meanwhile.
func (c *Client) confirm(ids []string) {
	now := time.Now()
	c.mu.Lock()
	var del []string
	for _, id := range ids {
		h, ok := c.awaiting[id]
		switch {
		case ok && h.parked != "":
			// The ack after a parked command (for devices that do not
			// know parked): the entry stays.
		case ok:
			del = append(del, id)
		case c.earlyParked[id].reason != "":
			// Parked before its PUBACK: settled holds it as parked.
		default:
			// Its PUBACK may still come (an utterance under delivery:
			// broker never waits for it: the note expires unused).
			if _, seen := c.early[id]; !seen && len(c.early) < maxEarly {
				c.early[id] = earlyAck{at: now}
			}
		}
	}
	c.mu.Unlock()
	if len(del) == 0 {
		return
	}
	if err := c.outbox.Delete(del...); err != nil {
		// Still held: published again after AckTimeout and confirmed
		// again, a duplicate, not a loss.
		c.log.Error("delete entries confirmed by the backend", "count", len(del), "err", err)
		return
	}
	c.confirmed.Add(uint64(len(del)))
	c.mu.Lock()
	for _, id := range del {
		delete(c.awaiting, id)
		// Remembered as counted: a re-publication of it may still be on
		// its way (released after AckTimeout, or published from a page of
		// the outbox read before the delete), and its PUBACK and the ack
		// the backend sends again for it must not count it twice.
		if len(c.early) < maxEarly {
			c.early[id] = earlyAck{at: now, counted: true}
		}
	}
	c.probeSettled()
	c.mu.Unlock()
}

// earlyAck is a backend ack for an entry not (or no longer) waiting for it.
type earlyAck struct {
	at      time.Time
	counted bool // the entry was deleted and counted as confirmed already
}

// maxEarly bounds the acks remembered for entries not yet PUBACKed.
const maxEarly = 16 << 10
