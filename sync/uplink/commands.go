package uplink

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// inbound is a valid command with the message to acknowledge once it is done.
type inbound struct {
	cmd protocol.Command
	msg paho.Message
	// answered is the ack of a ping handled at intake whose ack the store
	// refused: it is owed, the ping not handled again.
	answered *protocol.AckBody
}

// onMessage runs on paho's goroutine: validate, count, queue for
// serveCommands. It never blocks: paho also reads the session's PUBACKs and
// PINGRESPs on this goroutine (back-pressure comes from the broker's
// in-flight window, as commands are acknowledged once handled).
func (c *Client) onMessage(_ paho.Client, m paho.Message) {
	cmd, err := protocol.ParseCommand(c.opts.DeviceID, m.Payload())
	if err != nil {
		c.rejected.Add(1)
		// Rate-limited: a broken or hostile publisher must not flood the log.
		if ok, dropped := c.rejectLog.allow(time.Now()); ok {
			c.log.Warn("rejected MQTT command", "topic", m.Topic(), "reason", err.Error(), "payload", protocol.Excerpt(m.Payload()),
				"not_logged_before", dropped, "rejected_total", c.rejected.Load())
		}
		m.Ack() // malformed stays malformed: redelivery would not help
		return
	}
	c.commandsN.Add(1)
	// Never blocks (see inbox): left unhandled at shutdown, a command is
	// not acknowledged and the broker redelivers it to the next session.
	c.commands.push(inbound{cmd: cmd, msg: m})
}

func (c *Client) serveCommands(ctx context.Context) {
	if cs, ok := c.outbox.(commandStore); ok {
		c.serveInbox(ctx, cs) // intake.go
		return
	}
	retry := time.NewTicker(250 * time.Millisecond)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.commands.ready:
			for ctx.Err() == nil {
				in, ok := c.commands.pop()
				if !ok {
					break
				}
				if c.handleCommand(ctx, in.cmd) {
					in.msg.Ack()
				}
			}
		case <-retry.C:
			if len(c.owed) > 0 {
				c.payOwed()
			}
		}
	}
}

// maxOwed bounds the replies kept in memory while the store refuses them.
const maxOwed = 1024

// handleCommand carries out cmd and stores its reply. It returns false only
// when shutdown interrupted it, so the command is not acknowledged and the
// broker redelivers it. A reply the store refuses (cap reached, disk full)
// is owed: kept in memory and stored, in order, once there is room. The
// command is acknowledged anyway: holding it back would fill the broker's
// in-flight window, and later commands (set_mode) would wait for a reconnect.
func (c *Client) handleCommand(ctx context.Context, cmd protocol.Command) bool {
	if cmd.Type == protocol.CmdParked {
		c.park(cmd.IDs, cmd.Reason)
		return true
	}
	if cmd.Type == protocol.CmdAck {
		// Confirmed here, not handed to the session: a session waiting for a
		// PUBACK must never wait behind a queue of acks (paho reads PUBACKs
		// and commands on one goroutine).
		c.confirm(cmd.IDs)
		return true
	}
	ack := protocol.AckBody{CommandID: cmd.ID, CommandType: cmd.Type, OK: true, Mode: string(cmd.Mode)}
	if c.handler != nil {
		err := c.handler.HandleCommand(ctx, cmd)
		if ctx.Err() != nil {
			return false // interrupted by shutdown: let the broker redeliver it
		}
		if err != nil {
			c.handlerErrors.Add(1)
			ack.OK, ack.Error, ack.Mode = false, err.Error(), ""
			c.log.Warn("MQTT command failed", "id", cmd.ID, "type", cmd.Type, "err", err)
		}
		if cmd.Type == protocol.CmdReply {
			if err == nil {
				// Stored: its ack carries the outcome and is queued by the
				// handler when the outcome is known (spoken, held, ...).
				return true
			}
			ack.Outcome = protocol.OutcomeFailed
		}
	} else if cmd.Type == protocol.CmdReply {
		ack.OK, ack.Error, ack.Outcome = false, "this device does not speak replies", protocol.OutcomeFailed
	}
	return c.owe(ack)
}

// owe stores ack, or keeps it owed while the store refuses it; false when
// stopping (the command is then not acknowledged to the broker).
func (c *Client) owe(ack protocol.AckBody) bool {
	c.owed = append(c.owed, ack)
	if err := c.payOwed(); err != nil {
		if errors.Is(err, buffer.ErrClosed) {
			c.owed = c.owed[:len(c.owed)-1]
			c.owedN.Store(int64(len(c.owed)))
			return false // stopping: the broker redelivers it
		}
		if len(c.owed) > maxOwed {
			lost := c.owed[0]
			c.owed = c.owed[1:]
			c.owedN.Store(int64(len(c.owed)))
			c.refusedReplies.Add(1)
			c.log.Error("reply to MQTT command dropped: the store has had no room for too long", "command_id", lost.CommandID,
				"type", lost.CommandType, "owed", len(c.owed), "refused_total", c.refusedReplies.Load())
		}
	}
	return true
}

// payOwed stores owed replies in order until the store refuses one.
func (c *Client) payOwed() error {
	for len(c.owed) > 0 {
		a := c.owed[0]
		body, err := json.Marshal(a)
		if err == nil {
			_, err = c.outbox.Enqueue(buffer.LaneControl, buffer.KindAck, !c.Online(), body)
		}
		if err != nil {
			if c.owedN.Load() == 0 || errors.Is(err, buffer.ErrClosed) {
				c.log.Warn("reply to MQTT command not stored yet; answered once the store has room", "command_id", a.CommandID, "type", a.CommandType, "err", err)
			}
			c.owedN.Store(int64(len(c.owed)))
			return err
		}
		c.owed = c.owed[1:]
		c.owedN.Store(int64(len(c.owed)))
	}
	return nil
}

// limiter allows burst events per every (for logs).
type limiter struct {
	every   time.Duration
	burst   int
	mu      sync.Mutex
	start   time.Time
	n       int
	dropped int
}

// allow reports whether an event at now may be logged, and how many were
// not logged since the last one that was.
func (l *limiter) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= l.every {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.dropped++
		return false, 0
	}
	l.n++
	d := l.dropped
	l.dropped = 0
	return true, d
}
