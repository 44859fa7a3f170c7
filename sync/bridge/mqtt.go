package bridge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// MQTTOptions configure the bridge's MQTT connection.
type MQTTOptions struct {
	BrokerURL string // tcp://host:1883, ssl://host:8883
	ClientID  string // default "agora-bridge"; the session is persistent, so keep it stable
	Username  string
	Password  string
	TLS       *tls.Config
	// Subscribe lists the filters consumed in mosquitto mode; default
	// agora/v1/+/{utterances,batches,status,events,acks}. Publish-only
	// clients (JetStream mode) set NoSubscribe.
	Subscribe   []string
	NoSubscribe bool
	// QueuePerDevice bounds messages waiting in memory for one device's
	// worker (default 16). With Spill set, more go to the backlog in the
	// bridge's state (acknowledged to the broker, as durable there), up to
	// MaxBacklog messages or MaxBacklogBytes per device (defaults 10,000
	// and 64 MiB), so a device whose runs hang never holds back the broker's
	// delivery to the others; past that, or without Spill, a full queue
	// holds the broker back.
	QueuePerDevice  int
	Spill           Spill
	MaxBacklog      int
	MaxBacklogBytes int64
	// WorkerIdle ends a device's worker after this long with nothing to do
	// (default 1m): a fleet of devices seen once costs nothing afterwards.
	WorkerIdle time.Duration
	// PublishTimeout bounds waiting for a PUBACK (default 15s).
	PublishTimeout time.Duration
	Logger         *slog.Logger
}

// DefaultTopics are the device topics the bridge consumes.
var DefaultTopics = []string{"agora/v1/+/utterances", "agora/v1/+/batches", "agora/v1/+/status",
	"agora/v1/+/events", "agora/v1/+/acks"}

// MQTT is the bridge's paho client: the Publisher of commands in both modes
// and, in mosquitto mode, the consumer of device messages. Its session is
// persistent and it acknowledges (PUBACK) a device message only after
// Bridge.Handle returned nil, so a bridge that dies before that gets the
// message again from the broker.
type MQTT struct {
	o   MQTTOptions
	cli atomic.Value // paho.Client, set by Run; read by Publish and Connected from other goroutines
	log *slog.Logger

	handle func(ctx context.Context, topic string, payload []byte) error
	ctx    context.Context

	mu      sync.Mutex
	workers map[string]*worker
	wg      sync.WaitGroup
	seen    func(n int)
}

// Spill keeps the messages of a device whose worker is busy (BadgerStore).
type Spill interface {
	SpillPut(device string, n uint64, topic string, payload []byte) error
	SpillGet(device string, n uint64) (topic string, payload []byte, err error)
	SpillDelete(device string, n uint64) error
	SpillBacklogs() (map[string]Backlog, error)
}

// NewMQTT validates o. Run connects.
func NewMQTT(o MQTTOptions) (*MQTT, error) {
	u, err := url.Parse(o.BrokerURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("mqtt broker %q: want scheme://host:port", o.BrokerURL)
	}
	if o.ClientID == "" {
		o.ClientID = "agora-bridge"
	}
	if len(o.Subscribe) == 0 {
		o.Subscribe = DefaultTopics
	}
	if o.QueuePerDevice <= 0 {
		o.QueuePerDevice = 16
	}
	if o.MaxBacklog <= 0 {
		o.MaxBacklog = 10000
	}
	if o.MaxBacklogBytes <= 0 {
		o.MaxBacklogBytes = 64 << 20
	}
	if o.WorkerIdle <= 0 {
		o.WorkerIdle = time.Minute
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &MQTT{o: o, log: o.Logger.With("component", "bridge-mqtt", "broker", u.Redacted()), workers: map[string]*worker{}}, nil
}

// Publish implements Publisher: QoS 1, not retained; sends every payload,
// then waits for all their PUBACKs.
func (m *MQTT) Publish(ctx context.Context, topic string, payloads ...[]byte) error {
	cli := m.client()
	if cli == nil {
		return errors.New("mqtt: not started")
	}
	toks := make([]paho.Token, len(payloads))
	for i, p := range payloads {
		toks[i] = cli.Publish(topic, 1, false, p)
	}
	timeout := time.NewTimer(m.o.PublishTimeout)
	defer timeout.Stop()
	for _, tok := range toks {
		select {
		case <-tok.Done():
			if err := tok.Error(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("publish %s: no PUBACK within %v", topic, m.o.PublishTimeout)
		}
	}
	return nil
}

// Run connects (retrying until ctx ends) and, unless NoSubscribe, feeds
// device messages to handle, one at a time per device, until ctx ends.
// seen (optional) is told the number of device workers.
func (m *MQTT) Run(ctx context.Context, handle func(ctx context.Context, topic string, payload []byte) error, seen func(int)) error {
	m.ctx, m.handle, m.seen = ctx, handle, seen
	opts := paho.NewClientOptions().AddBroker(m.o.BrokerURL).SetClientID(m.o.ClientID).
		SetUsername(m.o.Username).SetPassword(m.o.Password).
		SetCleanSession(m.o.NoSubscribe). // a consumer keeps its session: nothing is lost while it restarts
		SetOrderMatters(true).SetAutoAckDisabled(true).
		SetAutoReconnect(true).SetMaxReconnectInterval(5 * time.Second).
		SetConnectRetry(true).SetConnectRetryInterval(time.Second).
		SetKeepAlive(15 * time.Second).SetWriteTimeout(10 * time.Second).
		SetDefaultPublishHandler(m.onMessage).
		SetConnectionLostHandler(func(_ paho.Client, err error) { m.log.Warn("MQTT connection lost", "err", err) }).
		SetOnConnectHandler(m.onConnect)
	if m.o.TLS != nil {
		opts.SetTLSConfig(m.o.TLS)
	}
	if handle != nil && m.o.Spill != nil {
		// Backlogs kept before a restart come first.
		bls, err := m.o.Spill.SpillBacklogs()
		if err != nil {
			return err
		}
		m.mu.Lock()
		for d, bl := range bls {
			w := m.startWorker(d)
			w.head, w.tail, w.bytes = bl.Head, bl.Tail, bl.Bytes
		}
		m.mu.Unlock()
	}
	cli := paho.NewClient(opts)
	m.cli.Store(cli)
	tok := cli.Connect()
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			return fmt.Errorf("mqtt connect: %w", err)
		}
		m.wg.Add(1)
		go func() { defer m.wg.Done(); warnIfOpen(m.o, m.log) }() // brokeropen.go
	case <-ctx.Done():
	}
	<-ctx.Done()
	m.wg.Wait() // workers finish (or abandon) their current message first
	cli.Disconnect(500)
	return nil
}

// client is the paho client once Run made it, else nil.
func (m *MQTT) client() paho.Client {
	c, _ := m.cli.Load().(paho.Client)
	return c
}

// Connected reports whether the client has a live session.
func (m *MQTT) Connected() bool { c := m.client(); return c != nil && c.IsConnectionOpen() }

func (m *MQTT) onConnect(c paho.Client) {
	m.log.Info("MQTT connected")
	if m.o.NoSubscribe {
		return
	}
	filters := map[string]byte{}
	for _, f := range m.o.Subscribe {
		filters[f] = 1
	}
	// From paho's callback goroutine: do not wait here for long.
	go func() {
		tok := c.SubscribeMultiple(filters, m.onMessage)
		if !tok.WaitTimeout(30*time.Second) || tok.Error() != nil {
			m.log.Error("MQTT subscribe failed; reconnecting", "err", tok.Error())
			c.Disconnect(100)
			return
		}
		m.log.Info("MQTT subscribed", "filters", m.o.Subscribe)
	}()
}
