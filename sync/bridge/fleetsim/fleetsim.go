// Package fleetsim simulates a fleet of agorad devices for the bridge's
// fleet tests and benchmarks: each device is the real sync/uplink client
// with its own MQTT connection (QoS 1, persistent session, retained status,
// last will), over an in-memory outbox (a Badger store per device would cost
// ~16 MiB each: 1,000 of them do not fit a test machine). It also collects
// the commands the bridge sends back, and runs bridge processes and the
// reference graph.
package fleetsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/google/uuid"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// MemOutbox is an in-memory uplink.Outbox with the store's ordering
// contract: control lane first, then data, each in seq order.
type MemOutbox struct {
	mu      sync.Mutex
	seq     uint64
	entries []buffer.Entry
	notify  chan struct{}
}

// NewMemOutbox returns an empty outbox.
func NewMemOutbox() *MemOutbox { return &MemOutbox{notify: make(chan struct{}, 1)} }

// Pending implements uplink.Outbox.
func (o *MemOutbox) Pending(limit int) ([]buffer.Entry, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]buffer.Entry, 0, len(o.entries))
	for _, lane := range []buffer.Lane{buffer.LaneControl, buffer.LaneData} {
		for _, e := range o.entries {
			if e.Lane == lane && (limit <= 0 || len(out) < limit) {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// Delete implements uplink.Outbox.
func (o *MemOutbox) Delete(ids ...string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	del := map[string]bool{}
	for _, id := range ids {
		del[id] = true
	}
	kept := o.entries[:0]
	for _, e := range o.entries {
		if !del[e.ID] {
			kept = append(kept, e)
		}
	}
	o.entries = kept
	return nil
}

// Notify implements uplink.Outbox.
func (o *MemOutbox) Notify() <-chan struct{} { return o.notify }

// OutboxCount implements uplink.Outbox.
func (o *MemOutbox) OutboxCount() (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.entries), nil
}

// Enqueue implements uplink.Outbox.
func (o *MemOutbox) Enqueue(lane buffer.Lane, kind buffer.Kind, offline bool, body []byte) (buffer.Entry, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return buffer.Entry{}, err
	}
	o.mu.Lock()
	o.seq++
	e := buffer.Entry{ID: id.String(), Seq: o.seq, Lane: lane, Kind: kind, CreatedAt: time.Now(), Offline: offline, Body: body}
	o.entries = append(o.entries, e)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
	return e, nil
}

// Say enqueues a typed utterance the way the daemon does (record id = entry id).
func (o *MemOutbox) Say(text string) (buffer.Entry, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return buffer.Entry{}, err
	}
	o.mu.Lock()
	o.seq++
	now := time.Now()
	rec := buffer.Record{ID: id.String(), Seq: o.seq, Text: text, Lang: "en", StartedAt: now, DurationMS: 1000, Source: "typed", CreatedAt: now}
	body, _ := json.Marshal(rec)
	e := buffer.Entry{ID: rec.ID, Seq: rec.Seq, Lane: buffer.LaneData, Kind: buffer.KindUtterance, CreatedAt: now, Body: body}
	o.entries = append(o.entries, e)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
	return e, nil
}

// Batch enqueues a listen-buffer flush of notes.
func (o *MemOutbox) Batch(notes ...string) (buffer.Entry, error) {
	o.mu.Lock()
	now := time.Now()
	var items []buffer.Record
	for _, n := range notes {
		id, _ := uuid.NewV7()
		o.seq++
		items = append(items, buffer.Record{ID: id.String(), Seq: o.seq, Text: n, Lang: "en", StartedAt: now, Source: "mic", CreatedAt: now})
	}
	id, _ := uuid.NewV7()
	o.seq++
	body, _ := json.Marshal(buffer.BatchBody{Items: items, Count: len(items)})
	e := buffer.Entry{ID: id.String(), Seq: o.seq, Lane: buffer.LaneData, Kind: buffer.KindBatch, CreatedAt: now, Body: body}
	o.entries = append(o.entries, e)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
	return e, nil
}

// Device is one simulated device.
type Device struct {
	ID     string
	Outbox *MemOutbox
	Client *uplink.Client
}

// Fleet runs devices until its context ends.
type Fleet struct {
	Devices []*Device
	wg      sync.WaitGroup
}

// Start connects n devices named prefix-0000… to brokerURL.
func Start(ctx context.Context, n int, prefix, brokerURL string) (*Fleet, error) {
	f := &Fleet{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range n {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		ob := NewMemOutbox()
		c, err := uplink.New(uplink.Options{DeviceID: id, BrokerURL: brokerURL, BackoffMin: 100 * time.Millisecond,
			BackoffMax: 2 * time.Second, KeepAlive: 30 * time.Second, ConnectTimeout: 10 * time.Second, PublishTimeout: 30 * time.Second,
			Logger: log, Status: func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "fleetsim"} }}, ob, nil)
		if err != nil {
			return nil, err
		}
		d := &Device{ID: id, Outbox: ob, Client: c}
		f.Devices = append(f.Devices, d)
		f.wg.Add(1)
		go func() { defer f.wg.Done(); _ = c.Run(ctx) }()
	}
	return f, nil
}

// WaitOnline waits until every device has a session.
func (f *Fleet) WaitOnline(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		off := 0
		for _, d := range f.Devices {
			if !d.Client.Online() {
				off++
			}
		}
		if off == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d devices not online after %v", off, len(f.Devices), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Wait waits for every device's uplink to return (after ctx ended).
func (f *Fleet) Wait() { f.wg.Wait() }

// Command is one command the bridge sent, as received.
type Command struct {
	Device    string
	ID        string   `json:"id"`
	Type      string   `json:"type"`
	InReplyTo string   `json:"in_reply_to"`
	Text      string   `json:"text"`
	Spoken    string   `json:"spoken"`
	IDs       []string `json:"ids"`
	Reason    string   `json:"reason"` // parked
	At        time.Time
}

// Collector records every command on agora/v1/+/commands.
type Collector struct {
	cli  paho.Client
	mu   sync.Mutex
	cmds []Command
	// firstReply and firstAck: message id -> when first seen
	firstReply map[string]Command
	firstAck   map[string]time.Time
}

// Collect subscribes (QoS 1, its own persistent session).
func Collect(brokerURL, clientID string) (*Collector, error) {
	c := &Collector{firstReply: map[string]Command{}, firstAck: map[string]time.Time{}}
	handler := func(_ paho.Client, m paho.Message) {
		var cmd Command
		if json.Unmarshal(m.Payload(), &cmd) != nil {
			return
		}
		cmd.At = time.Now()
		var topicDev string
		if _, err := fmt.Sscanf(m.Topic(), "agora/v1/%s", &topicDev); err == nil {
			cmd.Device = topicDev[:len(topicDev)-len("/commands")]
		}
		c.mu.Lock()
		c.cmds = append(c.cmds, cmd)
		switch cmd.Type {
		case protocol.CmdReply:
			if _, ok := c.firstReply[cmd.InReplyTo]; !ok {
				c.firstReply[cmd.InReplyTo] = cmd
			}
		case protocol.CmdAck:
			for _, id := range cmd.IDs {
				if _, ok := c.firstAck[id]; !ok {
					c.firstAck[id] = cmd.At
				}
			}
		}
		c.mu.Unlock()
	}
	o := paho.NewClientOptions().AddBroker(brokerURL).SetClientID(clientID).SetCleanSession(false).
		SetAutoReconnect(true).SetConnectRetry(true).SetMaxReconnectInterval(time.Second).SetOrderMatters(false).
		SetDefaultPublishHandler(handler)
	c.cli = paho.NewClient(o)
	if tok := c.cli.Connect(); !tok.WaitTimeout(15*time.Second) || tok.Error() != nil {
		return nil, fmt.Errorf("collector connect: %v", tok.Error())
	}
	if tok := c.cli.Subscribe("agora/v1/+/commands", 1, handler); !tok.WaitTimeout(15*time.Second) || tok.Error() != nil {
		return nil, fmt.Errorf("collector subscribe: %v", tok.Error())
	}
	return c, nil
}

// Close disconnects.
func (c *Collector) Close() { c.cli.Disconnect(200) }

// Acked is the number of distinct message ids acknowledged.
func (c *Collector) Acked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.firstAck)
}

// Reply returns the first reply to a message id.
func (c *Collector) Reply(id string) (Command, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.firstReply[id]
	return r, ok
}

// AckAt returns when a message id was first acknowledged.
func (c *Collector) AckAt(id string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.firstAck[id]
	return t, ok
}

// Commands returns everything received.
func (c *Collector) Commands() []Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Command(nil), c.cmds...)
}

// WaitAcked waits until n distinct ids were acknowledged.
func (c *Collector) WaitAcked(n int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for c.Acked() < n {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// Percentile returns the p-th percentile (0..100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}
