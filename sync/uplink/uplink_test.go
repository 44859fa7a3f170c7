package uplink

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

func TestBackoff(t *testing.T) {
	min, max := 100*time.Millisecond, 2*time.Second
	tests := []struct {
		attempt int
		ceil    time.Duration
	}{{0, min}, {1, 200 * time.Millisecond}, {3, 800 * time.Millisecond}, {10, max}, {100, max}}
	for _, tt := range tests {
		var lo, hi time.Duration = time.Hour, 0
		for range 500 {
			d := backoff(min, max, tt.attempt)
			lo, hi = minD(lo, d), maxD(hi, d)
			if d < min || (d > tt.ceil) || (tt.ceil > min && d >= tt.ceil) {
				t.Fatalf("attempt %d: delay %v outside [%v, %v)", tt.attempt, d, min, tt.ceil)
			}
		}
		if tt.ceil > 2*min && hi-lo < (tt.ceil-min)/2 {
			t.Errorf("attempt %d: delays %v..%v not jittered over [%v, %v)", tt.attempt, lo, hi, min, tt.ceil)
		}
	}
}

func minD(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

func maxD(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

func TestNewRejectsBadOptions(t *testing.T) {
	st := newStore(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	tests := []struct {
		name, wantIn string
		mod          func(*Options)
	}{
		{"bad device", "device_id", func(o *Options) { o.DeviceID = "a/b" }},
		{"bad url", "broker_url", func(o *Options) { o.BrokerURL = "localhost" }},
		{"bad scheme", `scheme "http" is not one of`, func(o *Options) { o.BrokerURL = "http://x:1" }},
		{"websocket", `scheme "ws" is not one of`, func(o *Options) { o.BrokerURL = "ws://x:1" }},
		{"missing ca", "nope.pem", func(o *Options) { o.CAFile = filepath.Join(dir, "nope.pem") }},
		{"ca not pem", notPEM, func(o *Options) { o.CAFile = notPEM }},
		{"cert without key", "together", func(o *Options) { o.CertFile = notPEM }},
		{"bad cert", "load MQTT client certificate", func(o *Options) { o.CertFile, o.KeyFile = notPEM, notPEM }},
		{"backoff", "backoff_max", func(o *Options) { o.BackoffMin, o.BackoffMax = time.Second, time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions("dev", "tcp://127.0.0.1:1")
			tt.mod(&o)
			_, err := New(o, st, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantIn)
			}
		})
	}
}

// An empty broker URL (the configuration's "no uplink") starts, keeps
// everything in the outbox and stops on cancel.
func TestNoBroker(t *testing.T) {
	st := newStore(t)
	enqueueUtterances(t, st, 2, true, "kept")
	c := newClient(t, testOptions("dev-n", ""), st, nil)
	runUntil(t, c, "a while without a broker", func() bool { time.Sleep(200 * time.Millisecond); return true })
	if n, _ := st.OutboxCount(); n != 2 || c.Online() || c.Stats().Connects+c.Stats().ConnectFailures != 0 {
		t.Fatalf("outbox %d, online %v, stats %+v; want both entries kept and no connection tried", n, c.Online(), c.Stats())
	}
}

func TestParseBrokerURL(t *testing.T) {
	tests := []struct {
		raw     string
		tls     bool
		wantErr string
	}{
		{"tcp://127.0.0.1:1883", false, ""},
		{"mqtt://broker.example:1883", false, ""},
		{"ssl://broker.example:8883", true, ""},
		{"tls://broker.example:8883", true, ""},
		{"mqtts://broker.example:8883", true, ""},
		{"tcps://broker.example:8883", true, ""},
		{"wss://broker.example:443", false, `scheme "wss" is not one of`},
		{"http://x:1", false, `scheme "http" is not one of`},
		{"localhost:1883", false, "is not a URL scheme://host:port"},
		{"tcp://", false, "is not a URL scheme://host:port"},
		{"tcp://%zz:1", false, "is not a URL"},      // unparsable: not echoed, it may hold a password
		{"tcp://user:secret@:1883", false, "xxxxx"}, // no host; the password is redacted
	}
	for _, tt := range tests {
		u, tls, err := ParseBrokerURL(tt.raw)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseBrokerURL(%q) = %v, want an error with %q and no password", tt.raw, err, tt.wantErr)
			}
			continue
		}
		if err != nil || tls != tt.tls || u.String() != tt.raw {
			t.Errorf("ParseBrokerURL(%q) = %v, tls %v, %v; want tls %v", tt.raw, u, tls, err, tt.tls)
		}
	}
}

// (a) 1,000 utterances stored while the broker is down, delivered in order
// once it is back.
func TestOfflineBacklogDelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-a/utterances")
	b.Stop()
	st := newStore(t)
	c := newClient(t, testOptions("dev-a", b.URL()), st, nil)
	runClient(t, c)
	time.Sleep(100 * time.Millisecond) // let it fail to connect at least once
	if c.Online() {
		t.Fatal("online with the broker stopped")
	}
	entries := enqueueUtterances(t, st, 1000, !c.Online(), "offline")
	want := map[string]uint64{}
	for _, e := range entries {
		want[e.ID] = e.Seq
	}
	b.Start()
	msgs, ok := sub.WaitFor(60*time.Second, func(m []brokertest.Message) bool { return distinct(t, m) >= 1000 })
	if !ok {
		t.Fatalf("received %d distinct of 1000", distinct(t, msgs))
	}
	got := decode(t, msgs)
	checkDelivery(t, got, want)
	for _, m := range got {
		if !m.Offline || m.Type != "utterance" || m.DeviceID != "dev-a" || m.V != 1 {
			t.Fatalf("message %+v: want offline utterance of dev-a, v1", m)
		}
	}
	waitUntil(t, 10*time.Second, "empty outbox", func() bool { n, _ := st.OutboxCount(); return n == 0 })
	if s := c.Stats(); s.Published < 1000 || s.ConnectFailures == 0 {
		t.Errorf("stats %+v: want >= 1000 published and some connect failures", s)
	}
}

// (b) broker stopped in the middle of a drain and restarted.
func TestBrokerRestartMidDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-b/utterances")
	st := newStore(t)
	const n = 3000
	entries := enqueueUtterances(t, st, n, false, "drain")
	want := map[string]uint64{}
	for _, e := range entries {
		want[e.ID] = e.Seq
	}
	c := newClient(t, testOptions("dev-b", b.URL()), st, nil)
	runClient(t, c)
	if _, ok := sub.WaitCount(300, 30*time.Second); !ok {
		t.Fatal("drain did not start")
	}
	b.Stop()
	left, _ := st.OutboxCount()
	t.Logf("broker stopped with %d entries left in the outbox", left)
	if left == 0 {
		t.Log("drain finished before the broker stopped: the restart is not exercised mid-drain")
	}
	time.Sleep(300 * time.Millisecond)
	b.Start()
	msgs, ok := sub.WaitFor(60*time.Second, func(m []brokertest.Message) bool { return distinct(t, m) >= n })
	if !ok {
		t.Fatalf("received %d distinct of %d", distinct(t, msgs), n)
	}
	checkDelivery(t, decode(t, msgs), want)
	waitUntil(t, 10*time.Second, "empty outbox", func() bool { n, _ := st.OutboxCount(); return n == 0 })
	if c.Stats().Reconnects == 0 {
		t.Error("no reconnect counted")
	}
}

// (c) a flushed listen buffer reaches the backend as one batch before the
// command spoken after the wake phrase.
func TestBatchBeforeCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-c/+")
	st := newStore(t)
	texts := []string{"first note", "second note", "third note"}
	for _, tx := range texts {
		if _, err := st.AppendListen(buffer.Record{Text: tx, Source: "mic", StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	batch, n, err := st.FlushListen(true)
	if err != nil || n != len(texts) {
		t.Fatalf("flush: %d records, %v", n, err)
	}
	cmd, err := st.EnqueueUtterance(buffer.Record{Text: "what is the torque spec", Source: "mic"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, testOptions("dev-c", b.URL()), st, nil)
	runClient(t, c)
	isData := func(m brokertest.Message) bool { return !strings.HasSuffix(m.Topic, "/status") }
	msgs, _ := sub.WaitFor(20*time.Second, func(ms []brokertest.Message) bool {
		n := 0
		for _, m := range ms {
			if isData(m) {
				n++
			}
		}
		return n >= 2
	})
	var data []brokertest.Message
	for _, m := range msgs {
		if isData(m) {
			data = append(data, m)
		}
	}
	if len(data) < 2 {
		t.Fatalf("got %d data messages, want 2", len(data))
	}
	got := decode(t, data)
	if data[0].Topic != "agora/v1/dev-c/batches" || got[0].ID != batch.ID || got[0].Type != "batch" {
		t.Fatalf("first data message %s %+v, want batch %s", data[0].Topic, got[0], batch.ID)
	}
	if got[0].Context == nil || !got[0].Context.IsOfflineBatch || got[0].Context.MessageCount != 3 || got[0].Count != 3 || !got[0].Offline {
		t.Errorf("batch context/count/offline wrong: %s", data[0].Payload)
	}
	for i, it := range got[0].Items {
		if it.Text != texts[i] {
			t.Errorf("batch item %d = %q, want %q", i, it.Text, texts[i])
		}
	}
	if data[1].Topic != "agora/v1/dev-c/utterances" || got[1].ID != cmd.ID || got[1].Seq <= got[0].Seq {
		t.Errorf("second data message %s %+v, want the command utterance after the batch", data[1].Topic, got[1])
	}
}

// BatchAckRequired: a batch stays in the outbox until the backend acks it,
// and is re-published with the same id meanwhile.
func TestBatchAckRequired(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-k/batches")
	st := newStore(t)
	st.AppendListen(buffer.Record{Text: "note"})
	batch, _, err := st.FlushListen(false)
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions("dev-k", b.URL())
	opts.BatchAckRequired, opts.AckTimeout = true, 300*time.Millisecond
	c := newClient(t, opts, st, nil)
	runClient(t, c)
	msgs, ok := sub.WaitCount(2, 10*time.Second)
	if !ok {
		t.Fatalf("batch not re-published without ack: %d messages", len(msgs))
	}
	for _, m := range decode(t, msgs) {
		if m.ID != batch.ID {
			t.Fatalf("re-published batch has id %s, want %s", m.ID, batch.ID)
		}
	}
	if n, _ := st.OutboxCount(); n != 1 {
		t.Fatalf("outbox %d before ack, want 1", n)
	}
	publish(t, b, "agora/v1/dev-k/commands", `{"id":"ack-1","type":"ack","ids":["`+batch.ID+`"]}`)
	waitUntil(t, 10*time.Second, "batch deleted after ack", func() bool { n, _ := st.OutboxCount(); return n == 0 })
	if c.Stats().Republished == 0 {
		t.Error("republish not counted")
	}
}

func publish(t testing.TB, b *brokertest.Broker, topic, payload string, auth ...string) {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID("test-pub-" + time.Now().Format("150405.000000000"))
	if len(auth) == 2 {
		o.SetUsername(auth[0]).SetPassword(auth[1])
	}
	cli := paho.NewClient(o)
	if tok := cli.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publisher connect: %v", tok.Error())
	}
	defer cli.Disconnect(100)
	if tok := cli.Publish(topic, 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
}

// (d) retained status while connected; the last will replaces it when the
// connection dies without a goodbye, as a late subscriber sees.
func TestStatusAndLastWill(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	p := brokertest.NewProxy(t, b.Addr())
	st := newStore(t)
	enqueueUtterances(t, st, 2, true, "x")
	// early sees each status as it is published, so the late subscriber
	// below subscribes only after it is retained (else it gets it live,
	// without the retained flag, and the test would race the client).
	early := b.Subscribe(t, "agora/v1/dev-d/status")
	c := newClient(t, testOptions("dev-d", p.URL()), st, nil)
	runClient(t, c)
	select {
	case on := <-c.OnlineChanged():
		if !on {
			t.Fatal("first OnlineChanged is false")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("never online")
	}
	seen := 0 // early's messages already matched by a previous lateStatus
	lateStatus := func(want bool) wireMsg {
		t.Helper()
		if _, ok := early.WaitFor(10*time.Second, func(ms []brokertest.Message) bool {
			for i := seen; i < len(ms); i++ {
				var w wireMsg
				if json.Unmarshal(ms[i].Payload, &w) == nil && w.Online == want {
					seen = i + 1
					return true
				}
			}
			return false
		}); !ok {
			t.Fatalf("no status online=%v published", want)
		}
		sub := b.Subscribe(t, "agora/v1/dev-d/status")
		msgs, ok := sub.WaitFor(10*time.Second, func(ms []brokertest.Message) bool {
			for _, m := range ms {
				var w wireMsg
				if json.Unmarshal(m.Payload, &w) == nil && w.Online == want && m.Retained {
					return true
				}
			}
			return false
		})
		if !ok {
			var got []string
			for _, m := range msgs {
				got = append(got, string(m.Payload))
			}
			t.Fatalf("late subscriber did not get a retained status online=%v; got %v", want, got)
		}
		return decode(t, msgs[len(msgs)-1:])[0]
	}
	s := lateStatus(true)
	if s.Type != "status" || s.DeviceID != "dev-d" {
		t.Errorf("status %+v", s)
	}
	p.Cut() // abrupt: no DISCONNECT, so the broker sends the will
	lateStatus(false)
	waitUntil(t, 10*time.Second, "client notices it is offline", func() bool { return !c.Online() })
	p.Restore()
	waitUntil(t, 10*time.Second, "reconnect", c.Online)
	lateStatus(true)
}

type recordingHandler struct {
	mu   sync.Mutex
	cmds []protocol.Command
	err  error
}

func (h *recordingHandler) HandleCommand(_ context.Context, cmd protocol.Command) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cmds = append(h.cmds, cmd)
	return h.err
}

func (h *recordingHandler) got() []protocol.Command {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]protocol.Command(nil), h.cmds...)
}

// (e) malformed commands are rejected and counted; the client keeps working.
func TestMalformedCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	acks := b.Subscribe(t, "agora/v1/dev-e/acks")
	st := newStore(t)
	h := &recordingHandler{}
	logs := &brokertest.Log{}
	opts := testOptions("dev-e", b.URL())
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c := newClient(t, opts, st, h)
	runClient(t, c)
	waitUntil(t, 10*time.Second, "online", c.Online)
	bad := []struct{ name, payload string }{
		{"bad json", `{"id":"x","type":`},
		{"unknown field", `{"id":"x","type":"ping","reboot":true}`},
		{"wrong type", `{"id":"x","type":"set_mode","mode":1}`},
		{"huge", `{"id":"x","type":"ping","pad":"` + strings.Repeat("A", 20000) + `"}`},
		{"bad mode", `{"id":"x","type":"set_mode","mode":"sleep"}`},
		{"binary", "\x00\xff\xfe"},
	}
	topic := "agora/v1/dev-e/commands"
	for _, tt := range bad {
		publish(t, b, topic, tt.payload)
	}
	waitUntil(t, 10*time.Second, "all bad commands rejected", func() bool { return c.Stats().RejectedCommands == uint64(len(bad)) })
	if n := len(h.got()); n != 0 {
		t.Fatalf("handler got %d commands from malformed input", n)
	}
	if l := logs.String(); !strings.Contains(l, "rejected MQTT command") || !strings.Contains(l, topic) || strings.Contains(l, strings.Repeat("A", 200)) {
		t.Errorf("rejection log missing topic or excerpt not bounded")
	}
	publish(t, b, topic, `{"id":"cmd-1","type":"set_mode","mode":"listen"}`)
	// A ping is answered as received, ahead of stored commands: sent after
	// the set_mode was handled, so both orders below are fixed.
	waitUntil(t, 10*time.Second, "set_mode handled", func() bool { return len(h.got()) == 1 })
	publish(t, b, topic, `{"id":"cmd-2","type":"ping"}`)
	waitUntil(t, 10*time.Second, "valid commands handled", func() bool { return len(h.got()) == 2 })
	if g := h.got(); g[0].Mode != "listen" || g[0].ID != "cmd-1" || g[1].Type != protocol.CmdPing {
		t.Fatalf("handler got %+v", g)
	}
	msgs, ok := acks.WaitCount(2, 10*time.Second)
	if !ok {
		t.Fatalf("got %d acks, want 2", len(msgs))
	}
	got := decode(t, msgs)
	if got[0].CmdID != "cmd-1" || !got[0].OK || got[1].CmdID != "cmd-2" || !got[1].OK {
		t.Errorf("acks %+v", got)
	}
	// A failing handler is answered with ok:false.
	h.mu.Lock()
	h.err = errors.New("mode locked by operator")
	h.mu.Unlock()
	publish(t, b, topic, `{"id":"cmd-3","type":"set_mode","mode":"feedback"}`)
	msgs, _ = acks.WaitCount(3, 10*time.Second)
	if got := decode(t, msgs); len(got) < 3 || got[2].CmdID != "cmd-3" || got[2].OK || !strings.Contains(string(msgs[2].Payload), "mode locked") {
		t.Errorf("failed command not acked with ok:false: %d acks", len(msgs))
	}
}

// (f) password auth: wrong password retried (and never logged), right one works.
func TestPasswordAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	const user, pass = "device", "s3cret-Pa55word"
	b := brokertest.Start(t, brokertest.WithPassword(user, pass), brokertest.WithPassword("backend", "bpw"))
	sub := b.Subscribe(t, "agora/v1/dev-f/utterances", brokertest.WithAuth("backend", "bpw"))
	logs := &brokertest.Log{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	st := newStore(t)
	wrong := testOptions("dev-f", b.URL())
	wrong.Username, wrong.Password, wrong.Logger = user, "wrong-"+pass, log
	cw := newClient(t, wrong, st, nil)
	runUntil(t, cw, "failed attempts", func() bool { return cw.Stats().ConnectFailures >= 2 })
	if cw.Stats().Connects != 0 {
		t.Fatal("connected with a wrong password")
	}

	good := wrong
	good.Password = pass
	good.BrokerURL = strings.Replace(b.URL(), "tcp://", "tcp://"+user+":"+pass+"@", 1) // credentials in the URL must be redacted too
	e := enqueueUtterances(t, st, 1, false, "auth")[0]
	cg := newClient(t, good, st, nil)
	runClient(t, cg)
	msgs, ok := sub.WaitCount(1, 10*time.Second)
	if !ok || decode(t, msgs)[0].ID != e.ID {
		t.Fatalf("utterance not delivered with the right password")
	}
	l := logs.String()
	if !strings.Contains(l, "connect to MQTT broker failed") {
		t.Errorf("failure not logged: %s", l)
	}
	if strings.Contains(l, pass) {
		t.Errorf("password appears in the log:\n%s", l)
	}
}

// (f) TLS with a CA, server and client certificates made in the test.
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	dir := t.TempDir()
	ca, caKey := makeCert(t, dir, "ca", nil, nil)
	makeCert(t, dir, "server", ca, caKey)
	makeCert(t, dir, "client", ca, caKey)
	f := func(n string) string { return filepath.Join(dir, n) }
	b := brokertest.Start(t, brokertest.WithTLS(f("ca.pem"), f("server.pem"), f("server.key"), true))
	st := newStore(t)
	e := enqueueUtterances(t, st, 1, false, "tls")[0]

	// Without a client certificate the broker refuses.
	noCert := testOptions("dev-t", b.URL())
	noCert.CAFile = f("ca.pem")
	c0 := newClient(t, noCert, st, nil)
	runUntil(t, c0, "refused without client cert", func() bool { return c0.Stats().ConnectFailures >= 1 })
	if c0.Stats().Connects != 0 {
		t.Fatal("connected without a client certificate")
	}

	// tcps:// is the same TLS connection as the ssl:// above.
	opts := noCert
	opts.BrokerURL = strings.Replace(b.URL(), "ssl://", "tcps://", 1)
	opts.CertFile, opts.KeyFile = f("client.pem"), f("client.key")
	c := newClient(t, opts, st, nil)
	runClient(t, c)
	waitUntil(t, 10*time.Second, "outbox drained over TLS", func() bool { n, _ := st.OutboxCount(); return n == 0 })
	if c.Stats().Published < 1 {
		t.Fatalf("entry %s not published over TLS", e.ID)
	}
}

// Issue 9, item 7: an expired client certificate gave only "connection
// reset by peer". The connect error now says the certificate expired, when,
// and that the broker refuses it.
func TestExpiredClientCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	dir := t.TempDir()
	ca, caKey := makeCert(t, dir, "ca", nil, nil)
	makeCert(t, dir, "server", ca, caKey)
	expired := time.Now().Add(-time.Hour).Truncate(time.Second)
	makeCertValid(t, dir, "client", ca, caKey, expired.Add(-24*time.Hour), expired)
	f := func(n string) string { return filepath.Join(dir, n) }
	b := brokertest.Start(t, brokertest.WithTLS(f("ca.pem"), f("server.pem"), f("server.key"), true))
	logs := &brokertest.Log{}
	opts := testOptions("dev-x509", b.URL())
	opts.CAFile, opts.CertFile, opts.KeyFile = f("ca.pem"), f("client.pem"), f("client.key")
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	c := newClient(t, opts, newStore(t), nil)
	runUntil(t, c, "connect refused", func() bool { return c.Stats().ConnectFailures >= 1 })
	want := "client certificate " + f("client.pem") + " expired at " + expired.UTC().Format(time.RFC3339)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log does not say %q:\n%s", want, logs.String())
	}
}

// makeCert writes name.pem and name.key; a nil parent makes a self-signed CA.
func makeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	return makeCertValid(t, dir, name, parent, parentKey, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
}

// makeCertValid is makeCert with a validity period.
func makeCertValid(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, notBefore, notAfter time.Time) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "agorad test " + name},
		NotBefore:    notBefore, NotAfter: notAfter,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// An entry that cannot be rendered is delivered as a dead letter, in its
// place in the sequence, and does not block what follows.
func TestDeadLetter(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-x/+")
	st := newStore(t)
	bad, err := st.Enqueue(buffer.LaneData, buffer.KindUtterance, false, []byte(`{"text":5}`))
	if err != nil {
		t.Fatal(err)
	}
	good := enqueueUtterances(t, st, 1, false, "after")[0]
	c := newClient(t, testOptions("dev-x", b.URL()), st, nil)
	runClient(t, c)
	waitUntil(t, 10*time.Second, "outbox drained", func() bool { n, _ := st.OutboxCount(); return n == 0 })
	var data []brokertest.Message
	msgs, _ := sub.WaitFor(10*time.Second, func(ms []brokertest.Message) bool {
		data = data[:0]
		for _, m := range ms {
			if !strings.HasSuffix(m.Topic, "/status") {
				data = append(data, m)
			}
		}
		return len(data) >= 2
	})
	if len(data) < 2 {
		t.Fatalf("got %d messages", len(msgs))
	}
	got := decode(t, data)
	if data[0].Topic != "agora/v1/dev-x/events" || got[0].Type != "dead_letter" || got[0].ID != bad.ID ||
		!strings.Contains(string(data[0].Payload), `"body_base64":"eyJ0ZXh0Ijo1fQ=="`) {
		t.Errorf("first message %s %s, want the dead letter of %s", data[0].Topic, data[0].Payload, bad.ID)
	}
	if got[1].ID != good.ID {
		t.Errorf("second message %+v, want utterance %s", got[1], good.ID)
	}
}

// PublishStatus republishes the retained status with the current values.
func TestPublishStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-s/status")
	st := newStore(t)
	var mu sync.Mutex
	mode := "feedback"
	opts := testOptions("dev-s", b.URL())
	opts.Status = func() protocol.Status {
		mu.Lock()
		defer mu.Unlock()
		return protocol.Status{Mode: mode, Buffered: 4, Version: "t", Model: "m"}
	}
	c := newClient(t, opts, st, nil)
	runClient(t, c)
	waitUntil(t, 10*time.Second, "online", c.Online)
	mu.Lock()
	mode = "listen"
	mu.Unlock()
	c.PublishStatus()
	msgs, ok := sub.WaitFor(10*time.Second, func(ms []brokertest.Message) bool {
		for _, m := range ms {
			if strings.Contains(string(m.Payload), `"mode":"listen"`) {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no status with mode listen among %d messages", len(msgs))
	}
	var s protocol.StatusMessage
	if err := json.Unmarshal(msgs[len(msgs)-1].Payload, &s); err != nil || !s.Online || s.Buffered != 4 || s.DeviceID != "dev-s" {
		t.Errorf("status %s (%v)", msgs[len(msgs)-1].Payload, err)
	}
}

// blockingHandler holds the first command until its context ends, like a
// daemon that is stopped (or dies) while carrying it out.
type blockingHandler struct {
	started chan protocol.Command
}

func (h *blockingHandler) HandleCommand(ctx context.Context, cmd protocol.Command) error {
	h.started <- cmd
	<-ctx.Done()
	return ctx.Err()
}

// A command is acknowledged to the broker only after it was carried out:
// one interrupted by a stop is redelivered to the next session of the same
// device and handled then.
func TestCommandRedeliveredAfterInterruptedHandling(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	st := newStore(t)
	first := &blockingHandler{started: make(chan protocol.Command, 1)}
	c1 := newClient(t, testOptions("dev-r", b.URL()), st, first)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c1.Run(ctx) }()
	waitUntil(t, 10*time.Second, "first session online", c1.Online)
	publish(t, b, "agora/v1/dev-r/commands", `{"id":"cmd-r","type":"set_mode","mode":"feedback"}`)
	select {
	case <-first.started:
	case <-time.After(10 * time.Second):
		t.Fatal("first session never got the command")
	}
	cancel()
	<-done

	second := &recordingHandler{}
	c2 := newClient(t, testOptions("dev-r", b.URL()), st, second)
	runClient(t, c2)
	waitUntil(t, 10*time.Second, "redelivered command handled", func() bool { return len(second.got()) == 1 })
	if g := second.got(); g[0].ID != "cmd-r" || g[0].Mode != "feedback" {
		t.Fatalf("second session got %+v", g)
	}
}

// A reply the handler stored is not acked by the uplink (the handler acks
// it with its outcome later); one it could not take is acked failed.
func TestReplyCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := brokertest.Start(t)
	acks := b.Subscribe(t, "agora/v1/dev-r/acks")
	st := newStore(t)
	h := &recordingHandler{}
	c := newClient(t, testOptions("dev-r", b.URL()), st, h)
	runClient(t, c)
	waitUntil(t, 10*time.Second, "online", c.Online)
	topic := "agora/v1/dev-r/commands"
	publish(t, b, topic, `{"id":"r-1","type":"reply","text":"Ja.","lang":"nl","in_reply_to":"u-1"}`)
	publish(t, b, topic, `{"id":"r-bad","type":"reply","text":"x","lang":"fr"}`)
	publish(t, b, topic, `{"id":"p-1","type":"ping"}`)
	msgs, ok := acks.WaitCount(1, 10*time.Second)
	if !ok {
		t.Fatal("no ack for the ping")
	}
	// The ping is answered as received, maybe before the reply was handled.
	waitUntil(t, 10*time.Second, "reply and ping handled", func() bool { return len(h.got()) == 2 })
	g := h.got()
	i := slices.IndexFunc(g, func(c protocol.Command) bool { return c.Type == protocol.CmdReply })
	if len(g) != 2 || i < 0 || g[i].Reply.Text != "Ja." || g[i].Reply.InReplyTo != "u-1" || g[1-i].Type != protocol.CmdPing {
		t.Fatalf("handler got %+v", g)
	}
	msgs = acks.Messages() // no ack for the stored reply came after the ping's
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Payload), `"command_id":"p-1"`) {
		t.Fatalf("%d acks: the stored reply must not be acked by the uplink", len(msgs))
	}
	h.mu.Lock()
	h.err = errors.New("store full")
	h.mu.Unlock()
	publish(t, b, topic, `{"id":"r-2","type":"reply","text":"Nee."}`)
	msgs, ok = acks.WaitCount(2, 10*time.Second)
	if !ok {
		t.Fatal("no ack for the failed reply")
	}
	p := string(msgs[1].Payload)
	for _, want := range []string{`"command_id":"r-2"`, `"ok":false`, `"outcome":"failed"`, `store full`} {
		if !strings.Contains(p, want) {
			t.Errorf("failed reply ack %s lacks %s", p, want)
		}
	}
}
