// Package uplink drains the device outbox to the backend over MQTT and takes
// the backend's commands: a paho client with a persistent session, QoS 1,
// retained status and last will, its own reconnect loop with exponential
// backoff and full jitter, and delete-after-PUBACK delivery in seq order.
package uplink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/protocol"
)

// Outbox is what the uplink needs from the store (*buffer.Store).
type Outbox interface {
	Pending(limit int) ([]buffer.Entry, error)
	Delete(ids ...string) error
	Notify() <-chan struct{}
	OutboxCount() (int, error)
	Enqueue(lane buffer.Lane, kind buffer.Kind, offline bool, body []byte) (buffer.Entry, error)
}

// CommandHandler acts on valid set_mode and ping commands. Its result is
// answered to the backend as an ack on the control lane (ok, or the error
// text). ack commands are handled by the uplink itself.
type CommandHandler interface {
	HandleCommand(ctx context.Context, cmd protocol.Command) error
}

// StatusFunc returns the device status to publish; the uplink fills in
// Online, Outbox and UpdatedAt.
type StatusFunc func() protocol.Status

// Options configure a Client. Zero durations and sizes take the defaults.
type Options struct {
	DeviceID  string
	BrokerURL string // tcp://host:1883, ssl://host:8883 (see ParseBrokerURL); "" = no broker
	Username  string
	Password  string // never logged

	CAFile   string // PEM CA bundle to verify the broker; system roots when empty
	CertFile string // client certificate (PEM), with KeyFile
	KeyFile  string
	// ServerName overrides the name checked in the broker's certificate.
	ServerName string

	KeepAlive      time.Duration // default 30s
	ConnectTimeout time.Duration // default 10s
	PublishTimeout time.Duration // a PUBACK not seen within this ends the session; default 30s
	BackoffMin     time.Duration // default 1s
	BackoffMax     time.Duration // default 60s
	Window         int           // publishes awaiting PUBACK at once; default 64

	// BatchAckRequired keeps a batch in the outbox after its PUBACK until an
	// ack command names its id; it is re-published (same id) every AckTimeout.
	BatchAckRequired bool
	AckTimeout       time.Duration // default 60s

	Status StatusFunc
	Logger *slog.Logger
}

// Stats are counters for metrics.
type Stats struct {
	Published        uint64 // outbox entries confirmed by PUBACK
	Republished      uint64 // batches re-published after AckTimeout
	Connects         uint64
	ConnectFailures  uint64
	Reconnects       uint64 // sessions that ended other than by shutdown
	Commands         uint64 // valid commands received
	RejectedCommands uint64 // malformed commands received
	HandlerErrors    uint64
}

// Client is the MQTT uplink. Create it with New and run it with Run.
type Client struct {
	opts    Options
	outbox  Outbox
	handler CommandHandler
	log     *slog.Logger
	tls     *tls.Config
	url     string // redacted, for logs

	online        atomic.Bool
	onlineChanged chan bool
	statusReq     chan struct{}
	acks          chan []string // ids from ack commands
	commands      chan inbound

	mu       sync.Mutex
	awaiting map[string]time.Time // batch id -> when published (BatchAckRequired)
	stopped  <-chan struct{}      // ctx.Done() of Run: unblocks paho callbacks at shutdown

	published, republished, connects, connectFailures, reconnects atomic.Uint64
	commandsN, rejected, handlerErrors                            atomic.Uint64
}

// New validates opts and builds the TLS config; it does not connect.
func New(opts Options, outbox Outbox, handler CommandHandler) (*Client, error) {
	if err := protocol.ValidateDeviceID(opts.DeviceID); err != nil {
		return nil, fmt.Errorf("uplink options: %w", err)
	}
	if outbox == nil {
		return nil, errors.New("uplink: nil outbox")
	}
	// No broker (the configuration's empty mqtt.broker): Run keeps
	// everything in the outbox.
	var (
		redacted string
		secure   bool
	)
	if opts.BrokerURL != "" {
		u, tls, err := ParseBrokerURL(opts.BrokerURL)
		if err != nil {
			return nil, fmt.Errorf("uplink options: broker_url %w", err)
		}
		redacted, secure = u.Redacted(), tls
	}
	setDefault(&opts.KeepAlive, 30*time.Second)
	setDefault(&opts.ConnectTimeout, 10*time.Second)
	setDefault(&opts.PublishTimeout, 30*time.Second)
	setDefault(&opts.BackoffMin, time.Second)
	setDefault(&opts.BackoffMax, 60*time.Second)
	setDefault(&opts.AckTimeout, 60*time.Second)
	if opts.BackoffMax < opts.BackoffMin {
		return nil, fmt.Errorf("uplink options: backoff_max %v is less than backoff_min %v", opts.BackoffMax, opts.BackoffMin)
	}
	if opts.Window <= 0 {
		opts.Window = 64
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Client{
		opts: opts, outbox: outbox, handler: handler, url: redacted,
		log:           opts.Logger.With("component", "uplink"),
		onlineChanged: make(chan bool, 1),
		statusReq:     make(chan struct{}, 1),
		acks:          make(chan []string, 16),
		commands:      make(chan inbound, 64),
		awaiting:      map[string]time.Time{},
	}
	if secure || opts.CAFile != "" || opts.CertFile != "" {
		var err error
		if c.tls, err = TLSConfig(opts.CAFile, opts.CertFile, opts.KeyFile, opts.ServerName); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// TLSConfig builds the client TLS config; errors name the file at fault.
func TLSConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read MQTT CA file %s: %w", caFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("MQTT CA file %s: no PEM certificates found", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("MQTT client certificate: cert file %q and key file %q must be set together", certFile, keyFile)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load MQTT client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Online reports whether a session with the broker is up.
func (c *Client) Online() bool { return c.online.Load() }

// OnlineChanged delivers the latest online state after each change
// (coalesced: a slow reader sees the most recent value). One reader.
func (c *Client) OnlineChanged() <-chan bool { return c.onlineChanged }

// PublishStatus asks the running client to publish a fresh retained status.
// It never blocks; requests coalesce.
func (c *Client) PublishStatus() {
	select {
	case c.statusReq <- struct{}{}:
	default:
	}
}

// Stats returns the counters.
func (c *Client) Stats() Stats {
	return Stats{
		Published: c.published.Load(), Republished: c.republished.Load(),
		Connects: c.connects.Load(), ConnectFailures: c.connectFailures.Load(), Reconnects: c.reconnects.Load(),
		Commands: c.commandsN.Load(), RejectedCommands: c.rejected.Load(), HandlerErrors: c.handlerErrors.Load(),
	}
}

func (c *Client) setOnline(v bool) {
	if c.online.Swap(v) == v {
		return
	}
	for { // replace a stale unread value
		select {
		case c.onlineChanged <- v:
			return
		default:
		}
		select {
		case <-c.onlineChanged:
		default:
		}
	}
}

// Run connects, drains the outbox, publishes status and serves commands
// until ctx ends; broker failures are retried with backoff, never returned.
// With no BrokerURL it only waits for ctx: everything stays in the outbox.
// Call it once.
func (c *Client) Run(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = ctx.Done()
	c.mu.Unlock()
	if c.opts.BrokerURL == "" {
		c.log.Warn("no MQTT broker configured: everything stays in the outbox")
		<-ctx.Done()
		return nil
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { c.serveCommands(ctx); return nil })
	g.Go(func() error { c.connectLoop(ctx); return nil })
	return g.Wait()
}

// connectLoop runs sessions back to back, with backoff between failures.
func (c *Client) connectLoop(ctx context.Context) {
	attempt := 0
	for ctx.Err() == nil {
		cli, lost, err := c.connect(ctx)
		if err != nil {
			c.connectFailures.Add(1)
			delay := backoff(c.opts.BackoffMin, c.opts.BackoffMax, attempt)
			c.log.Warn("connect to MQTT broker failed", "broker", c.url, "attempt", attempt+1, "retry_in", delay.Round(time.Millisecond), "err", err)
			attempt++
			if !sleep(ctx, delay) {
				break
			}
			continue
		}
		attempt = 0
		c.connects.Add(1)
		c.setOnline(true)
		c.log.Info("connected to MQTT broker", "broker", c.url)
		err = c.session(ctx, cli, lost)
		c.setOnline(false)
		if ctx.Err() != nil {
			c.goodbye(cli)
			break
		}
		c.reconnects.Add(1)
		c.log.Warn("MQTT session ended", "broker", c.url, "err", err)
		cli.Disconnect(0)
		if !sleep(ctx, backoff(c.opts.BackoffMin, c.opts.BackoffMax, 0)) {
			break
		}
	}
}

// goodbye publishes online:false (a clean disconnect suppresses the will).
func (c *Client) goodbye(cli paho.Client) {
	if topic, payload, err := c.status(false); err == nil {
		tok := cli.Publish(topic, 1, true, payload)
		tok.WaitTimeout(2 * time.Second)
	}
	cli.Disconnect(250)
	c.log.Info("disconnected from MQTT broker", "broker", c.url)
}

// backoff returns a random delay in [min, cap) where cap doubles per attempt
// up to max ("full jitter" above a floor, so a dead broker is not hammered).
func backoff(min, max time.Duration, attempt int) time.Duration {
	ceil := min
	for i := 0; i < attempt && ceil < max; i++ {
		ceil *= 2
	}
	if ceil > max {
		ceil = max
	}
	if ceil <= min {
		return min
	}
	return min + time.Duration(rand.Int64N(int64(ceil-min)))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (c *Client) status(online bool) (string, []byte, error) {
	var s protocol.Status
	if c.opts.Status != nil {
		s = c.opts.Status()
	}
	s.Online = online
	s.UpdatedAt = time.Now()
	if n, err := c.outbox.OutboxCount(); err == nil {
		s.Outbox = n
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", nil, fmt.Errorf("status id: %w", err)
	}
	return protocol.RenderStatus(c.opts.DeviceID, id.String(), s)
}

// connect opens one paho connection (a fresh client each time: paho's own
// retry is off, the outbox is the only resend queue) and subscribes to
// commands.
func (c *Client) connect(ctx context.Context) (paho.Client, <-chan error, error) {
	_, will, err := c.status(false)
	if err != nil {
		return nil, nil, err
	}
	lost := make(chan error, 1)
	o := paho.NewClientOptions().AddBroker(c.opts.BrokerURL).
		SetClientID("agorad-"+c.opts.DeviceID).
		SetCleanSession(false).
		// OrderMatters only concerns inbound callbacks (run one at a time,
		// in arrival order). Outbound order needs nothing: paho writes all
		// publishes of a connection from one goroutine, in call order.
		SetOrderMatters(true).
		SetAutoReconnect(false).SetConnectRetry(false).
		SetKeepAlive(c.opts.KeepAlive).SetPingTimeout(10*time.Second).
		SetConnectTimeout(c.opts.ConnectTimeout).SetWriteTimeout(c.opts.PublishTimeout).
		SetBinaryWill(protocol.Topic(c.opts.DeviceID, protocol.TopicStatus), will, 1, true).
		SetStore(paho.NewMemoryStore()).
		SetMessageChannelDepth(256).
		// A command is acknowledged to the broker only once it has been
		// carried out and its reply stored; a crash before that gets it
		// redelivered by the persistent session (commands are idempotent).
		SetAutoAckDisabled(true).
		SetDefaultPublishHandler(c.onMessage). // session-queued commands may arrive before Subscribe returns
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			select {
			case lost <- err:
			default:
			}
		})
	if c.opts.Username != "" {
		o.SetUsername(c.opts.Username)
		o.SetPassword(c.opts.Password)
	}
	if c.tls != nil {
		o.SetTLSConfig(c.tls)
	}
	cli := paho.NewClient(o)
	if err := wait(ctx, cli.Connect(), c.opts.ConnectTimeout+time.Second, nil); err != nil {
		cli.Disconnect(0)
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	topic := protocol.Topic(c.opts.DeviceID, protocol.TopicCommands)
	if err := wait(ctx, cli.Subscribe(topic, 1, c.onMessage), c.opts.PublishTimeout, lost); err != nil {
		cli.Disconnect(0)
		return nil, nil, fmt.Errorf("subscribe %s: %w", topic, err)
	}
	return cli, lost, nil
}

var errTimeout = errors.New("timed out waiting for the broker")

func wait(ctx context.Context, tok paho.Token, timeout time.Duration, lost <-chan error) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-tok.Done():
		return tok.Error()
	case err := <-lost:
		return fmt.Errorf("connection lost: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errTimeout
	}
}

// inbound is a valid command with the message to acknowledge once it is done.
type inbound struct {
	cmd protocol.Command
	msg paho.Message
}

// onMessage runs on paho's goroutine: validate, count, queue for
// serveCommands. Blocking here holds back further inbound messages, which is
// the back-pressure we want.
func (c *Client) onMessage(_ paho.Client, m paho.Message) {
	cmd, err := protocol.ParseCommand(c.opts.DeviceID, m.Payload())
	if err != nil {
		c.rejected.Add(1)
		c.log.Warn("rejected MQTT command", "topic", m.Topic(), "reason", err.Error(), "payload", protocol.Excerpt(m.Payload()))
		m.Ack() // malformed stays malformed: redelivery would not help
		return
	}
	c.commandsN.Add(1)
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	select {
	case c.commands <- inbound{cmd, m}:
	case <-stopped:
		// Not acknowledged: the broker redelivers it to the next session.
		c.log.Warn("MQTT command left for redelivery at shutdown", "id", cmd.ID, "type", cmd.Type)
	}
}

func (c *Client) serveCommands(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case in := <-c.commands:
			if c.handleCommand(ctx, in.cmd) {
				in.msg.Ack()
			}
		}
	}
}

// handleCommand carries out cmd and stores its reply; false when it could
// not, so the command is not acknowledged and comes back.
func (c *Client) handleCommand(ctx context.Context, cmd protocol.Command) bool {
	if cmd.Type == protocol.CmdAck {
		select {
		case c.acks <- cmd.IDs:
			return true
		case <-ctx.Done():
			return false
		}
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
	}
	body, err := json.Marshal(ack)
	if err == nil {
		_, err = c.outbox.Enqueue(buffer.LaneControl, buffer.KindAck, !c.Online(), body)
	}
	if err != nil {
		c.log.Error("queue reply to MQTT command", "id", cmd.ID, "type", cmd.Type, "err", err)
		return false
	}
	return true
}
