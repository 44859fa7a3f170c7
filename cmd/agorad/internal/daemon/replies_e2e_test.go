package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/configs/configtest"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// backend is a scripted AGORA backend: it publishes replies on the device's
// commands topic and reads its acks and utterances.
type backend struct {
	t          *testing.T
	cli        paho.Client
	device     string
	acks       *brokertest.Subscriber
	utterances *brokertest.Subscriber
}

func newBackend(t *testing.T, b *brokertest.Broker, device string) *backend {
	t.Helper()
	cli := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID(fmt.Sprintf("backend-%d", time.Now().UnixNano())))
	if tok := cli.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("backend connect: %v", tok.Error())
	}
	t.Cleanup(func() { cli.Disconnect(50) })
	return &backend{t: t, cli: cli, device: device,
		acks:       b.Subscribe(t, protocol.Topic(device, protocol.TopicAcks)),
		utterances: b.Subscribe(t, protocol.Topic(device, protocol.TopicUtterances))}
}

func (b *backend) reply(r protocol.ReplyCommand) {
	b.t.Helper()
	r.Type = protocol.CmdReply
	payload, err := json.Marshal(r)
	if err != nil {
		b.t.Fatal(err)
	}
	if tok := b.cli.Publish(protocol.Topic(b.device, protocol.TopicCommands), 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		b.t.Fatalf("publish reply: %v", tok.Error())
	}
}

type replyAck struct {
	CommandID   string `json:"command_id"`
	CommandType string `json:"command_type"`
	OK          bool   `json:"ok"`
	Outcome     string `json:"outcome"`
	Error       string `json:"error"`
}

// outcomes returns the reply acks seen so far, in order.
func (b *backend) outcomes() []replyAck {
	var out []replyAck
	for _, m := range b.acks.Messages() {
		var a replyAck
		if json.Unmarshal(m.Payload, &a) == nil && a.CommandType == protocol.CmdReply {
			out = append(out, a)
		}
	}
	return out
}

// waitOutcome waits for an ack of reply id with outcome.
func (b *backend) waitOutcome(id, outcome string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, a := range b.outcomes() {
			if a.CommandID == id && a.Outcome == outcome {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.t.Fatalf("no ack %q for reply %s within %v; acks: %+v", outcome, id, timeout, b.outcomes())
}

// runDaemon starts a daemon in-process and returns it with a stop function
// (which waits for it to close, flushing the speaker).
func runDaemon(t *testing.T, o Options) (*Daemon, func()) {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Version, o.DrainTimeout = "test", time.Second
	d, err := newDaemon(o)
	if err != nil {
		t.Fatalf("newDaemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.run(ctx); d.close() }()
	deadline := time.Now().Add(15 * time.Second)
	for !d.up.Online() {
		if time.Now().After(deadline) {
			t.Fatal("daemon never connected to the broker")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("daemon did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return d, stop
}

func replyConfig(t *testing.T, broker string) *configs.Config {
	cfg := configtest.Daemon(t, "dev-test", broker)
	cfg.Mode = "feedback"
	return cfg
}

// reference is the engine's own command-line rendering of text with the
// daemon's voice and rate.
func reference(t *testing.T, cfg *configs.Config, lang, text string) []float32 {
	voice := cfg.Replies.Voices.EN
	if lang == "nl" {
		voice = cfg.Replies.Voices.NL
	}
	return testaudio.SpeakArgs(t, text, "-v", voice, "-s", strconv.Itoa(cfg.Replies.Rate))
}

// TestRepliesSpokenInOrder: a scripted backend publishes Dutch and English
// replies; the speaker (ALSA file plugin) receives each as espeak-ng's own
// rendering, in arrival order, and each is acked spoken.
func TestRepliesSpokenInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, espeak-ng and PortAudio")
	}
	mic := testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	cfg := replyConfig(t, broker.URL())
	be := newBackend(t, broker, cfg.DeviceID)
	d, stop := runDaemon(t, Options{Config: cfg})
	replies := []protocol.ReplyCommand{
		{ID: "r-en-1", InReplyTo: "u-1", Text: "The crack at frame four is not structural.", Lang: "en"},
		{ID: "r-nl-1", InReplyTo: "u-2", Text: "Deze scheur is niet constructief.", Lang: "nl"},
		{ID: "r-en-2", Text: "Check the bolts on the north side.", Spoken: "Please check the bolts on the north side.", Lang: "en"},
		{ID: "r-nl-2", Text: "Meet de doorbuiging van de balk.\a <b>nu</b>"}, // lang: the configured default (nl); markup spoken as text
	}
	for _, r := range replies {
		be.reply(r)
	}
	for _, r := range replies {
		be.waitOutcome(r.ID, protocol.OutcomeSpoken, 60*time.Second)
	}
	if st, err := d.cmds.Status(context.Background()); err != nil || st.Speech == "" || st.RepliesWaiting != 0 {
		t.Errorf("status %+v %v", st, err)
	}
	stop()
	played := mic.Played(t)
	at := 0
	for _, r := range replies {
		text := r.Spoken
		if text == "" {
			text = r.Text
		}
		lang := r.Lang
		if lang == "" {
			lang = cfg.Replies.Language
		}
		prepared := text
		if r.ID == "r-nl-2" {
			prepared = "Meet de doorbuiging van de balk. <b>nu</b>" // the control character removed
		}
		ref := reference(t, cfg, lang, prepared)
		lag, c := testaudio.FindSpeech(ref, played[at:])
		t.Logf("%s: at %.2f s, correlation %.3f", r.ID, float64(at+lag)/audio.SampleRate, c)
		if c < 0.9 {
			t.Errorf("%s: correlation with espeak-ng's own rendering %.3f, want > 0.9", r.ID, c)
			continue
		}
		at += lag + len(ref) - 800
	}
	if n := len(be.outcomes()); n != len(replies) {
		t.Errorf("%d reply acks, want %d (one each)", n, len(replies))
	}
}

// pacedSource is a microphone paced at real time (20 ms chunks) that hears
// the device's own reply: from the moment the daemon starts speaking it
// carries echo (the reply's rendering), as a speaker next to the
// microphone would; push-to-talk speech can be added with say.
type pacedSource struct {
	speaking func() bool
	echo     []float32
	start    time.Time
	off      int64
	mu       sync.Mutex
	extra    []float32
	echoing  atomic.Bool
}

func (s *pacedSource) Read(ctx context.Context) (audio.Chunk, error) {
	const n = 320
	if s.start.IsZero() {
		s.start = time.Now()
	}
	due := s.start.Add(time.Duration(s.off+n) * time.Second / audio.SampleRate)
	select {
	case <-ctx.Done():
		return audio.Chunk{}, ctx.Err()
	case <-time.After(time.Until(due)):
	}
	c := audio.Chunk{Samples: make([]float32, n), Offset: s.off, Time: time.Now()}
	s.off += n
	if !s.echoing.Load() && s.speaking() {
		s.echoing.Store(true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.echoing.Load() && len(s.echo) > 0 {
		k := copy(c.Samples, s.echo)
		s.echo = s.echo[k:]
	}
	if len(s.extra) > 0 {
		k := min(n, len(s.extra))
		for i := range k {
			c.Samples[i] += s.extra[i]
		}
		s.extra = s.extra[k:]
	}
	return c, nil
}

func (s *pacedSource) say(x []float32) {
	s.mu.Lock()
	s.extra = append(s.extra, x...)
	s.mu.Unlock()
}

func (s *pacedSource) Close() error { return nil }

// TestHalfDuplexEcho: the microphone carries the device's own reply while it
// is spoken. With half duplex (the default) no utterance and no whisper
// call result; with it off the echo is heard and published (so the test can
// fail).
func TestHalfDuplexEcho(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, espeak-ng, Silero VAD and PortAudio")
	}
	const text = "The crack in the beam at frame four is not structural, but it should be monitored."
	for _, halfDuplex := range []bool{true, false} {
		t.Run(fmt.Sprintf("half_duplex=%v", halfDuplex), func(t *testing.T) {
			testaudio.NewVirtualMic(t, nil)
			broker := brokertest.Start(t)
			cfg := replyConfig(t, broker.URL())
			cfg.Input.Source = "default" // replaced by the paced source
			cfg.Replies.HalfDuplex = halfDuplex
			be := newBackend(t, broker, cfg.DeviceID)
			whisper := &recordingTranscriber{text: "the crack in the beam"}
			var dp atomic.Pointer[Daemon] // capture runs before runDaemon returns
			src := &pacedSource{echo: reference(t, cfg, "en", text), speaking: func() bool {
				d := dp.Load()
				return d != nil && d.replies.Status().Speaking != ""
			}}
			d, _ := runDaemon(t, Options{Config: cfg, Transcriber: whisper,
				OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})
			dp.Store(d)
			be.reply(protocol.ReplyCommand{ID: "r-echo", Text: text, Lang: "en"})
			be.waitOutcome("r-echo", protocol.OutcomeSpoken, 60*time.Second)
			if !src.echoing.Load() {
				t.Fatal("the microphone never carried the echo")
			}
			// Long enough for the segmenter's hangover and whisper.
			time.Sleep(2 * time.Second)
			calls, utts := len(whisper.snapshot()), be.utterances.Count()
			t.Logf("half_duplex=%v: %d whisper calls, %d utterances published", halfDuplex, calls, utts)
			if halfDuplex && (calls != 0 || utts != 0) {
				t.Errorf("the device heard itself: %d whisper calls, %d utterances", calls, utts)
			}
			if !halfDuplex && (calls == 0 || utts == 0) {
				t.Errorf("half duplex off, yet the echo produced %d whisper calls and %d utterances", calls, utts)
			}
		})
	}
}

// TestBargeIn: push-to-talk in the middle of a reply stops it within 100 ms;
// the speaker received only a prefix, the reply is acked interrupted, and
// the push-to-talk utterance is published.
func TestBargeIn(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, espeak-ng and PortAudio")
	}
	const text = "Inspection note. The north wall shows moisture near the floor. The south wall has a crack of two millimetres. Check both again next week."
	mic := testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	cfg := replyConfig(t, broker.URL())
	cfg.Input.Source = "default"
	cfg.Input.HandsFree = false
	cfg.Input.PTT.Enabled = true
	be := newBackend(t, broker, cfg.DeviceID)
	whisper := &recordingTranscriber{text: "stop, the ladder is moving"}
	var d *Daemon
	src := &pacedSource{speaking: func() bool { return false }}
	d, stop := runDaemon(t, Options{Config: cfg, Transcriber: whisper,
		OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})
	be.reply(protocol.ReplyCommand{ID: "r-long", Text: text, Lang: "en"})
	deadline := time.Now().Add(30 * time.Second)
	for d.replies.Status().Speaking == "" {
		if time.Now().After(deadline) {
			t.Fatal("never started speaking")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	ptt := d.cmds
	pressed := time.Now()
	if _, err := ptt.PTT(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for d.replies.Status().Speaking != "" {
		time.Sleep(time.Millisecond)
	}
	stopped := time.Since(pressed)
	tone := make([]float32, audio.SampleRate/2)
	for i := range tone {
		tone[i] = 0.3 * float32(math.Sin(float64(i)/6))
	}
	src.say(tone)
	time.Sleep(700 * time.Millisecond)
	if _, err := ptt.PTT(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	be.waitOutcome("r-long", protocol.OutcomeInterrupted, 10*time.Second)
	if _, ok := be.utterances.WaitFor(10*time.Second, func(ms []brokertest.Message) bool {
		for _, m := range ms {
			var u protocol.Utterance
			if json.Unmarshal(m.Payload, &u) == nil && u.Source == "ptt" && u.Text == "stop, the ladder is moving" {
				return true
			}
		}
		return false
	}); !ok {
		t.Fatal("push-to-talk utterance not published")
	}
	t.Logf("speech stopped %v after the press", stopped)
	if stopped > 100*time.Millisecond {
		t.Errorf("barge-in took %v, want < 100 ms", stopped)
	}
	stop()
	played := mic.Played(t)
	ref := reference(t, cfg, "en", text)
	last := 0
	for i, v := range played {
		if v != 0 {
			last = i
		}
	}
	_, c := testaudio.FindSpeech(ref[:audio.SampleRate], played) // the first second
	t.Logf("played %.2f s of a %.2f s reply; its first second correlates %.3f", float64(last)/audio.SampleRate, float64(len(ref))/audio.SampleRate, c)
	if c < 0.9 {
		t.Errorf("the reply's beginning is not in the playback (correlation %.3f)", c)
	}
	if last > len(ref)/2 {
		t.Errorf("played %d samples of a %d-sample reply: not cut short", last, len(ref))
	}
	if n := len(be.outcomes()); n != 1 {
		t.Errorf("%d reply acks, want 1", n)
	}
}

// TestListenModeHoldsAndExpired: in listen mode a reply is held (acked
// held) and spoken after "AGORA"; an expired reply is acked expired and
// never spoken.
func TestListenModeHoldsAndExpired(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, espeak-ng and PortAudio")
	}
	mic := testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	cfg := replyConfig(t, broker.URL())
	cfg.Mode = "listen"
	be := newBackend(t, broker, cfg.DeviceID)
	d, stop := runDaemon(t, Options{Config: cfg})
	const held, expired = "The report is ready.", "This answer came too late."
	be.reply(protocol.ReplyCommand{ID: "r-old", Text: expired, Lang: "en", ExpiresAt: protocol.FormatTime(time.Now().Add(-time.Minute))})
	be.reply(protocol.ReplyCommand{ID: "r-held", Text: held, Lang: "en"})
	be.waitOutcome("r-old", protocol.OutcomeExpired, 20*time.Second)
	be.waitOutcome("r-held", protocol.OutcomeHeld, 20*time.Second)
	ctl := d.cmds
	if st, _ := ctl.Status(context.Background()); st.RepliesWaiting != 1 {
		t.Errorf("status: %d replies waiting, want 1", st.RepliesWaiting)
	}
	time.Sleep(500 * time.Millisecond)
	for _, a := range be.outcomes() {
		if a.Outcome == protocol.OutcomeSpoken {
			t.Fatalf("spoken in listen mode: %+v", a)
		}
	}
	if _, err := ctl.Say(context.Background(), "AGORA what is next"); err != nil {
		t.Fatal(err)
	}
	be.waitOutcome("r-held", protocol.OutcomeSpoken, 30*time.Second)
	if _, err := ctl.RepliesPlay(context.Background(), "r-old"); err == nil {
		t.Error("replies play of an expired reply accepted")
	}
	list, err := ctl.Replies(context.Background(), 0)
	if err != nil || len(list.Replies) != 2 || list.Replies[0].State != "expired" || list.Replies[1].State != "spoken" {
		t.Errorf("replies %+v %v", list, err)
	}
	stop()
	played := mic.Played(t)
	if _, c := testaudio.FindSpeech(reference(t, cfg, "en", held), played); c < 0.9 {
		t.Errorf("held reply not spoken (correlation %.3f)", c)
	}
	if _, c := testaudio.FindSpeech(reference(t, cfg, "en", expired), played); c > 0.6 {
		t.Errorf("expired reply spoken (correlation %.3f)", c)
	}
}

// TestVoiceThatCannotLoad: a voice that does not load is a clear error at
// start, not a crash: the daemon runs with earcons only, says so in status,
// and acks replies failed with the reason.
func TestVoiceThatCannotLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto and espeak-ng")
	}
	testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	cfg := replyConfig(t, broker.URL())
	cfg.Replies.Voices.NL = "zz-no-such-voice"
	be := newBackend(t, broker, cfg.DeviceID)
	d, _ := runDaemon(t, Options{Config: cfg})
	st, err := d.cmds.Status(context.Background())
	if err != nil || !strings.HasPrefix(st.Speech, "off (earcons only)") || !strings.Contains(st.Speech, "zz-no-such-voice") {
		t.Errorf("status speech %q (%v)", st.Speech, err)
	}
	be.reply(protocol.ReplyCommand{ID: "r-mute", Text: "Hallo.", Lang: "nl"})
	be.waitOutcome("r-mute", protocol.OutcomeFailed, 20*time.Second)
	if a := be.outcomes(); len(a) != 1 || a[0].OK || !strings.Contains(a[0].Error, "zz-no-such-voice") {
		t.Errorf("acks %+v", a)
	}
}

// markSource passes chunks through and closes at once its stream offset
// reaches mark samples.
type markSource struct {
	audio.Source
	mark int64
	at   chan struct{}
	once sync.Once
}

func (m *markSource) Read(ctx context.Context) (audio.Chunk, error) {
	c, err := m.Source.Read(ctx)
	if err == nil && c.Offset+int64(len(c.Samples)) >= m.mark {
		m.once.Do(func() { close(m.at) })
	}
	return c, err
}

// TestHalfDuplexEchoALSAMicrophone is TestHalfDuplexEcho with the ALSA file
// plugin as the microphone (read at real time through testaudio.Paced): its
// input holds the reply's own rendering from 2.3 s on, and the backend
// publishes the reply when capture reaches 2.0 s, so the echo arrives while
// the device speaks (as from a speaker 0.3 s of latency away, within the
// tail). With half duplex: no whisper call, no utterance; without: both.
func TestHalfDuplexEchoALSAMicrophone(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, espeak-ng, Silero VAD and PortAudio")
	}
	const text = "The crack in the beam at frame four is not structural, but it should be monitored."
	for _, halfDuplex := range []bool{true, false} {
		t.Run(fmt.Sprintf("half_duplex=%v", halfDuplex), func(t *testing.T) {
			broker := brokertest.Start(t)
			cfg := replyConfig(t, broker.URL())
			echo := reference(t, cfg, "en", text)
			testaudio.NewVirtualMic(t, testaudio.Concat(testaudio.Silence(2300), echo, testaudio.Silence(3000)))
			cfg.Input.Source = "default"
			cfg.Replies.HalfDuplex = halfDuplex
			cfg.Replies.Tail = configs.Duration(500 * time.Millisecond)
			be := newBackend(t, broker, cfg.DeviceID)
			whisper := &recordingTranscriber{text: "the crack in the beam"}
			marked := make(chan struct{})
			runDaemon(t, Options{Config: cfg, Transcriber: whisper,
				OpenSource: func(ctx context.Context) (audio.Source, error) {
					src, err := audio.OpenCapture(ctx, audio.CaptureOptions{Device: "default", Logger: slog.New(slog.DiscardHandler)})
					if err != nil {
						return nil, err
					}
					return &markSource{Source: testaudio.Paced(src), mark: 2 * audio.SampleRate, at: marked}, nil
				}})
			select {
			case <-marked:
			case <-time.After(30 * time.Second):
				t.Fatal("capture never reached 2 s")
			}
			be.reply(protocol.ReplyCommand{ID: "r-echo", Text: text, Lang: "en"})
			be.waitOutcome("r-echo", protocol.OutcomeSpoken, 60*time.Second)
			time.Sleep(2500 * time.Millisecond) // the echo's end, hangover and whisper
			calls, utts := len(whisper.snapshot()), be.utterances.Count()
			t.Logf("half_duplex=%v: %d whisper calls, %d utterances published", halfDuplex, calls, utts)
			if halfDuplex && (calls != 0 || utts != 0) {
				t.Errorf("the device heard itself: %d whisper calls, %d utterances", calls, utts)
			}
			if !halfDuplex && (calls == 0 || utts == 0) {
				t.Errorf("half duplex off, yet the echo produced %d whisper calls and %d utterances", calls, utts)
			}
		})
	}
}
