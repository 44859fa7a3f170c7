package uplink

import (
	"context"
	"fmt"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// session publishes status and drains the outbox until the connection is
// lost or ctx ends.
func (c *Client) session(ctx context.Context, cli paho.Client, lost <-chan error) error {
	// A status asked for while offline is the one published now: serving
	// the request after it would publish the same status twice.
	select {
	case <-c.statusReq:
	default:
	}
	if err := c.publishStatus(ctx, cli, lost); err != nil {
		return err
	}
	ackTimer := time.NewTimer(time.Hour)
	defer ackTimer.Stop()
	for {
		n, err := c.drain(ctx, cli, lost)
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if next, ok := c.nextAckDeadline(); ok {
			ackTimer.Reset(time.Until(next))
		} else {
			ackTimer.Reset(time.Hour)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-lost:
			return fmt.Errorf("connection lost: %w", err)
		case <-c.outbox.Notify():
		case <-c.kick:
		case <-ackTimer.C:
			c.releaseDue(time.Now())
		case <-c.statusReq:
			if err := c.publishStatus(ctx, cli, lost); err != nil {
				return err
			}
		}
	}
}

func (c *Client) publishStatus(ctx context.Context, cli paho.Client, lost <-chan error) error {
	topic, payload, err := c.status(true)
	if err != nil {
		c.log.Error("render status", "err", err)
		return nil
	}
	if err := publishWait(ctx, cli, topic, true, payload, c.opts.PublishTimeout, lost); err != nil {
		return fmt.Errorf("publish status: %w", err)
	}
	return nil
}

// inflight is one outbox entry on the wire: one message, or the numbered
// parts of a large batch (protocol.RenderParts), settled together.
type inflight struct {
	e    buffer.Entry
	toks []paho.Token
}

// drain publishes pending entries until the outbox has nothing new, with at
// most Window awaiting PUBACK, and deletes each entry once its PUBACK (and,
// for batches and under DeliveryBackend for everything, the
// backend's ack) arrived.
//
// One connection delivers in publish order and PUBACKs return in that order;
// settling the oldest token first means an entry is only ever deleted after
// every entry published before it was confirmed. So the outbox stays a
// suffix of what was sent: after a disconnect, re-sending from the outbox
// cannot reorder anything, only repeat entries with their original id and seq.
func (c *Client) drain(ctx context.Context, cli paho.Client, lost <-chan error) (published int, err error) {
	var (
		window []inflight
		done   []string
		sent   = map[string]bool{} // published in this call and not yet deleted
	)
	// Deletes (an fsync each with the default store settings) run beside
	// the publishing; deleted ids come back so sent stays small.
	toDelete := make(chan []string, 4)
	deleted := make(chan []string, 4)
	go func() {
		defer close(deleted)
		for ids := range toDelete {
			if err := c.outbox.Delete(ids...); err != nil {
				// They will be re-sent (same id): a duplicate, not a loss.
				c.log.Error("delete delivered outbox entries", "count", len(ids), "err", err)
			}
			deleted <- ids
		}
	}()
	forget := func(ids []string) {
		for _, id := range ids {
			delete(sent, id)
		}
	}
	reap := func() {
		for {
			select {
			case ids := <-deleted:
				forget(ids)
			default:
				return
			}
		}
	}
	flush := func() {
		if len(done) == 0 {
			return
		}
		for {
			select {
			case toDelete <- done:
				done = nil
				return
			case ids := <-deleted:
				forget(ids)
			}
		}
	}
	defer func() {
		flush()
		close(toDelete)
		for ids := range deleted {
			forget(ids)
		}
	}()
	settle := func() error {
		head := window[0]
		window = window[1:]
		for i, tok := range head.toks {
			if err := wait(ctx, tok, c.opts.PublishTimeout, lost); err != nil {
				return fmt.Errorf("publish entry %s (seq %d, message %d of %d): %w", head.e.ID, head.e.Seq, i+1, len(head.toks), err)
			}
		}
		c.published.Add(1)
		if c.opts.OnPublished != nil {
			c.opts.OnPublished(head.e)
		}
		if !c.settled(head.e, time.Now()) {
			delete(sent, head.e.ID) // held for the backend's ack
			return nil
		}
		done = append(done, head.e.ID)
		if len(done) >= 2*c.opts.Window {
			flush()
		}
		return nil
	}
	page := max(256, 8*c.opts.Window)
	for {
		reap()
		// Keep status responsive during a long drain.
		select {
		case <-c.statusReq:
			if err := c.publishStatus(ctx, cli, lost); err != nil {
				return published, err
			}
		default:
		}
		c.releaseDue(time.Now())
		skip := c.heldCount()
		entries, err := c.outbox.Pending(page + len(sent) + skip)
		if err != nil {
			// A store read error is not a broker problem: back off
			// without dropping the connection.
			c.log.Error("read outbox", "err", err)
			if !sleep(ctx, c.opts.BackoffMin) {
				return published, ctx.Err()
			}
			break
		}
		fresh := 0
		for _, e := range entries {
			if sent[e.ID] || c.holdForAck(e) || c.gated(e) {
				continue
			}
			topic, payloads, rerr := protocol.RenderParts(c.opts.DeviceID, e)
			if rerr != nil {
				c.log.Error("outbox entry cannot be rendered, sending it as a dead letter", "id", e.ID, "seq", e.Seq, "err", rerr)
				var payload []byte
				if topic, payload, rerr = protocol.RenderDeadLetter(c.opts.DeviceID, e, rerr.Error()); rerr != nil {
					return published, rerr
				}
				payloads = [][]byte{payload}
			}
			sent[e.ID] = true
			// All parts of one entry go out back to back on one connection,
			// so they arrive in order and the entry settles once.
			toks := make([]paho.Token, len(payloads))
			for i, p := range payloads {
				if toks[i], err = handOver(ctx, cli, topic, false, p, lost); err != nil {
					return published, fmt.Errorf("publish entry %s (seq %d, message %d of %d): %w", e.ID, e.Seq, i+1, len(payloads), err)
				}
			}
			window = append(window, inflight{e: e, toks: toks})
			published++
			fresh++
			if len(window) >= c.opts.Window {
				if err := settle(); err != nil {
					return published, err
				}
			}
		}
		if fresh == 0 {
			break
		}
	}
	for len(window) > 0 {
		if err := settle(); err != nil {
			return published, err
		}
	}
	return published, nil
}
