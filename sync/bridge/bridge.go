package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	"golang.org/x/sync/semaphore"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/protocol"
)

// Agent runs one AG-UI turn (*agui.Client).
type Agent interface {
	Run(ctx context.Context, in types.RunAgentInput) (agui.Result, error)
}

// Publisher sends commands to a device: QoS 1, not retained, in order, all
// sent before any PUBACK is waited for, returning once the broker has them
// all.
type Publisher interface {
	Publish(ctx context.Context, topic string, payloads ...[]byte) error
}

// Retry bounds how long one message is retried before it is parked.
type Retry struct {
	Initial time.Duration // first backoff; default 500ms
	Max     time.Duration // backoff cap; default 30s
	// MaxElapsed parks a message whose transient failures (agent unreachable,
	// 5xx, timeout, broken stream) lasted this long; default 10m.
	MaxElapsed time.Duration
	// RejectAttempts parks a message after this many rejections (HTTP 4xx,
	// RUN_ERROR); default 1: a rejected run did reach the graph, and another
	// attempt is another graph run.
	RejectAttempts int
	// RunTimeout bounds one run; default 2m.
	RunTimeout time.Duration
}

// Options configure a Bridge.
type Options struct {
	Agent     Agent
	Store     Store
	Publisher Publisher
	Metrics   *Metrics // nil: none
	Logger    *slog.Logger
	Retry     Retry
	// ThreadPrefix + device id is the AG-UI threadId (default "": the
	// device id itself, one thread per device).
	ThreadPrefix string
	// MaxPayload refuses larger device messages; default and minimum
	// protocol.MaxMessageBytes, the most the device ever sends in one
	// message (a larger batch comes in parts).
	MaxPayload int
	// PerDeviceLag exports the per-device lag and online gauges (one series
	// per device id ever seen).
	PerDeviceLag bool
	// MaxConcurrentRuns bounds the runs in flight from this bridge (default
	// 64): an agent given a thousand turns at once finishes them all late
	// instead of most of them early.
	MaxConcurrentRuns int
	// MaxSeqJump refuses (parks) a message whose seq is more than this
	// above the last handed over from its device store, plus the outbox the
	// device's status reports (default DefaultMaxSeqJump).
	MaxSeqJump int
	// MaxBatchBytes parks a batch whose parts add up to more (default
	// DefaultMaxBatchBytes); JoinBudget bounds the bytes of the batches
	// joined and run at once (default DefaultJoinBudget); PartTTL parks a
	// batch whose parts have not all come this long after its first
	// (default DefaultPartTTL; SweepParts applies it).
	MaxBatchBytes int
	JoinBudget    int
	PartTTL       time.Duration
	// StreamReplies says what of an utterance's answer is sent to the
	// device while the graph writes it (stream.go): StreamSpoken (default),
	// StreamWritten or StreamOff.
	StreamReplies string
}

// Bridge turns device messages into AG-UI runs and answers. Handle must not
// be called concurrently for the same device (the transports serialise per
// device); different devices run in parallel.
type Bridge struct {
	o      Options
	m      *Metrics
	log    *slog.Logger
	runs   chan struct{}       // semaphore of MaxConcurrentRuns
	joins  *semaphore.Weighted // JoinBudget bytes of batches joined at once
	partMu [64]sync.Mutex      // a batch's collection vs. its expiry, striped by device
}

// New checks opts and fills defaults.
func New(o Options) (*Bridge, error) {
	if o.Agent == nil || o.Store == nil || o.Publisher == nil {
		return nil, errors.New("bridge: Agent, Store and Publisher are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Retry.Initial, 500*time.Millisecond)
	def(&o.Retry.Max, 30*time.Second)
	def(&o.Retry.MaxElapsed, 10*time.Minute)
	def(&o.Retry.RunTimeout, 2*time.Minute)
	if o.Retry.RejectAttempts <= 0 {
		o.Retry.RejectAttempts = 1
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = protocol.MaxMessageBytes
	}
	if o.MaxPayload < protocol.MaxMessageBytes {
		return nil, fmt.Errorf("bridge: MaxPayload %d is below protocol.MaxMessageBytes (%d), the largest message a device sends",
			o.MaxPayload, protocol.MaxMessageBytes)
	}
	m := o.Metrics
	if m == nil {
		m = NewMetrics() // unregistered: records into the void
	}
	if o.MaxConcurrentRuns <= 0 {
		o.MaxConcurrentRuns = 64
	}
	if o.MaxSeqJump <= 0 {
		o.MaxSeqJump = DefaultMaxSeqJump
	}
	if o.MaxBatchBytes <= 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.JoinBudget <= 0 {
		o.JoinBudget = DefaultJoinBudget
	}
	def(&o.PartTTL, DefaultPartTTL)
	switch o.StreamReplies {
	case "":
		o.StreamReplies = StreamSpoken
	case StreamSpoken, StreamWritten, StreamOff:
	default:
		return nil, fmt.Errorf("bridge: StreamReplies %q is not %q, %q or %q", o.StreamReplies, StreamSpoken, StreamWritten, StreamOff)
	}
	return &Bridge{o: o, m: m, log: o.Logger.With("component", "bridge"), runs: make(chan struct{}, o.MaxConcurrentRuns),
		joins: semaphore.NewWeighted(int64(o.JoinBudget))}, nil
}

// ThreadID is the AG-UI thread of a device.
func (b *Bridge) ThreadID(device string) string { return b.o.ThreadPrefix + device }

// ParseTopic splits agora/v1/<device>/<name>.
func ParseTopic(topic string) (device, name string, ok bool) {
	rest, found := strings.CutPrefix(topic, "agora/v1/")
	if !found {
		return "", "", false
	}
	device, name, found = strings.Cut(rest, "/")
	if !found || strings.Contains(name, "/") || protocol.ValidateDeviceID(device) != nil {
		return "", "", false
	}
	return device, name, true
}

// DeviceOf returns the device id of a topic, "" when it is not a device topic.
func DeviceOf(topic string) string {
	d, _, _ := ParseTopic(topic)
	return d
}

// Handle consumes one device message. nil means the transport may
// acknowledge it (handed over, a duplicate, parked, or refused as bad input);
// an error means it must be redelivered (shutdown, store or broker failure).
//
// onWait, when not nil, is called while a run is being retried (JetStream
// uses it to keep the message from being redelivered elsewhere).
func (b *Bridge) Handle(ctx context.Context, topic string, payload []byte, onWait func()) error {
	ctx = context.WithValue(ctx, handleStartKey{}, time.Now())
	device, name, ok := ParseTopic(topic)
	if !ok {
		b.bad("topic", "not an agora/v1/<device>/<name> topic", topic, payload)
		return nil
	}
	if len(payload) > b.o.MaxPayload {
		what := fmt.Sprintf("%d bytes (max %d)", len(payload), b.o.MaxPayload)
		b.bad("oversize", what, topic, payload)
		return b.parkRefused(ctx, device, topic, nil, payload, "oversize: "+what)
	}
	if !utf8.Valid(payload) {
		why := b.bad("utf8", "payload is not valid UTF-8", topic, payload)
		if name == protocol.TopicUtterances || name == protocol.TopicBatches {
			return b.parkBad(device, topic, payload, why)
		}
		return nil
	}
	switch name {
	case protocol.TopicUtterances, protocol.TopicBatches:
		err := b.data(ctx, device, name, topic, payload, onWait)
		if errors.Is(err, ErrUnstorable) {
			// The store refused a key made of the message's id: retrying
			// cannot help and would hold the device's (and, on JetStream,
			// its partition's) later messages, so it is parked at once
			// under a content hash.
			why := b.bad("id", "the store cannot hold it: "+err.Error(), topic, payload)
			return b.parkBad(device, topic, payload, why)
		}
		return err
	case protocol.TopicStatus:
		return b.status(ctx, device, topic, payload)
	case protocol.TopicEvents, protocol.TopicAcks:
		return b.control(ctx, device, name, topic, payload)
	default:
		b.bad("topic", "unknown topic name "+strconv.Quote(name), topic, payload)
		return nil
	}
}
