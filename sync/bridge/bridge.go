package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	"golang.org/x/sync/semaphore"

	"github.com/agora/agorad/buffer"
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

// bad counts and logs refused input and returns "reason: what" for a dead
// letter.
func (b *Bridge) bad(reason, what, topic string, payload []byte) string {
	b.m.BadInput.WithLabelValues(reason).Inc()
	b.log.Warn("device message refused", "reason", reason, "what", what, "topic", excerptString(topic),
		"payload", agui.Excerpt(payload))
	return reason + ": " + what
}

func excerptString(s string) string {
	if len(s) > agui.ExcerptLen {
		return s[:agui.ExcerptLen] + "…"
	}
	return s
}

// envelope decodes and checks the common header against the topic; a
// refusal is counted, logged and returned as "reason: what" ("" when ok).
func (b *Bridge) envelope(device, wantType, topic string, payload []byte, v any) (protocol.Envelope, string) {
	var env protocol.Envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return env, b.bad("json", "not protocol JSON: "+err.Error(), topic, payload)
	}
	var problem, reason string
	switch {
	case env.V != protocol.Version:
		problem, reason = fmt.Sprintf("v %d, want %d", env.V, protocol.Version), "version"
	case env.DeviceID != device:
		problem, reason = fmt.Sprintf("device_id %q does not match the topic's %q", excerptString(env.DeviceID), device), "device_mismatch"
	case wantType != "" && env.Type != wantType:
		problem, reason = fmt.Sprintf("type %q on a %s topic", excerptString(env.Type), wantType), "type"
	case !validID(env.ID):
		problem, reason = "missing or malformed id (1-128 of A-Z a-z 0-9 . _ = -, no leading, trailing or double '.')", "id"
	}
	if problem != "" {
		return env, b.bad(reason, problem, topic, payload)
	}
	if v != nil {
		if err := json.Unmarshal(payload, v); err != nil {
			return env, b.bad("json", "body: "+err.Error(), topic, payload)
		}
	}
	return env, ""
}

// validID accepts the device's UUIDv7 ids and anything else that is safe in
// store keys, NATS KV keys and command ids: a KV key is dot-separated
// tokens, so an id may not start or end with '.' nor hold "..".
func validID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' || id[len(id)-1] == '.' || strings.Contains(id, "..") {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '=') {
			return false
		}
	}
	return true
}

func (b *Bridge) status(ctx context.Context, device, topic string, payload []byte) error {
	var st protocol.StatusMessage
	env, refused := b.envelope(device, protocol.TypeStatus, topic, payload, &st)
	if refused != "" {
		return nil
	}
	ds, err := b.o.Store.Device(device)
	if err != nil {
		return err
	}
	// A live status older than the one kept (a retained copy crossing a live
	// one) is ignored. An offline status always counts: the last will carries
	// the time its connection was opened, older than the statuses that
	// connection published since. (A will of a connection taken over by the
	// device's reconnect can thus mark it offline until its next status.)
	if st.Online && st.UpdatedAt != "" && st.UpdatedAt < ds.StatusAt {
		b.counted(ctx, device, "status", env, "stale")
		return nil
	}
	if st.Mode != "" { // the last will carries no mode: keep the last known
		ds.Mode = st.Mode
	}
	if st.Online && env.StoreID != "" { // the will carries no outbox
		ds.StatusStoreID, ds.StatusOutbox = env.StoreID, max(st.Outbox, 0)
	}
	ds.Online, ds.StatusAt, ds.UpdatedAt = st.Online, st.UpdatedAt, time.Now()
	if err := b.o.Store.PutDevice(device, ds); err != nil {
		return err
	}
	online := 0.0
	if st.Online {
		online = 1
	}
	if b.o.PerDeviceLag { // one series per device id: a fleet (or a stranger) turns it off
		b.m.Online.WithLabelValues(device).Set(online)
	}
	b.counted(ctx, device, "status", env, "stored")
	b.log.Debug("device status", "device", device, "online", st.Online, "mode", st.Mode)
	return nil
}

// control logs device events, dead letters and acks; they need no run.
func (b *Bridge) control(ctx context.Context, device, name, topic string, payload []byte) error {
	var msg struct {
		protocol.Envelope
		Event       string `json:"event"`
		Reason      string `json:"reason"`
		CommandType string `json:"command_type"`
		CommandID   string `json:"command_id"`
		OK          bool   `json:"ok"`
		Outcome     string `json:"outcome"`
		Error       string `json:"error"`
	}
	env, refused := b.envelope(device, "", topic, payload, &msg)
	if refused != "" {
		return nil
	}
	switch env.Type {
	case protocol.TypeAck:
		if msg.CommandType == protocol.CmdReply {
			outcome := msg.Outcome
			if outcome == "" {
				outcome = map[bool]string{true: "ok", false: "failed"}[msg.OK]
			}
			b.m.Outcomes.WithLabelValues(outcome).Inc()
		}
		b.log.Debug("device ack", "device", device, "command", msg.CommandID, "type", msg.CommandType, "ok", msg.OK)
	case protocol.TypeEvent:
		b.log.Info("device event", "device", device, "event", msg.Event, "seq", env.Seq, "offline", env.Offline)
		if err := b.ackOnly(ctx, device, env.ID); err != nil {
			return err
		}
	case protocol.TypeDeadLetter:
		b.log.Warn("device dead letter", "device", device, "id", env.ID, "reason", excerptString(msg.Reason))
		if err := b.keepDeviceDeadLetter(ctx, device, topic, env, payload, msg.Reason); err != nil {
			return err
		}
	default:
		b.bad("type", "unexpected type "+strconv.Quote(excerptString(env.Type)), topic, payload)
		return nil
	}
	b.counted(ctx, device, env.Type, env, "logged")
	return nil
}

// data hands an utterance or batch over to the graph, once.
func (b *Bridge) data(ctx context.Context, device, name, topic string, payload []byte, onWait func()) error {
	var (
		env     protocol.Envelope
		refused string // "reason: what" of bad input
		utt     protocol.Utterance
		batch   protocol.Batch
		typ     string
	)
	if name == protocol.TopicUtterances {
		typ = protocol.TypeUtterance
		env, refused = b.envelope(device, typ, topic, payload, &utt)
		if refused == "" && strings.TrimSpace(utt.Text) == "" {
			refused = b.bad("empty_text", "utterance without text", topic, payload)
		}
	} else {
		typ = protocol.TypeBatch
		env, refused = b.envelope(device, typ, topic, payload, &batch)
		if refused == "" && (len(batch.Items) == 0 || batch.Count != len(batch.Items)) {
			refused = b.bad("batch_count", fmt.Sprintf("count %d with %d items", batch.Count, len(batch.Items)), topic, payload)
		}
		if err := protocol.ValidatePart(batch); refused == "" && err != nil {
			refused = b.bad("batch_part", err.Error(), topic, payload)
		}
	}
	if refused != "" {
		b.counted(ctx, device, typ, env, "invalid")
		return b.parkBad(device, topic, payload, refused)
	}
	rec, found, err := b.o.Store.Get(device, env.ID)
	if err != nil {
		return err
	}
	if found {
		// Redelivered (the device's at-least-once, or our crash before the
		// transport ack): the graph is not asked again; the answer and the
		// ack are re-sent in case they were lost (once per batch: on its
		// last part).
		b.counted(ctx, device, typ, env, "duplicate")
		if batch.Part != nil && batch.Part.Index != batch.Part.Of {
			return nil
		}
		return b.finish(ctx, device, env, rec)
	}
	if env.StoreID != "" {
		// The same (store_id, seq) under another id: the device re-sent
		// an entry whose id it lost. Not run again; the stored answer is
		// re-sent and the new id acknowledged.
		orig, dup, err := b.o.Store.BySeq(device, env.StoreID, env.Seq)
		if err != nil {
			return err
		}
		if dup {
			rec, found, err := b.o.Store.Get(device, orig)
			if err != nil {
				return err
			}
			if found {
				b.counted(ctx, device, typ, env, "duplicate")
				b.log.Warn("same store_id and seq as a message handed over before, under a new id; not run again",
					"device", device, "id", env.ID, "first_id", orig, "store_id", env.StoreID, "seq", env.Seq)
				if batch.Part != nil && batch.Part.Index != batch.Part.Of {
					return nil
				}
				return b.finish(ctx, device, env, rec)
			}
		}
	}
	ds, err := b.o.Store.Device(device)
	if err != nil {
		return err
	}
	// A later part of a batch whose first part was taken is not checked
	// again: its seq is the first's (JoinParts holds them to it), and a
	// newer message run meanwhile must not cut the batch in two.
	var collecting bool
	if batch.Part != nil {
		if _, collecting, err = b.o.Store.PendingBatch(device, env.ID); err != nil {
			return err
		}
	}
	if why := b.seqJump(ds, env); why != "" && !collecting {
		b.m.BadInput.WithLabelValues("seq_jump").Inc()
		b.counted(ctx, device, typ, env, "invalid")
		return b.parkRefused(ctx, device, topic, &env, payload, why)
	}
	if env.StoreID != "" && env.StoreID == ds.StoreID && env.Seq < ds.StoreSeq && !collecting {
		// A new id with a seq below one already handed over from the same
		// store: the device never produces that (it re-sends under the
		// original id), so it is refused rather than run out of order.
		b.m.BadInput.WithLabelValues("seq_regression").Inc()
		b.counted(ctx, device, typ, env, "invalid")
		return b.parkRefused(ctx, device, topic, &env, payload,
			fmt.Sprintf("seq_regression: seq %d under a new id, below %d of store %s", env.Seq, ds.StoreSeq, env.StoreID))
	}
	if batch.Part != nil {
		var complete bool
		var release func()
		if batch, payload, release, complete, err = b.collectPart(ctx, device, env, batch, payload); err != nil || !complete {
			return err
		}
		defer release()
	}
	if env.Seq <= ds.LastSeq {
		// A new id with an old seq: the device re-published a batch after
		// later messages (batch_ack_required) or its store was reset. It is
		// still handed over; order is what the device produced.
		b.m.BadInput.WithLabelValues("seq_regression").Inc()
		b.log.Warn("message seq not above the last handed over", "device", device, "id", env.ID,
			"seq", env.Seq, "last_seq", ds.LastSeq)
	}
	var in types.RunAgentInput
	var lang string
	if typ == protocol.TypeUtterance {
		in, lang = b.utteranceInput(device, utt), utt.Lang
	} else {
		in = b.batchInput(device, batch)
	}
	res, attempts, err := b.runWithRetry(ctx, device, env, in, onWait)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	now := time.Now()
	rec = Record{Seq: env.Seq, StoreID: env.StoreID, At: now}
	var dl *DeadLetter
	if err != nil {
		rec.State, rec.Reason = StateParked, err.Error()
		dl = &DeadLetter{DeviceID: device, ID: env.ID, Seq: env.Seq, Topic: topic, Payload: payload,
			Reason: err.Error(), Attempts: attempts, At: now}
	} else {
		rec.State = StateDone
		if answered(res, typ) {
			rec.Reply = b.reply(env, res, lang)
		}
	}
	if env.Seq > ds.LastSeq {
		ds.LastSeq, ds.LastID = env.Seq, env.ID
	}
	if env.StoreID != "" && (env.StoreID != ds.StoreID || env.Seq > ds.StoreSeq) {
		ds.StoreID, ds.StoreSeq = env.StoreID, env.Seq
	}
	if env.Offline {
		ds.Offline++
	}
	ds.UpdatedAt = now
	t0 := time.Now()
	if err := b.o.Store.Commit(device, env.ID, rec, ds, dl); err != nil {
		return err
	}
	b.m.Stage.WithLabelValues("commit").Observe(time.Since(t0).Seconds())
	if dl != nil {
		b.m.Parked.Inc()
		b.counted(ctx, device, typ, env, "parked")
		b.log.Error("message parked as a dead letter; the device's later messages go on", "device", device,
			"id", env.ID, "seq", env.Seq, "attempts", attempts, "reason", excerptString(dl.Reason))
	} else {
		b.counted(ctx, device, typ, env, "run")
	}
	return b.finish(ctx, device, env, rec)
}

// counted counts what became of a device message and logs it at debug
// level: which device and message, never its content (the inspector's
// words stay out of the bridge's logs).
func (b *Bridge) counted(ctx context.Context, device, kind string, env protocol.Envelope, outcome string) {
	b.m.Messages.WithLabelValues(kind, outcome).Inc()
	var took time.Duration
	if t0, ok := ctx.Value(handleStartKey{}).(time.Time); ok {
		took = time.Since(t0)
	}
	b.log.Debug("device message", "device", device, "id", env.ID, "seq", env.Seq, "kind", kind, "outcome", outcome,
		"duration", took.Round(time.Microsecond))
}

// handleStartKey keys the time Handle took a message in (the debug line's
// duration: to its outcome; for a run, the graph's answer).
type handleStartKey struct{}

// finish publishes the reply (if any), then the ack that lets the device
// delete the message. A reply re-sent after a crash carries the same id.
func (b *Bridge) finish(ctx context.Context, device string, env protocol.Envelope, rec Record) error {
	cmdTopic := protocol.Topic(device, protocol.TopicCommands)
	t0 := time.Now()
	var payloads [][]byte
	if rec.Reply != nil {
		// An answer longer than about 25 s of speech goes as numbered reply
		// commands, in order, each acked by the device with its outcome
		// (sized for speech: protocol.SplitReplyForSpeech).
		for _, part := range protocol.SplitReplyForSpeech(*rec.Reply) {
			payload, err := json.Marshal(part)
			if err != nil {
				return fmt.Errorf("encode reply to %s: %w", env.ID, err)
			}
			payloads = append(payloads, payload)
		}
	}
	if rec.State == StateParked {
		payloads = append(payloads, parkedNotice(env.ID, rec.Reason))
	}
	ack, _ := json.Marshal(map[string]any{"id": "ack-" + env.ID, "type": protocol.CmdAck, "ids": []string{env.ID}})
	payloads = append(payloads, ack)
	// Reply then ack, pipelined on one connection (MQTT keeps their order).
	// If either is not confirmed the broker message stays unacknowledged and
	// comes back as a duplicate, which re-sends both.
	if err := b.o.Publisher.Publish(ctx, cmdTopic, payloads...); err != nil {
		return fmt.Errorf("publish reply/ack of %s/%s: %w", device, env.ID, err)
	}
	if rec.Reply != nil {
		b.m.Replies.Inc()
	}
	b.m.Stage.WithLabelValues("publish").Observe(time.Since(t0).Seconds())
	if created, err := time.Parse(time.RFC3339Nano, env.CreatedAt); err == nil {
		lag := time.Since(created).Seconds()
		b.m.Handover.Observe(lag)
		if b.o.PerDeviceLag {
			b.m.DeviceLag.WithLabelValues(device).Set(lag)
		}
	}
	return nil
}

// answered reports whether the run produced an answer for the device: the
// graph's "answered" flag in the last state snapshot when it has one (the
// reference graph: false for notes it only buffered), else every utterance
// is answered and a batch (listen-mode notes) is not.
func answered(res agui.Result, typ string) bool {
	if a, ok := res.State["answered"].(bool); ok {
		return a
	}
	return typ == protocol.TypeUtterance
}

// reply builds the reply command from the run's last state snapshot
// (final_written / final_spoken), falling back to the streamed text.
func (b *Bridge) reply(env protocol.Envelope, res agui.Result, lang string) *protocol.ReplyCommand {
	text := res.StateString("final_written")
	if text == "" {
		text = res.Text
	}
	if strings.TrimSpace(text) == "" {
		b.log.Warn("run finished without an answer; no reply", "id", env.ID, "device", env.DeviceID)
		return nil
	}
	r := &protocol.ReplyCommand{ID: "reply-" + env.ID, Type: protocol.CmdReply, InReplyTo: env.ID, Text: text, Lang: lang}
	if s := res.StateString("final_spoken"); s != "" && s != text {
		r.Spoken = s
	}
	if l := res.StateString("lang"); l == "nl" || l == "en" {
		r.Lang = l
	}
	return r
}

// runWithRetry runs in until it finishes, backing off between attempts, and
// gives up (the caller parks the message) after Retry's bounds.
func (b *Bridge) runWithRetry(ctx context.Context, device string, env protocol.Envelope, in types.RunAgentInput, onWait func()) (agui.Result, int, error) {
	start := time.Now()
	backoff := b.o.Retry.Initial
	rejects := 0
	for attempt := 1; ; attempt++ {
		select {
		case b.runs <- struct{}{}:
		case <-ctx.Done():
			return agui.Result{}, attempt, ctx.Err()
		}
		rctx, cancel := context.WithTimeout(ctx, b.o.Retry.RunTimeout)
		t0 := time.Now()
		res, err := b.o.Agent.Run(rctx, in)
		cancel()
		<-b.runs
		if err == nil {
			b.m.Runs.WithLabelValues("ok").Inc()
			b.m.RunSeconds.Observe(time.Since(t0).Seconds())
			return res, attempt, nil
		}
		if ctx.Err() != nil {
			return res, attempt, ctx.Err()
		}
		kind := "error"
		var ae *agui.Error
		if errors.As(err, &ae) {
			kind = ae.Kind
		} else if errors.Is(err, context.DeadlineExceeded) {
			kind = "timeout"
		}
		b.m.Runs.WithLabelValues(kind).Inc()
		if kind == "garbage" || kind == "stream" {
			b.m.BadInput.WithLabelValues("agui_" + kind).Inc()
		}
		if agui.IsPermanent(err) || answerTooLarge(err) {
			rejects++
			if rejects >= b.o.Retry.RejectAttempts {
				return res, attempt, fmt.Errorf("rejected by the agent %d times: %w", rejects, err)
			}
		} else if time.Since(start) >= b.o.Retry.MaxElapsed {
			return res, attempt, fmt.Errorf("agent failing for %v (%d attempts): %w", time.Since(start).Round(time.Second), attempt, err)
		}
		b.m.Retries.WithLabelValues(kind).Inc()
		b.log.Warn("run failed; retrying", "device", device, "id", env.ID, "attempt", attempt, "in", backoff, "err", err)
		if onWait != nil {
			onWait()
		}
		// Full jitter keeps a fleet that failed together from retrying together.
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		select {
		case <-ctx.Done():
			return res, attempt, ctx.Err()
		case <-time.After(wait):
		}
		backoff = min(backoff*2, b.o.Retry.Max)
	}
}

// answerTooLarge reports a run whose answer exceeded the AG-UI client's
// bounds (an SSE line or event larger than MaxEventBytes): the same input
// gets the same answer, so it is a rejection, not a transient failure to
// retry for retry.max_elapsed (a huge batch echoed back in the graph's
// state did that).
func answerTooLarge(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "SSE line too long") || strings.Contains(msg, "event larger than")
}

// utteranceInput is one feedback-mode turn (refgraph/README.md is the
// contract): the text as the one user message, with the device message id
// as its id (the graph's message list never holds it twice), runId derived
// from the message id, no context.
func (b *Bridge) utteranceInput(device string, u protocol.Utterance) types.RunAgentInput {
	fp := forwarded(device, u.Envelope)
	if u.Lang != "" {
		fp["lang"] = u.Lang
	}
	if u.Source != "" {
		fp["source"] = u.Source
	}
	return types.RunAgentInput{
		ThreadID: b.ThreadID(device), RunID: RunID(u.ID), State: map[string]any{},
		Messages: []types.Message{{ID: u.ID, Role: types.RoleUser, Content: u.Text}},
		Tools:    []types.Tool{}, Context: []types.Context{}, ForwardedProps: fp,
	}
}

// batchInput is a flushed listen buffer in the shape the AGORA web client
// replays an offline buffer: one user message with the notes in order, one
// per line, and the context isOfflineBatch / messageCount (AG-UI's list
// form; ag-ui-langgraph refuses the object form). The notes also go, with
// their ids, seqs, languages and offline flags, as JSON in "notes".
func (b *Bridge) batchInput(device string, bt protocol.Batch) types.RunAgentInput {
	lines := make([]string, len(bt.Items))
	type note struct {
		ID        string `json:"id"`
		Seq       uint64 `json:"seq"`
		Text      string `json:"text"`
		Lang      string `json:"lang,omitempty"`
		Offline   bool   `json:"offline"`
		StartedAt string `json:"started_at,omitempty"`
		CreatedAt string `json:"created_at,omitempty"`
	}
	notes := make([]note, len(bt.Items))
	for i, it := range bt.Items {
		lines[i] = it.Text
		notes[i] = note{ID: it.ID, Seq: it.Seq, Text: it.Text, Lang: it.Lang, Offline: it.Offline,
			StartedAt: it.StartedAt, CreatedAt: it.CreatedAt}
	}
	nj, _ := json.Marshal(notes)
	return types.RunAgentInput{
		ThreadID: b.ThreadID(device), RunID: RunID(bt.ID), State: map[string]any{},
		Messages: []types.Message{{ID: bt.ID, Role: types.RoleUser, Content: strings.Join(lines, "\n")}},
		Tools:    []types.Tool{},
		Context: []types.Context{
			{Description: "isOfflineBatch", Value: "true"},
			{Description: "messageCount", Value: strconv.Itoa(len(bt.Items))},
			{Description: "notes", Value: string(nj)},
		},
		ForwardedProps: forwarded(device, bt.Envelope),
	}
}

// RunID is the AG-UI runId of a device message, "run-" + the message id:
// a retried or redelivered run carries the same runId.
func RunID(messageID string) string { return "run-" + messageID }

// forwarded are the forwardedProps of a run. interactionMode is the mode the
// device was in when it produced the message: utterances and batches are
// only produced in feedback mode (listen-mode notes travel inside the batch
// flushed by "AGORA"), so it is always "feedback"; the device's status mode
// is not used, as a status can arrive after the message it preceded.
func forwarded(device string, env protocol.Envelope) map[string]any {
	return map[string]any{"interactionMode": string(buffer.ModeFeedback), "deviceId": device, "seq": env.Seq,
		"offline": env.Offline, "messageId": env.ID}
}
