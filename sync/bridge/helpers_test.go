package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// logSink collects log output for assertions.
type logSink struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	b        *bridge.Bridge
	m        *bridge.Metrics
	store    *bridge.BadgerStore
	log      *logSink
	cancel   context.CancelFunc
	done     chan struct{}
	mqtt     *bridge.MQTT
	stateDir string
}

// fastRetry backs off and parks quickly. Its run timeout is generous: no
// test here is about a hanging run, and on a loaded CI machine one run of a
// 200 KB answer took over 5 s, timed out, was parked after MaxElapsed and
// reached the device as a parked notice instead of the answer.
var fastRetry = bridge.Retry{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, MaxElapsed: 2 * time.Second,
	RejectAttempts: 2, RunTimeout: time.Minute}

// startBridge runs a mosquitto-mode bridge until the test ends.
func startBridge(t *testing.T, brokerURL, agentURL string, retry bridge.Retry, stateDir string) *harness {
	t.Helper()
	return startBridgeWith(t, brokerURL, agentURL, retry, stateDir, nil, bridge.MQTTOptions{})
}

// startBridgeWith is startBridge with options changed by opt and mq's
// non-zero limits; it also sweeps expired parts every 100ms.
func startBridgeWith(t *testing.T, brokerURL, agentURL string, retry bridge.Retry, stateDir string, opt func(*bridge.Options), mq0 bridge.MQTTOptions) *harness {
	t.Helper()
	if stateDir == "" {
		stateDir = t.TempDir()
	}
	h := &harness{log: &logSink{}, m: bridge.NewMetrics(), done: make(chan struct{}), stateDir: stateDir}
	logger := slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := bridge.OpenBadger(stateDir, false, logger)
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	if mq0.Spill == nil {
		mq0.Spill = st
	}
	if mq0.ClientID == "" {
		mq0.ClientID = fmt.Sprintf("bridge-%d", time.Now().UnixNano())
	}
	mq0.BrokerURL, mq0.Logger = brokerURL, logger
	mq, err := bridge.NewMQTT(mq0)
	if err != nil {
		t.Fatal(err)
	}
	h.mqtt = mq
	o := bridge.Options{Agent: agui.New(agentURL, 16, 10*time.Second), Store: st, Publisher: mq,
		Metrics: h.m, Logger: logger, Retry: retry, PerDeviceLag: true}
	if opt != nil {
		opt(&o)
	}
	h.b, err = bridge.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	sweeping := make(chan struct{})
	go func() { defer close(sweeping); h.b.SweepParts(ctx, 100*time.Millisecond) }()
	go func() {
		defer close(h.done)
		_ = mq.Run(ctx, func(ctx context.Context, topic string, payload []byte) error {
			return h.b.Handle(ctx, topic, payload, nil)
		}, nil)
		<-sweeping
	}()
	t.Cleanup(h.stop)
	waitFor(t, 10*time.Second, "bridge MQTT connection", mq.Connected)
	time.Sleep(200 * time.Millisecond) // subscription in flight
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
	h.store.Close()
}

func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publisher is a raw MQTT client that publishes hand-made device messages.
func publisher(t *testing.T, url string) paho.Client {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(fmt.Sprintf("raw-%d", time.Now().UnixNano())))
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func publish(t *testing.T, c paho.Client, topic string, payload []byte) {
	t.Helper()
	if tok := c.Publish(topic, 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
}

var idN int

func utterance(device string, seq uint64, text string) (string, []byte) {
	idN++
	u := protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance,
		ID: fmt.Sprintf("019c0000-0000-7000-8000-%012d", idN), Seq: seq, DeviceID: device,
		CreatedAt: protocol.FormatTime(time.Now())}, Text: text, Lang: "en", Source: "typed"}
	b, _ := json.Marshal(u)
	return u.ID, b
}

// command is a decoded message on a commands topic.
type command struct {
	Topic     string
	ID        string   `json:"id"`
	Type      string   `json:"type"`
	InReplyTo string   `json:"in_reply_to"`
	Text      string   `json:"text"`
	Spoken    string   `json:"spoken"`
	Lang      string   `json:"lang"`
	IDs       []string `json:"ids"`
	Reason    string   `json:"reason"`
}

func commands(t testing.TB, msgs []brokertest.Message) []command {
	out := make([]command, 0, len(msgs))
	for _, m := range msgs {
		var c command
		if err := json.Unmarshal(m.Payload, &c); err != nil {
			t.Fatalf("command on %s is not JSON: %s", m.Topic, m.Payload)
		}
		c.Topic = m.Topic
		out = append(out, c)
	}
	return out
}

func count(cmds []command, typ string) int {
	n := 0
	for _, c := range cmds {
		if c.Type == typ {
			n++
		}
	}
	return n
}

// device is a simulated agorad: a real buffer store and the real uplink.
type device struct {
	id    string
	store *buffer.Store
	up    *uplink.Client
	stop  func()
}

func newDevice(t *testing.T, id, brokerURL string, batchAck bool) *device {
	t.Helper()
	return startDevice(t, uplink.Options{DeviceID: id, BrokerURL: brokerURL, BatchAckRequired: batchAck, AckTimeout: 30 * time.Second,
		Status: func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "test"} }})
}

// startDevice runs a device (a real store and uplink) with opts plus the
// tests' fast backoff and a silent logger, stopped at cleanup.
func startDevice(t *testing.T, opts uplink.Options) *device {
	t.Helper()
	st, err := buffer.Open(t.TempDir(), buffer.Options{Sync: buffer.SyncNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	opts.BackoffMin, opts.BackoffMax, opts.KeepAlive = 20*time.Millisecond, 500*time.Millisecond, 5*time.Second
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	up, err := uplink.New(opts, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = up.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return &device{id: opts.DeviceID, store: st, up: up, stop: stop}
}

func (d *device) say(t *testing.T, text string) buffer.Entry {
	t.Helper()
	e, err := d.store.EnqueueUtterance(buffer.Record{Text: text, Lang: "en", StartedAt: time.Now(), DurationMS: 900, Source: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (d *device) note(t *testing.T, text string) {
	t.Helper()
	if _, err := d.store.AppendListen(buffer.Record{Text: text, Lang: "en", StartedAt: time.Now(), DurationMS: 900, Source: "mic"}); err != nil {
		t.Fatal(err)
	}
}

func (d *device) flush(t *testing.T) buffer.Entry {
	t.Helper()
	e, n, err := d.store.FlushListen(false)
	if err != nil || n == 0 {
		t.Fatalf("flush listen buffer: %d notes, err %v", n, err)
	}
	return e
}

// hangThenAsk publishes hung questions of device "hang" (whose runs the
// test's agent holds), then one question each of 20 other devices, and
// waits up to 15 s for all 20 to be acknowledged: whether, and how fast,
// the others were answered while one device hangs.
func hangThenAsk(t *testing.T, pub paho.Client, cmds *brokertest.Subscriber, hung int) (bool, time.Duration) {
	t.Helper()
	for i := range hung {
		publish(t, pub, protocol.Topic("hang", protocol.TopicUtterances),
			rawUtterance("hang", fmt.Sprintf("hang-%05d", i), "s", uint64(i+1), "question"))
	}
	start := time.Now()
	var want []string
	for i := range 20 {
		dev := fmt.Sprintf("other-%02d", i)
		want = append(want, dev+"-q")
		publish(t, pub, protocol.Topic(dev, protocol.TopicUtterances), rawUtterance(dev, dev+"-q", "s", 1, "a question"))
	}
	_, ok := cmds.WaitFor(15*time.Second, func(m []brokertest.Message) bool {
		got := ackedIDs(t, m)
		for _, id := range want {
			if !got[id] {
				return false
			}
		}
		return true
	})
	return ok, time.Since(start)
}
