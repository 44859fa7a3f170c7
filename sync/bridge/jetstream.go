package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// JetStreamOptions configure fleet mode: devices talk MQTT to nats-server,
// whose account mapping puts each device's messages into one of Partitions
// subjects agora.in.<p>.<device>.<topic> (docs/bridge.md); a work-queue
// stream keeps them, and one durable pull consumer per partition with
// MaxAckPending 1 hands them out one at a time, to whichever bridge pulls.
type JetStreamOptions struct {
	URL        string // nats://host:4222
	Partitions int    // must equal the N of the server's partition(N,1) mapping
	Stream     string // default AGORA_IN
	Prefix     string // default agora.in
	Bucket     string // KV bucket of the shared de-duplication records; default agora_bridge
	Replicas   int    // stream and bucket replicas; default 1
	// AckWait is how long a message held by a dead bridge waits before it is
	// redelivered to another; a live bridge extends it while it works.
	AckWait time.Duration // default 30s
	// DeviceHold bounds how long one device's message holds its partition:
	// a run still going after it continues in the background and the
	// device's later messages wait in its backlog in the KV bucket
	// (aside.go), so the other devices of the partition go on. Default 10s.
	DeviceHold time.Duration
	// MaxBacklog / MaxBacklogBytes bound a device's backlog (defaults
	// 10,000 / 64 MiB); past them the partition waits for it.
	MaxBacklog      int
	MaxBacklogBytes int64
	// MaxAsideDevices bounds the devices whose backlog this bridge hands
	// over at once (default 1,024); past it a slow run holds its partition.
	MaxAsideDevices int
	// User and Password authenticate to a server with an authorization
	// block (natsconf: the bridge's user); empty: none, or those of URL.
	User, Password string
	Logger         *slog.Logger
}

// JetStream is the fleet-mode transport.
type JetStream struct {
	o   JetStreamOptions
	nc  *nats.Conn
	js  nats.JetStreamContext
	kv  nats.KeyValue
	log *slog.Logger
	id  string // this bridge's name as a backlog owner

	mu       sync.Mutex
	drainers int            // devices whose backlog this bridge drains
	wg       sync.WaitGroup // the drainers
}

// ConnectJetStream connects and makes sure the stream, the partition
// consumers and the KV bucket exist (idempotent: every bridge does it).
func ConnectJetStream(o JetStreamOptions) (*JetStream, error) {
	if o.Partitions <= 0 {
		return nil, errors.New("jetstream: partitions must be > 0 (the server mapping's partition count)")
	}
	if o.Stream == "" {
		o.Stream = "AGORA_IN"
	}
	if o.Prefix == "" {
		o.Prefix = "agora.in"
	}
	if o.Bucket == "" {
		o.Bucket = "agora_bridge"
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.DeviceHold <= 0 {
		o.DeviceHold = 10 * time.Second
	}
	if o.MaxBacklog <= 0 {
		o.MaxBacklog = 10000
	}
	if o.MaxBacklogBytes <= 0 {
		o.MaxBacklogBytes = 64 << 20
	}
	if o.MaxAsideDevices <= 0 {
		o.MaxAsideDevices = 1024
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	log := o.Logger.With("component", "bridge-jetstream")
	opts := []nats.Option{nats.Name("agora-bridge"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("NATS reconnected") })}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", redactURL(o.URL), err)
	}
	js, err := nc.JetStream()
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	j := &JetStream{o: o, nc: nc, js: js, log: log, id: nats.NewInbox()[len(nats.InboxPrefix):]}
	if err := j.setup(); err != nil {
		nc.Close()
		return nil, err
	}
	return j, nil
}

func (j *JetStream) setup() error {
	sc := &nats.StreamConfig{Name: j.o.Stream, Subjects: []string{j.o.Prefix + ".>"}, Retention: nats.WorkQueuePolicy,
		Storage: nats.FileStorage, Replicas: j.o.Replicas, Discard: nats.DiscardOld}
	if _, err := j.js.AddStream(sc); err != nil {
		if _, ierr := j.js.StreamInfo(j.o.Stream); ierr != nil {
			return fmt.Errorf("create stream %s: %w", j.o.Stream, err)
		}
	}
	for p := range j.o.Partitions {
		cc := &nats.ConsumerConfig{Durable: consumerName(p), FilterSubject: fmt.Sprintf("%s.%d.>", j.o.Prefix, p),
			AckPolicy: nats.AckExplicitPolicy, AckWait: j.o.AckWait, MaxAckPending: 1, MaxDeliver: -1,
			DeliverPolicy: nats.DeliverAllPolicy, MaxWaiting: 512}
		if _, err := j.js.AddConsumer(j.o.Stream, cc); err != nil {
			if _, ierr := j.js.ConsumerInfo(j.o.Stream, cc.Durable); ierr != nil {
				return fmt.Errorf("create consumer %s: %w", cc.Durable, err)
			}
		}
	}
	kv, err := j.js.KeyValue(j.o.Bucket)
	if errors.Is(err, nats.ErrBucketNotFound) {
		kv, err = j.js.CreateKeyValue(&nats.KeyValueConfig{Bucket: j.o.Bucket, History: 1, Storage: nats.FileStorage, Replicas: j.o.Replicas})
		if err != nil {
			kv, err = j.js.KeyValue(j.o.Bucket) // another bridge made it first
		}
	}
	if err != nil {
		return fmt.Errorf("KV bucket %s: %w", j.o.Bucket, err)
	}
	j.kv = kv
	return nil
}

func consumerName(p int) string { return "p" + strconv.Itoa(p) }

// Store is the shared de-duplication store in the KV bucket.
func (j *JetStream) Store() Store { return &KVStore{kv: j.kv, log: j.log} }

// Close closes the connection.
func (j *JetStream) Close() { j.nc.Close() }

// topicOf maps agora.in.<p>.<device>.<name> back to agora/v1/<device>/<name>
// (device ids cannot hold dots on NATS).
func (j *JetStream) topicOf(subject string) string {
	rest, ok := strings.CutPrefix(subject, j.o.Prefix+".")
	if !ok {
		return subject
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return subject
	}
	return "agora/v1/" + parts[1] + "/" + parts[2]
}

// Run pulls from every partition and feeds handle until ctx ends: per
// partition one message at a time, acknowledged (AckSync) only after handle
// returned nil; while handle works the message's AckWait is extended, so a
// slow run is not given to another bridge, and a dead bridge's message is.
// Statuses are read from core NATS (every bridge sees all of them).
func (j *JetStream) Run(ctx context.Context, handle func(ctx context.Context, topic string, payload []byte) error) error {
	statusSub, err := j.nc.Subscribe("agora.v1.*.status", func(m *nats.Msg) {
		if err := handle(ctx, strings.ReplaceAll(m.Subject, ".", "/"), m.Data); err != nil {
			// Core NATS has no redelivery: the next status replaces it.
			j.log.Warn("recording a device status failed; its next status replaces it", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe to statuses: %w", err)
	}
	defer func() {
		if err := statusSub.Unsubscribe(); err != nil {
			j.log.Warn("ending the status subscription", "err", err)
		}
	}()
	defer j.wg.Wait() // the drainers end with ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		for {
			if err := j.claimAside(ctx, handle); err != nil {
				j.log.Warn("looking for device backlogs to take over", "err", err)
			}
			if !sleepCtx(ctx, j.o.AckWait) {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, j.o.Partitions)
	for p := range j.o.Partitions {
		sub, err := j.js.PullSubscribe(fmt.Sprintf("%s.%d.>", j.o.Prefix, p), consumerName(p), nats.Bind(j.o.Stream, consumerName(p)))
		if err != nil {
			return fmt.Errorf("bind consumer %s: %w", consumerName(p), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.partition(ctx, sub, handle); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (j *JetStream) partition(ctx context.Context, sub *nats.Subscription, handle func(ctx context.Context, topic string, payload []byte) error) error {
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msgs, err := sub.Fetch(1, nats.Context(fctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
				j.log.Warn("fetch failed", "consumer", sub.Subject, "err", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		for _, m := range msgs {
			j.one(ctx, m, handle)
		}
	}
	return nil
}

// one hands over one message of a partition: behind its device's backlog
// if it has one, else directly; a run still going after DeviceHold moves
// the device aside (aside.go) and frees the partition.
func (j *JetStream) one(ctx context.Context, m *nats.Msg, handle func(ctx context.Context, topic string, payload []byte) error) {
	topic := j.topicOf(m.Subject)
	device := DeviceOf(topic)
	stop := make(chan struct{})
	var stopOnce sync.Once
	release := func() { stopOnce.Do(func() { close(stop) }) }
	defer release()
	go j.keepInProgress(m, stop)
	if device != "" {
		for {
			kept, err := j.appendAside(device, topic, m.Data)
			if err == nil && !kept {
				break
			}
			if err == nil {
				j.ack(m)
				return
			}
			// Full or unreadable: the device's order needs this message
			// behind its backlog, so the partition waits.
			j.log.Warn("keeping a message behind its device's backlog; retrying", "topic", topic, "err", err)
			if !sleepCtx(ctx, time.Second) {
				j.nak(m)
				return
			}
		}
	}
	hctx, cancel := context.WithCancel(ctx)
	res := make(chan bool, 1)
	go func() {
		res <- retryHandle(hctx, j.log, func(ctx context.Context) error { return handle(ctx, topic, m.Data) }, "topic", topic)
	}()
	hold := time.NewTimer(j.o.DeviceHold)
	defer hold.Stop()
	select {
	case ok := <-res:
		cancel()
		j.finish(m, ok)
		return
	case <-hold.C:
	}
	if device != "" && j.reserveDrainer() {
		err := j.startAside(device, topic, m.Data)
		if err == nil {
			release()
			j.ack(m) // kept in the backlog now
			j.log.Info("device's run outlasted device_hold: its messages wait in its backlog", "device", device,
				"hold", j.o.DeviceHold)
			j.wg.Add(1)
			go func() { defer j.wg.Done(); j.drain(hctx, cancel, device, res, len(m.Data), handle) }()
			return
		}
		j.releaseDrainer()
		j.log.Error("moving a slow device aside; its message holds the partition", "device", device, "err", err)
	}
	ok := <-res
	cancel()
	j.finish(m, ok)
}

// keepInProgress keeps the message ours while it is worked on (a dead
// bridge's is redelivered after AckWait), until stop.
func (j *JetStream) keepInProgress(m *nats.Msg, stop <-chan struct{}) {
	t := time.NewTicker(j.o.AckWait / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := m.InProgress(); err != nil {
				j.log.Warn("extending the ack wait of a message being handled; it may be redelivered to another bridge",
					"subject", m.Subject, "err", err)
			}
		}
	}
}

// finish acknowledges a handed-over message, or gives it back (shutdown).
func (j *JetStream) finish(m *nats.Msg, ok bool) {
	if ok {
		j.ack(m)
	} else {
		j.nak(m)
	}
}

func (j *JetStream) ack(m *nats.Msg) {
	if err := m.AckSync(nats.AckWait(10 * time.Second)); err != nil {
		// Not confirmed: it may be redelivered, and is then a duplicate.
		j.log.Warn("ack not confirmed", "subject", m.Subject, "err", err)
	}
}

// nak gives the message to another bridge now rather than after AckWait.
func (j *JetStream) nak(m *nats.Msg) {
	if err := m.Nak(); err != nil {
		j.log.Warn("giving a message back (nak)", "subject", m.Subject, "err", err)
	}
}

// redactURL hides a password given in a NATS URL (nats://user:pw@host).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}
