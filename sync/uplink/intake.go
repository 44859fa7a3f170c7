package uplink

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// commandStore is the store's command inbox (*buffer.Store): commands are
// stored as received, acknowledged to the broker, then carried out.
type commandStore interface {
	AcceptCommands(payloads [][]byte) error
	InboxCommands(limit int) ([]buffer.InboxCommand, error)
	DoneCommand(n uint64) error
	InboxNotify() <-chan struct{}
}

// maxAcceptBatch bounds the commands stored in one transaction, and those
// held in memory before they are stored.
const maxAcceptBatch = 256

// commandRoomWait is the longest paho's goroutine waits for room in
// c.commands: far below the publish and keepalive timeouts, far above a
// store write.
const commandRoomWait = time.Second

// serveInbox carries out commands through the store's inbox. One goroutine
// (intake) stores what paho received, all that arrived meanwhile in one
// write, and acknowledges it to the broker: acknowledging costs the same
// however long carrying out takes, so the broker never redelivers a
// backlog and the session never waits behind it. This goroutine carries
// the stored commands out in order and deletes each once done; a stop
// leaves the rest stored for the next start. Commands the store refuses
// (full, closing) are carried out from memory and acknowledged after, as
// without an inbox.
func (c *Client) serveInbox(ctx context.Context, cs commandStore) {
	// The intake empties c.commands one store write at a time: paho may
	// wait that long for room, so what is held in memory stays bounded.
	c.commands.setBound(maxAcceptBatch, commandRoomWait)
	fallback := newInbox()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.intake(ctx, cs, fallback) }()
	defer wg.Wait()
	retry := time.NewTicker(250 * time.Millisecond)
	defer retry.Stop()
	for {
		if !c.carryOutStored(ctx, cs) {
			return
		}
		for {
			in, ok := fallback.pop()
			if !ok {
				break
			}
			if in.answered != nil {
				if !c.owe(*in.answered) {
					return
				}
			} else if !c.handleCommand(ctx, in.cmd) {
				return // stopping: not acknowledged, the broker redelivers it
			}
			in.msg.Ack()
		}
		select {
		case <-ctx.Done():
			return
		case <-cs.InboxNotify():
		case <-fallback.ready:
		case <-retry.C:
			if len(c.owed) > 0 {
				c.payOwed()
			}
		}
	}
}

// carryOutStored carries out the stored commands in order; false when
// stopping interrupted it.
func (c *Client) carryOutStored(ctx context.Context, cs commandStore) bool {
	for ctx.Err() == nil {
		cmds, err := cs.InboxCommands(32)
		if err != nil {
			c.log.Error("read stored commands", "err", err)
			return true // retried on the next tick
		}
		if len(cmds) == 0 {
			return true
		}
		for _, ic := range cmds {
			// Validated when received; parsed again here, from the store.
			if cmd, err := protocol.ParseCommand(c.opts.DeviceID, ic.Payload); err == nil && !c.handleCommand(ctx, cmd) {
				return false // stays stored: carried out at the next start
			}
			if err := cs.DoneCommand(ic.N); err != nil {
				// Carried out again later: commands are idempotent.
				c.log.Error("delete carried-out command from the inbox", "err", err)
				return true
			}
		}
	}
	return false
}

// intake stores received commands and acknowledges them to the broker.
func (c *Client) intake(ctx context.Context, cs commandStore, fallback *inbox) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.commands.ready:
		}
		for {
			var batch []inbound
			for len(batch) < maxAcceptBatch {
				in, ok := c.commands.pop()
				if !ok {
					break
				}
				batch = append(batch, in)
			}
			if len(batch) == 0 {
				break
			}
			// A ping is answered here, not queued behind the commands still
			// to be carried out: it probes the link, and a backend that
			// hears nothing for minutes after a flood takes the device for
			// dead. It has no effect to keep in order.
			answered := make([]bool, len(batch))
			var payloads [][]byte
			for i, in := range batch {
				if in.cmd.Type == protocol.CmdPing {
					if ack, ok := c.answerPing(ctx, in.cmd); ok {
						answered[i] = true
					} else {
						batch[i].answered = &ack
					}
					continue
				}
				payloads = append(payloads, in.msg.Payload())
			}
			if err := cs.AcceptCommands(payloads); err != nil {
				if ok, _ := c.rejectLog.allow(time.Now()); ok {
					c.log.Warn("commands not stored; carried out from memory, acknowledged after", "commands", len(payloads), "err", err)
				}
				for i, in := range batch {
					if answered[i] {
						in.msg.Ack()
					} else {
						fallback.push(in)
					}
				}
				continue
			}
			// PUBACKs in the order the commands arrived (MQTT 3.1.1, 4.6),
			// once what they confirm is stored; a ping whose ack is owed is
			// acknowledged by serveInbox once it is.
			for _, in := range batch {
				if in.answered != nil {
					fallback.push(in)
					continue
				}
				in.msg.Ack()
			}
		}
	}
}

// answerPing hands a ping to the handler and stores its ack in the outbox;
// false when the store refused the ack, which is then owed (see
// inbound.answered), the ping not handled twice.
func (c *Client) answerPing(ctx context.Context, cmd protocol.Command) (protocol.AckBody, bool) {
	ack := protocol.AckBody{CommandID: cmd.ID, CommandType: cmd.Type, OK: true}
	if c.handler != nil {
		if err := c.handler.HandleCommand(ctx, cmd); err != nil {
			c.handlerErrors.Add(1)
			ack.OK, ack.Error = false, err.Error()
		}
	}
	body, err := json.Marshal(ack)
	if err == nil {
		_, err = c.outbox.Enqueue(buffer.LaneControl, buffer.KindAck, !c.Online(), body)
	}
	return ack, err == nil
}
