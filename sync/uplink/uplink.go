package uplink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

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
