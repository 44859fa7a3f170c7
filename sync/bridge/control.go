package bridge

import (
	"context"
	"strconv"
	"time"

	"github.com/agora/agorad/sync/protocol"
)

func (b *Bridge) status(ctx context.Context, device, topic string, payload []byte) error {
	var st protocol.StatusMessage
	env, refused := b.envelope(device, protocol.TypeStatus, topic, payload, &st)
	if refused != "" {
		return nil
	}
	ds, err := b.o.Store.Device(device)
	if err != nil {
		return err
	}
	// A live status older than the one kept (a retained copy crossing a live
	// one) is ignored. An offline status always counts: the last will carries
	// the time its connection was opened, older than the statuses that
	// connection published since. (A will of a connection taken over by the
	// device's reconnect can thus mark it offline until its next status.)
	if st.Online && st.UpdatedAt != "" && st.UpdatedAt < ds.StatusAt {
		b.counted(ctx, device, "status", env, "stale")
		return nil
	}
	if st.Mode != "" { // the last will carries no mode: keep the last known
		ds.Mode = st.Mode
	}
	if st.Online && env.StoreID != "" { // the will carries no outbox
		ds.StatusStoreID, ds.StatusOutbox = env.StoreID, max(st.Outbox, 0)
	}
	ds.Online, ds.StatusAt, ds.UpdatedAt = st.Online, st.UpdatedAt, time.Now()
	if err := b.o.Store.PutDevice(device, ds); err != nil {
		return err
	}
	online := 0.0
	if st.Online {
		online = 1
	}
	if b.o.PerDeviceLag { // one series per device id: a fleet (or a stranger) turns it off
		b.m.Online.WithLabelValues(device).Set(online)
	}
	b.counted(ctx, device, "status", env, "stored")
	b.log.Debug("device status", "device", device, "online", st.Online, "mode", st.Mode)
	return nil
}

// control logs device events, dead letters and acks; they need no run.
func (b *Bridge) control(ctx context.Context, device, name, topic string, payload []byte) error {
	var msg struct {
		protocol.Envelope
		Event       string `json:"event"`
		Reason      string `json:"reason"`
		CommandType string `json:"command_type"`
		CommandID   string `json:"command_id"`
		OK          bool   `json:"ok"`
		Outcome     string `json:"outcome"`
		Error       string `json:"error"`
	}
	env, refused := b.envelope(device, "", topic, payload, &msg)
	if refused != "" {
		return nil
	}
	switch env.Type {
	case protocol.TypeAck:
		if msg.CommandType == protocol.CmdReply {
			outcome := msg.Outcome
			if outcome == "" {
				outcome = map[bool]string{true: "ok", false: "failed"}[msg.OK]
			}
			b.m.Outcomes.WithLabelValues(outcome).Inc()
		}
		b.log.Debug("device ack", "device", device, "command", msg.CommandID, "type", msg.CommandType, "ok", msg.OK)
	case protocol.TypeEvent:
		b.log.Info("device event", "device", device, "event", msg.Event, "seq", env.Seq, "offline", env.Offline)
		if err := b.ackOnly(ctx, device, env.ID); err != nil {
			return err
		}
	case protocol.TypeDeadLetter:
		b.log.Warn("device dead letter", "device", device, "id", env.ID, "reason", excerptString(msg.Reason))
		if err := b.keepDeviceDeadLetter(ctx, device, topic, env, payload, msg.Reason); err != nil {
			return err
		}
	default:
		b.bad("type", "unexpected type "+strconv.Quote(excerptString(env.Type)), topic, payload)
		return nil
	}
	b.counted(ctx, device, env.Type, env, "logged")
	return nil
}
