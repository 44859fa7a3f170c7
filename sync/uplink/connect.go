package uplink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/agora/agorad/sync/protocol"
)

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
