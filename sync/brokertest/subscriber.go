package brokertest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Message is one message received by a Subscriber.
type Message struct {
	Topic     string
	Payload   []byte
	Retained  bool
	Duplicate bool
}

// Subscriber records, in arrival order, the messages published to a topic
// filter. It has its own persistent session (CleanSession false, QoS 1) and
// reconnects by itself, so messages published while the broker restarts are
// not missed.
type Subscriber struct {
	cli    paho.Client
	mu     sync.Mutex
	msgs   []Message
	notify chan struct{}
}

var subCounter atomic.Int64

// SubscriberOption configures Subscribe.
type SubscriberOption func(*paho.ClientOptions)

// WithAuth sets the subscriber's username and password.
func WithAuth(user, password string) SubscriberOption {
	return func(o *paho.ClientOptions) { o.SetUsername(user); o.SetPassword(password) }
}

// Subscribe connects a recording subscriber to b on filter and waits until
// the subscription is active. It is disconnected in t.Cleanup.
func (b *Broker) Subscribe(t testing.TB, filter string, opts ...SubscriberOption) *Subscriber {
	t.Helper()
	return SubscribeURL(t, b.URL(), filter, opts...)
}

// SubscribeURL is Subscribe for any MQTT broker URL (e.g. a NATS MQTT
// listener).
func SubscribeURL(t testing.TB, url, filter string, opts ...SubscriberOption) *Subscriber {
	t.Helper()
	s := &Subscriber{notify: make(chan struct{}, 1)}
	handler := func(_ paho.Client, m paho.Message) {
		s.mu.Lock()
		s.msgs = append(s.msgs, Message{Topic: m.Topic(), Payload: append([]byte(nil), m.Payload()...),
			Retained: m.Retained(), Duplicate: m.Duplicate()})
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
	o := paho.NewClientOptions().AddBroker(url).
		SetClientID(fmt.Sprintf("brokertest-sub-%d-%d", time.Now().UnixNano(), subCounter.Add(1))).
		SetCleanSession(false).SetOrderMatters(true).
		SetAutoReconnect(true).SetMaxReconnectInterval(200 * time.Millisecond).
		SetConnectRetry(true).SetConnectRetryInterval(200 * time.Millisecond).
		SetDefaultPublishHandler(handler).SetKeepAlive(5 * time.Second)
	for _, opt := range opts {
		opt(o)
	}
	s.cli = paho.NewClient(o)
	if tok := s.cli.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("brokertest: subscriber connect to %s: %v", url, tok.Error())
	}
	if tok := s.cli.Subscribe(filter, 1, handler); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("brokertest: subscribe %s: %v", filter, tok.Error())
	}
	t.Cleanup(func() { s.cli.Disconnect(100) })
	return s
}

// Messages returns a copy of everything received so far, in order.
func (s *Subscriber) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Count is the number of messages received so far.
func (s *Subscriber) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// WaitFor waits until done(messages) is true or timeout passes, and returns
// the messages received so far and whether done became true.
func (s *Subscriber) WaitFor(timeout time.Duration, done func([]Message) bool) ([]Message, bool) {
	deadline := time.After(timeout)
	for {
		msgs := s.Messages()
		if done(msgs) {
			return msgs, true
		}
		select {
		case <-s.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			msgs = s.Messages()
			return msgs, done(msgs)
		}
	}
}

// WaitCount waits until at least n messages arrived (or timeout).
func (s *Subscriber) WaitCount(n int, timeout time.Duration) ([]Message, bool) {
	return s.WaitFor(timeout, func(m []Message) bool { return len(m) >= n })
}
