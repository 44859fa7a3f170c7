package chain

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/sync/protocol"
)

// Bus records, with its arrival time, every message on the device's topics
// (agora/v1/<device>/#): what the device sent, what the bridge answered and
// what the device acknowledged.
type Bus struct {
	cli    paho.Client
	mu     sync.Mutex
	msgs   []Message
	notify chan struct{}
}

// Message is one recorded message.
type Message struct {
	At      time.Time
	Topic   string // the last path element: utterances, batches, commands, acks, ...
	Payload []byte
}

// Record subscribes to the device's topics on the broker at url.
func Record(url, device string) (*Bus, error) {
	b := &Bus{notify: make(chan struct{}, 1)}
	handler := func(_ paho.Client, m paho.Message) {
		t := m.Topic()
		b.mu.Lock()
		b.msgs = append(b.msgs, Message{At: time.Now(), Topic: t[strings.LastIndexByte(t, '/')+1:], Payload: append([]byte(nil), m.Payload()...)})
		b.mu.Unlock()
		select {
		case b.notify <- struct{}{}:
		default:
		}
	}
	// A persistent session that reconnects: messages published while the
	// broker restarts are not missed.
	o := paho.NewClientOptions().AddBroker(url).SetClientID(fmt.Sprintf("chain-bus-%d", time.Now().UnixNano())).
		SetCleanSession(false).SetOrderMatters(true).SetAutoReconnect(true).
		SetMaxReconnectInterval(200 * time.Millisecond).SetConnectRetry(true).SetConnectRetryInterval(200 * time.Millisecond)
	b.cli = paho.NewClient(o)
	if tok := b.cli.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		return nil, fmt.Errorf("connect the recorder to %s: %v", url, tok.Error())
	}
	filter := protocol.Topic(device, "#")
	if tok := b.cli.Subscribe(filter, 1, handler); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		b.cli.Disconnect(50)
		return nil, fmt.Errorf("subscribe the recorder to %s: %v", filter, tok.Error())
	}
	return b, nil
}

// Close disconnects.
func (b *Bus) Close() { b.cli.Disconnect(100) }

// Messages returns what was recorded so far, in arrival order.
func (b *Bus) Messages() []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Message(nil), b.msgs...)
}

// Sent is a batch or utterance the device published.
type Sent struct {
	At      time.Time
	Kind    string // batch | utterance
	ID      string
	Seq     uint64
	Offline bool
	Texts   []string // the utterance's text, or the batch's notes
}

// Reply is a reply command from the bridge.
type Reply struct {
	At time.Time
	protocol.ReplyCommand
}

// Outcome is the device's ack of a reply.
type Outcome struct {
	At time.Time
	protocol.AckBody
}

// Sent returns the device's batches and utterances.
func (b *Bus) Sent() []Sent {
	var out []Sent
	for _, m := range b.Messages() {
		switch m.Topic {
		case protocol.TopicBatches:
			var v protocol.Batch
			if json.Unmarshal(m.Payload, &v) != nil {
				continue
			}
			s := Sent{At: m.At, Kind: "batch", ID: v.ID, Seq: v.Seq, Offline: v.Offline}
			for _, it := range v.Items {
				s.Texts = append(s.Texts, it.Text)
			}
			out = append(out, s)
		case protocol.TopicUtterances:
			var v protocol.Utterance
			if json.Unmarshal(m.Payload, &v) != nil {
				continue
			}
			out = append(out, Sent{At: m.At, Kind: "utterance", ID: v.ID, Seq: v.Seq, Offline: v.Offline, Texts: []string{v.Text}})
		}
	}
	return out
}

// Replies returns the reply commands seen.
func (b *Bus) Replies() []Reply {
	var out []Reply
	for _, m := range b.Messages() {
		var v protocol.ReplyCommand
		if m.Topic == protocol.TopicCommands && json.Unmarshal(m.Payload, &v) == nil && v.Type == protocol.CmdReply {
			out = append(out, Reply{At: m.At, ReplyCommand: v})
		}
	}
	return out
}

// Outcomes returns the device's acks of replies.
func (b *Bus) Outcomes() []Outcome {
	var out []Outcome
	for _, m := range b.Messages() {
		var v protocol.AckBody
		if m.Topic == protocol.TopicAcks && json.Unmarshal(m.Payload, &v) == nil && v.CommandType == protocol.CmdReply {
			out = append(out, Outcome{At: m.At, AckBody: v})
		}
	}
	return out
}

// Wait waits until cond holds on the recorded messages or timeout passes.
func (b *Bus) Wait(timeout time.Duration, cond func(*Bus) bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !cond(b) {
		select {
		case <-b.notify:
		case <-deadline.C:
			return cond(b)
		case <-time.After(200 * time.Millisecond): // conditions on other state (agorad's status)
		}
	}
	return true
}
