package replies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/tts"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// pacedSpeaker plays a stream at speed times real time (the audio's own
// length, from the real engine's samples, divided by speed) and records
// each playback's length in seconds of audio.
type pacedSpeaker struct {
	speed   float64
	mu      sync.Mutex
	lengths []float64
}

func (s *pacedSpeaker) PlayStream(ctx context.Context, src audio.SampleReader, started func(time.Time)) (<-chan error, error) {
	done := make(chan error, 1)
	go func() {
		n := 0
		defer func() {
			s.mu.Lock()
			s.lengths = append(s.lengths, float64(n)/audio.SampleRate)
			s.mu.Unlock()
		}()
		for first := true; ; first = false {
			x, err := src.Read()
			if first {
				started(time.Now())
			}
			n += len(x)
			if len(x) > 0 {
				select {
				case <-ctx.Done():
					done <- ctx.Err()
					return
				case <-time.After(time.Duration(float64(len(x)) / audio.SampleRate / s.speed * float64(time.Second))):
				}
			}
			if errors.Is(err, io.EOF) {
				done <- nil
				return
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	return done, nil
}

func (s *pacedSpeaker) played() []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]float64(nil), s.lengths...)
}

// saidEngine is the real engine, recording what it is asked to say.
type saidEngine struct {
	tts.Engine
	mu   sync.Mutex
	said []string
}

func (e *saidEngine) Synthesize(ctx context.Context, text, lang string) (tts.Stream, error) {
	e.mu.Lock()
	e.said = append(e.said, text)
	e.mu.Unlock()
	return e.Engine.Synthesize(ctx, text, lang)
}

func (e *saidEngine) texts() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.said...)
}

func espeak(t *testing.T) *saidEngine {
	e, err := tts.New(tts.Config{Engine: "espeak-ng", Voices: map[string]string{"nl": "nl", "en": "en"}, Rate: 150, Volume: 1})
	if err != nil {
		t.Skipf("no espeak-ng: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return &saidEngine{Engine: e}
}

type device struct {
	st     *buffer.Store
	p      *Player
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startDevice runs a device's store, uplink (over the real broker) and
// reply player.
func startDevice(t *testing.T, id, brokerURL, password string, e tts.Engine, spk Speaker, maxAge, partWait time.Duration) *device {
	quiet := slog.New(slog.DiscardHandler)
	st, err := buffer.Open(t.TempDir(), buffer.Options{Sync: buffer.SyncNone, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	d := &device{st: st}
	d.p, err = New(Options{Store: st, Engine: e, Speaker: func() (Speaker, error) { return spk, nil },
		Mode: func() string { return "feedback" }, DefaultLang: "nl", MaxAge: maxAge, PartWait: partWait, MaxChars: 600,
		Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	user := ""
	if password != "" {
		user = id // the shipped ACL's %u
	}
	up, err := uplink.New(uplink.Options{DeviceID: id, BrokerURL: brokerURL, Username: user, Password: password, BackoffMin: 20 * time.Millisecond,
		BackoffMax: 500 * time.Millisecond, KeepAlive: 5 * time.Second, Delivery: uplink.DeliveryBackend, AckTimeout: 30 * time.Second,
		Logger: quiet, Status: func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "test"} }},
		st, replyHandler{d.p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.wg.Add(2)
	go func() { defer d.wg.Done(); _ = up.Run(ctx) }()
	go func() { defer d.wg.Done(); _ = d.p.Run(ctx) }()
	t.Cleanup(func() { cancel(); d.wg.Wait(); st.Close() })
	return d
}

type replyAck struct {
	CommandID string `json:"command_id"`
	OK        bool   `json:"ok"`
	Outcome   string `json:"outcome"`
	Error     string `json:"error"`
}

func replyAcks(m []brokertest.Message, prefix string) []replyAck {
	var out []replyAck
	for _, x := range m {
		var a replyAck
		if json.Unmarshal(x.Payload, &a) == nil && strings.HasPrefix(a.CommandID, prefix) {
			out = append(out, a)
		}
	}
	return out
}

// Issue 49: a 25,000-byte answer is heard whole, on a broker set up as
// shipped (passwords, configs/mosquitto/acl). The built agora-bridge
// cuts the reference graph's answer into parts of about 25 s of speech, the
// device's uplink takes them over mosquitto, and the player speaks them with
// espeak-ng on a speaker paced at 100 times real time, with max_age scaled
// alike (10 min / 100 = 6 s). Every part is acked spoken, in order, and no
// part is longer than 30 s of speech. Before: 8 KiB parts of about 9 min
// each, every part's max_age counted from its arrival: parts 3 and 4
// expired (on a real device, 3 of 4 parts were never heard).
func TestEndToEndLongAnswerHeardWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: mosquitto, agora-bridge, the reference graph (Python), espeak-ng")
	}
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "refgraph")); err != nil {
		t.Skip("no refgraph/")
	}
	const size, speed = 25000, 100.0
	engine := espeak(t)
	bin := filepath.Join(t.TempDir(), "agora-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "agora-bridge")).CombinedOutput(); err != nil {
		t.Fatalf("build agora-bridge: %v\n%s", err, out)
	}
	g, err := fleetsim.StartRefGraph(t.Context(), root, "REFGRAPH_DB="+filepath.Join(t.TempDir(), "cp.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	// The broker as shipped (configs/mosquitto): the device and the bridge
	// each with its own password, the ACL; the test reads as the bridge.
	const dev = "long-heard-1"
	acl, err := os.ReadFile(filepath.Join(root, "configs", "mosquitto", "acl"))
	if err != nil {
		t.Fatal(err)
	}
	broker := brokertest.Start(t, brokertest.WithACL(strings.Split(string(acl), "\n")...),
		brokertest.WithConfig("max_queued_messages 1000000"),
		brokertest.WithPassword("agora-bridge", "bridge-pw"), brokertest.WithPassword(dev, "dev-pw"))
	acks := broker.Subscribe(t, "agora/v1/+/acks", brokertest.WithAuth("agora-bridge", "bridge-pw"))
	cfgDir := t.TempDir()
	os.WriteFile(filepath.Join(cfgDir, "pw"), []byte("bridge-pw\n"), 0o600)
	os.WriteFile(filepath.Join(cfgDir, "bridge.yaml"), []byte("broker:\n  username: agora-bridge\n  password_file: "+
		filepath.Join(cfgDir, "pw")+"\n"), 0o600)
	br := fleetsim.NewProc("bridge", "", nil, bin, "run", "-c", filepath.Join(cfgDir, "bridge.yaml"), "--broker", broker.URL(),
		"--agui-url", g.URL(), "--state-dir", t.TempDir(), "--log-level", "debug")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	defer br.Stop()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(br.Log(), "agora-bridge running") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)

	spk := &pacedSpeaker{speed: speed}
	d := startDevice(t, dev, broker.URL(), "dev-pw", engine, spk, time.Duration(float64(10*time.Minute)/speed), 30*time.Second)
	q, err := d.st.EnqueueUtterance(buffer.Record{Text: fmt.Sprintf("Vertel alles [refgraph:long:%d]", size), Lang: "nl",
		StartedAt: time.Now(), Source: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	prefix := "reply-" + q.ID
	var parts int
	_, ok := acks.WaitFor(300*time.Second, func(m []brokertest.Message) bool {
		got := replyAcks(m, prefix)
		if len(got) > 0 {
			if pp, ok := protocol.ParseReplyPart(got[0].CommandID); ok {
				parts = pp.Of
			}
		}
		finished := 0
		for _, a := range got {
			if a.Outcome != protocol.OutcomeHeld {
				finished++
			}
		}
		return parts > 0 && finished >= parts
	})
	got := replyAcks(acks.Messages(), prefix)
	if !ok {
		t.Fatalf("%d acks for %d parts\nbridge log:\n%s", len(got), parts, tailOf(br.Log(), 3000))
	}
	var spoken int
	for i, a := range got {
		if a.Outcome != protocol.OutcomeSpoken {
			t.Errorf("part %s: outcome %s (%s), want spoken", a.CommandID, a.Outcome, a.Error)
			continue
		}
		if want := protocol.PartID(prefix, i+1, parts); a.CommandID != want {
			t.Errorf("ack %d is %s, want %s (in order, once)", i, a.CommandID, want)
		}
		spoken++
	}
	lengths := spk.played()
	longest, total := 0.0, 0.0
	for _, l := range lengths {
		longest, total = max(longest, l), total+l
	}
	if longest > 30 {
		t.Errorf("the longest part is %.1f s of speech, want at most 30 s", longest)
	}
	if strings.Contains(br.Log(), "BROKER IS OPEN") {
		t.Errorf("the bridge calls the shipped set-up open")
	}
	t.Logf("answer of %d bytes: %d parts, %d spoken in order; speech %.0f s in all, longest part %.1f s (espeak-ng nl, 150 wpm)",
		size, parts, spoken, total, longest)
}

// Issue 49: p3of3 then p1of3, p2 never sent. The device speaks p1, holds
// p3, waits part_wait for p2, then says (espeak-ng) that part 2 is missing,
// acks p2 missing (ok false), and speaks p3 after. Before, p3 and p1 were
// both spoken as they came and acked spoken, as if whole.
func TestReplyPartMissingSaidAloud(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto and espeak-ng")
	}
	engine := espeak(t)
	broker := brokertest.Start(t)
	acks := broker.Subscribe(t, "agora/v1/+/acks")
	spk := &pacedSpeaker{speed: 20}
	const dev = "parts-gap-1"
	status := broker.Subscribe(t, "agora/v1/"+dev+"/status")
	startDevice(t, dev, broker.URL(), "", engine, spk, 10*time.Minute, 2*time.Second)
	if _, ok := status.WaitCount(1, 20*time.Second); !ok {
		t.Fatal("the device never came online")
	}

	cli := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("backend-test"))
	if tok := cli.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer cli.Disconnect(50)
	texts := map[int]string{1: "Part one: the beam at frame four is cracked.", 3: "Part three: send the photos to the office."}
	for _, i := range []int{3, 1} {
		payload, _ := json.Marshal(protocol.ReplyCommand{ID: protocol.PartID("rep-gap", i, 3), Type: protocol.CmdReply,
			Text: texts[i], Lang: "en"})
		if tok := cli.Publish("agora/v1/"+dev+"/commands", 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	_, ok := acks.WaitFor(60*time.Second, func(m []brokertest.Message) bool { return len(replyAcks(m, "rep-gap")) >= 3 })
	got := replyAcks(acks.Messages(), "rep-gap")
	if !ok {
		t.Fatalf("acks %+v", got)
	}
	want := []replyAck{{CommandID: "rep-gap.p1of3", OK: true, Outcome: "spoken"},
		{CommandID: "rep-gap.p2of3", OK: false, Outcome: "missing"},
		{CommandID: "rep-gap.p3of3", OK: true, Outcome: "spoken"}}
	for i, w := range want {
		if got[i].CommandID != w.CommandID || got[i].OK != w.OK || got[i].Outcome != w.Outcome {
			t.Errorf("ack %d: %+v, want %+v", i, got[i], w)
		}
	}
	said := engine.texts()
	wantSaid := []string{texts[1], "Part 2 of 3 of this answer did not arrive.", texts[3]}
	if strings.Join(said, "|") != strings.Join(wantSaid, "|") {
		t.Errorf("said %q, want %q", said, wantSaid)
	}
	if l := spk.played(); len(l) != 3 || l[1] < 1 {
		t.Errorf("playbacks %v s: want 3, the notice at least 1 s of audio", l)
	}
	if got[1].Error == "" || !strings.Contains(got[1].Error, "part 2 of 3") {
		t.Errorf("missing ack's reason %q does not name the part", got[1].Error)
	}
}
