package uplink

import (
	"fmt"
	"sort"
	"time"
)

// ParkedEntry is an outbox entry the backend refused and parked as a dead
// letter (protocol.CmdParked). The device keeps it in the outbox, not
// published again by this process; after a restart it is published once
// more and the backend, which knows the id, says parked again.
type ParkedEntry struct {
	ID     string
	Seq    uint64
	Reason string
	At     time.Time // when the backend said so
}

// parkedNote is a parked command for an id not (yet) held: its PUBACK may
// still come (the command overtook it).
type parkedNote struct {
	reason string
	at     time.Time
}

// park handles the backend's parked command: each held entry named stays in
// the outbox, parked (the ack that follows does not delete it, it is never
// re-published by this process, and it counts as parked, not unconfirmed).
// An id not held is remembered for a while (its PUBACK may come after) and
// counted: under delivery: broker an utterance is gone from the device
// after its PUBACK; the backend keeps its content.
func (c *Client) park(ids []string, reason string) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.earlyParked == nil {
		c.earlyParked = map[string]parkedNote{}
	}
	for _, id := range ids {
		c.parkedSeen.Add(1)
		h, ok := c.awaiting[id]
		if !ok {
			if len(c.earlyParked) < maxEarly {
				c.earlyParked[id] = parkedNote{reason: reason, at: now}
			}
			c.log.Error("the backend parked an outbox entry the device no longer holds (its content is at the backend: agora-bridge deadletters)",
				"id", id, "reason", reason)
			continue
		}
		if h.parked == "" {
			c.log.Error("the backend parked an outbox entry; kept on the device, not sent again until a restart",
				"id", id, "seq", h.seq, "reason", reason)
		}
		h.parked, h.parkedAt, h.released = reason, now, false
	}
	c.probeSettled() // a parked probe: the data lane moves on
}

// settleParked is settled's part for an entry the backend parked before
// its PUBACK was seen: it is held as parked. It reports whether it was.
// c.mu is held.
func (c *Client) settleParked(id string, seq uint64, now time.Time) bool {
	n, ok := c.earlyParked[id]
	if !ok {
		return false
	}
	delete(c.earlyParked, id)
	delete(c.early, id) // the ack that followed the parked command
	c.awaiting[id] = &held{seq: seq, first: now, last: now, parked: n.reason, parkedAt: n.at}
	return true
}

// expireParkedNotes forgets parked commands for ids never held. c.mu is held.
func (c *Client) expireParkedNotes(now time.Time) {
	for id, n := range c.earlyParked {
		if now.Sub(n.at) > 10*c.opts.AckTimeout {
			delete(c.earlyParked, id)
		}
	}
}

// Parked lists the entries kept as parked, oldest first.
func (c *Client) Parked() []ParkedEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ParkedEntry
	for id, h := range c.awaiting {
		if h.parked != "" {
			out = append(out, ParkedEntry{ID: id, Seq: h.seq, Reason: h.parked, At: h.parkedAt})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// parkedCount is len(Parked()).
func (c *Client) parkedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, h := range c.awaiting {
		if h.parked != "" {
			n++
		}
	}
	return n
}

func (c *Client) isParkedID(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.awaiting[id]
	return ok && h.parked != ""
}

// DropParked deletes the parked entry id from the outbox (the operator's
// call, agoractl outbox drop, once the backend's copy is dealt with). Any
// entry the backend has not parked is refused: it is still on its way.
func (c *Client) DropParked(id string) (ParkedEntry, error) {
	c.mu.Lock()
	h, ok := c.awaiting[id]
	if !ok || h.parked == "" {
		c.mu.Unlock()
		return ParkedEntry{}, fmt.Errorf("outbox entry %q is not parked by the backend (agoractl status lists the parked ones)", id)
	}
	p := ParkedEntry{ID: id, Seq: h.seq, Reason: h.parked, At: h.parkedAt}
	c.mu.Unlock()
	if err := c.outbox.Delete(id); err != nil {
		return p, fmt.Errorf("delete parked entry %s: %w", id, err)
	}
	c.mu.Lock()
	delete(c.awaiting, id)
	c.mu.Unlock()
	c.log.Warn("parked outbox entry dropped by the operator", "id", id, "seq", p.Seq, "reason", p.Reason)
	return p, nil
}
