// Package uplink drains the device outbox to the backend over MQTT and takes
// the backend's commands: a paho client with a persistent session, QoS 1,
// retained status and last will, its own reconnect loop with exponential
// backoff and full jitter, and delete-after-PUBACK delivery in seq order.
// A batch (and under delivery: backend every entry) is deleted only once
// the backend acked it too (confirm.go); one the backend parked is kept in
// the outbox and not published again by this process (parked.go).
package uplink

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
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

// CommandHandler acts on valid set_mode, ping and reply commands. Its
// result is answered to the backend as an ack on the control lane (ok, or
// the error text), except for a reply it accepted: the handler queues that
// ack itself, with the reply's outcome. ack commands are handled by the
// uplink itself. A ping is handed over as it is received, ahead of the
// commands waiting in the store's inbox, possibly while another command is
// being handled: HandleCommand must be safe for that.
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
	BackoffMin     time.Duration // default 500ms
	BackoffMax     time.Duration // reconnect delay cap: the backlog waits at most this once the broker is back; default 3s
	Window         int           // publishes awaiting PUBACK at once; default 64

	// NetChanged, when set, cuts a reconnect wait short: a value on it (a
	// link, address or route change: sync/netwatch) means try now.
	NetChanged <-chan struct{}
	// OnPublished, when set, is called with each outbox entry the broker
	// PUBACKed (every message of it), on the drain's goroutine: keep it short.
	OnPublished func(e buffer.Entry)

	// Delivery is DeliveryBroker (default: delete after PUBACK) or
	// DeliveryBackend: utterances, batches and events stay in the outbox
	// after their PUBACK until an ack command names their id, and are
	// published again (same id and seq) every AckTimeout until then.
	Delivery string
	// BatchAckRequired no longer changes anything: every batch waits for
	// the backend's ack in both delivery modes (confirm.go, needsConfirm).
	// Kept so older configurations and callers still build.
	BatchAckRequired bool
	AckTimeout       time.Duration // default 60s
	// StuckAfter: the head of the outbox waiting this long while online is
	// a stuck queue (a warning and Stats.StuckFor). Default 5m.
	StuckAfter time.Duration

	Status StatusFunc
	Logger *slog.Logger
}

// Stats are counters for metrics.
type Stats struct {
	Published        uint64 // outbox entries confirmed by PUBACK
	Republished      uint64 // entries released for re-publication after AckTimeout
	Connects         uint64
	ConnectFailures  uint64
	Reconnects       uint64 // sessions that ended other than by shutdown
	Commands         uint64 // valid commands received
	RejectedCommands uint64 // malformed commands received
	HandlerErrors    uint64
	// Confirmed counts entries the backend acknowledged (batches, and
	// everything under DeliveryBackend).
	Confirmed uint64
	// Unconfirmed is the number of entries PUBACKed by the broker at least
	// AckTimeout ago and still not confirmed by the backend (now).
	Unconfirmed int
	// StuckFor is how long the head of the outbox has waited while online,
	// once that passed StuckAfter (0 before, when empty or offline).
	StuckFor time.Duration
	// OwedReplies are command replies the store refused so far, kept in
	// memory until it has room; RefusedReplies were dropped (too many owed).
	OwedReplies    int
	RefusedReplies uint64
	// Parked is the number of outbox entries the backend refused and
	// parked, kept on the device (Parked lists them); ParkedNotices counts
	// the ids the backend reported parked, also those no longer held.
	Parked        int
	ParkedNotices uint64
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
	kick          chan struct{} // the data lane's probe settled (confirm.go)
	commands      *inbox

	mu       sync.Mutex
	awaiting map[string]*held    // PUBACKed entries waiting for the backend's ack
	probe    string              // the data entry published again alone, "" for none (confirm.go)
	early    map[string]earlyAck // acks for entries not (yet) waiting
	// earlyParked: parked commands for ids not (yet) held (parked.go).
	earlyParked map[string]parkedNote
	stopped     <-chan struct{} // ctx.Done() of Run: unblocks paho callbacks at shutdown
	cur         paho.Client     // the session's client, nil between sessions (unstored.go)

	owed      []protocol.AckBody // replies the store refused, oldest first (serveCommands only)
	owedN     atomic.Int64
	rejectLog limiter

	published, republished, connects, connectFailures, reconnects atomic.Uint64
	commandsN, rejected, handlerErrors, confirmed, refusedReplies atomic.Uint64
	unconfirmed, stuckFor                                         atomic.Int64
	parkedSeen                                                    atomic.Uint64
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
	setDefault(&opts.BackoffMin, 500*time.Millisecond)
	setDefault(&opts.BackoffMax, 3*time.Second)
	setDefault(&opts.AckTimeout, 60*time.Second)
	setDefault(&opts.StuckAfter, 5*time.Minute)
	switch opts.Delivery {
	case "":
		opts.Delivery = DeliveryBroker
	case DeliveryBroker, DeliveryBackend:
	default:
		return nil, fmt.Errorf("uplink options: delivery %q: want %q or %q", opts.Delivery, DeliveryBroker, DeliveryBackend)
	}
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
		kick:          make(chan struct{}, 1),
		commands:      newInbox(),
		awaiting:      map[string]*held{},
		early:         map[string]earlyAck{},
		rejectLog:     limiter{every: 10 * time.Second, burst: 5},
	}
	if secure || opts.CAFile != "" || opts.CertFile != "" {
		var err error
		if c.tls, err = TLSConfig(opts.CAFile, opts.CertFile, opts.KeyFile, opts.ServerName); err != nil {
			return nil, err
		}
		if hint := certHint(opts.CertFile, time.Now()); hint != "" {
			c.log.Error("MQTT client certificate not valid; the broker will refuse the connection", "problem", hint)
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

// certHint says why the client certificate in certFile is not valid at
// now ("" when it is, or cannot be read: TLSConfig reported that).
func certHint(certFile string, now time.Time) string {
	if certFile == "" {
		return ""
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return ""
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return ""
	}
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return ""
	}
	switch {
	case now.After(leaf.NotAfter):
		return fmt.Sprintf("client certificate %s expired at %s: the broker refuses it; install a renewed certificate", certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fmt.Sprintf("client certificate %s is not valid before %s: is the device clock right?", certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return ""
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
		Confirmed: c.confirmed.Load(), Unconfirmed: int(c.unconfirmed.Load()), StuckFor: time.Duration(c.stuckFor.Load()),
		OwedReplies: int(c.owedN.Load()), RefusedReplies: c.refusedReplies.Load(),
		Parked: c.parkedCount(), ParkedNotices: c.parkedSeen.Load(),
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
	g.Go(func() error { c.watch(ctx); return nil })
	return g.Wait()
}

// connectLoop runs sessions back to back, with backoff between failures.
func (c *Client) connectLoop(ctx context.Context) {
	attempt := 0
	for ctx.Err() == nil {
		cli, lost, err := c.connect(ctx)
		if err != nil {
			// The broker's answer to a bad client certificate is often a
			// bare reset: say what is wrong with ours, if anything.
			if hint := certHint(c.opts.CertFile, time.Now()); hint != "" {
				err = fmt.Errorf("%w (%s)", err, hint)
			}
			c.connectFailures.Add(1)
			delay := backoff(c.opts.BackoffMin, c.opts.BackoffMax, attempt)
			c.log.Warn("connect to MQTT broker failed", "broker", c.url, "attempt", attempt+1, "retry_in", delay.Round(time.Millisecond), "err", err)
			attempt++
			if !c.backoffSleep(ctx, delay, &attempt) {
				break
			}
			continue
		}
		c.connects.Add(1)
		c.setOnline(true)
		c.log.Info("connected to MQTT broker", "broker", c.url)
		// A new session publishes every held entry again, oldest first: what
		// the broker PUBACKed on a connection it then dropped proves nothing
		// (mosquitto PUBACKs a publish its ACL denies; before 2.0.22 it may
		// drop the client too), and going back keeps the backend's seq order.
		c.releaseAll()
		began := time.Now()
		c.setCurrent(cli)
		err = c.session(ctx, cli, lost)
		c.setCurrent(nil)
		c.setOnline(false)
		if ctx.Err() != nil {
			c.goodbye(cli)
			break
		}
		c.reconnects.Add(1)
		// A broker that drops every session right away (ACL denial, a
		// session taken over) is not hammered: short sessions back off as
		// failed connects do.
		if time.Since(began) < shortSession {
			attempt++
		} else {
			attempt = 0
		}
		delay := backoff(c.opts.BackoffMin, c.opts.BackoffMax, attempt)
		c.log.Warn("MQTT session ended", "broker", c.url, "after", time.Since(began).Round(time.Millisecond), "retry_in", delay.Round(time.Millisecond), "err", err)
		cli.Disconnect(0)
		if !c.backoffSleep(ctx, delay, &attempt) {
			break
		}
	}
}

// goodbye publishes online:false (a clean disconnect suppresses the will).
func (c *Client) goodbye(cli paho.Client) {
	if topic, payload, err := c.status(false); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = publishWait(ctx, cli, topic, true, payload, 2*time.Second, nil) // best effort: shutting down
		cancel()
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

// backoffSleep waits d before the next connect, or less when the network
// changed (then attempt starts over: a new network is a new situation). It
// returns false when ctx ended.
func (c *Client) backoffSleep(ctx context.Context, d time.Duration, attempt *int) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-c.opts.NetChanged: // nil: never
		c.log.Info("network changed: connecting to the MQTT broker now", "broker", c.url, "instead_of_in", d.Round(time.Millisecond))
		*attempt = 0
		return true
	}
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

// will is the last will: offline, without the counts of this moment.
func (c *Client) will() ([]byte, error) {
	var storeID string
	if c.opts.Status != nil {
		storeID = c.opts.Status().StoreID
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("last will id: %w", err)
	}
	_, payload, err := protocol.RenderWill(c.opts.DeviceID, id.String(), storeID, time.Now())
	return payload, err
}

// connect opens one paho connection (a fresh client each time: paho's own
// retry is off, the outbox is the only resend queue) and subscribes to
// commands.
func (c *Client) connect(ctx context.Context) (paho.Client, <-chan error, error) {
	will, err := c.will()
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

// shortSession: a session ending sooner counts as a failed attempt for the
// reconnect backoff.
const shortSession = 10 * time.Second

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
