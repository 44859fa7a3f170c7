package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/evdev"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/wake"
)

// scriptedSource hands out chunks only when the test releases them and says
// when the daemon is waiting for the next one, so key presses can be put
// between exact samples.
type scriptedSource struct {
	chunks  chan audio.Chunk
	waiting chan struct{}
}

func newScriptedSource() *scriptedSource {
	return &scriptedSource{chunks: make(chan audio.Chunk), waiting: make(chan struct{}, 1)}
}

func (s *scriptedSource) Read(ctx context.Context) (audio.Chunk, error) {
	select {
	case s.waiting <- struct{}{}:
	default:
	}
	select {
	case c, ok := <-s.chunks:
		if !ok {
			return audio.Chunk{}, io.EOF
		}
		return c, nil
	case <-ctx.Done():
		return audio.Chunk{}, ctx.Err()
	}
}

func (s *scriptedSource) Close() error { return nil }

// waitIdle returns once the daemon has finished with the previous chunk and
// asks for the next.
func (s *scriptedSource) waitIdle(t *testing.T) {
	t.Helper()
	select {
	case <-s.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("daemon never asked for the next chunk")
	}
}

// recordingTranscriber remembers what whisper would have been given.
type recordingTranscriber struct {
	mu    sync.Mutex
	calls [][]float32
	text  string
}

func (r *recordingTranscriber) Transcribe(ctx context.Context, s []float32) (transcribe.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, append([]float32(nil), s...))
	return transcribe.Result{Text: r.text, Lang: "en", AudioDuration: samplesDur(int64(len(s)))}, nil
}

func (r *recordingTranscriber) Close() error { return nil }

func (r *recordingTranscriber) snapshot() [][]float32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]float32(nil), r.calls...)
}

func testConfig(t *testing.T, brokerURL string) *configs.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := configs.Default()
	cfg.DeviceID = "dev-test"
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Control.Socket = filepath.Join(dir, "ctl.sock")
	cfg.Metrics.Listen = ""
	cfg.MQTT.Broker = brokerURL
	cfg.Sounds.Enabled = false
	cfg.Models.VAD = testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin")
	return cfg
}

// TestPushToTalkThroughEvdev: a key held on a real evdev event stream (a
// FIFO read through the same code path as /dev/input/eventN) produces
// exactly the audio captured while it was held: one utterance, not a sample
// more or less, and nothing from the hands-free path.
func TestPushToTalkThroughEvdev(t *testing.T) {
	broker := brokertest.Start(t)
	cfg := testConfig(t, broker.URL())
	cfg.Input.Source = "default" // replaced by the scripted source
	cfg.Input.HandsFree = false
	cfg.Input.PTT.Enabled = true
	cfg.Input.PTT.EvdevDevice = filepath.Join(t.TempDir(), "event-headset")
	cfg.Input.PTT.KeyCode = 164 // KEY_PLAYPAUSE, a headset button
	if err := syscall.Mkfifo(cfg.Input.PTT.EvdevDevice, 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := os.OpenFile(cfg.Input.PTT.EvdevDevice, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	press := func(down bool) {
		v := int32(0)
		if down {
			v = 1
		}
		for _, e := range []evdev.RawEvent{{Type: evdev.EvKey, Code: 164, Value: v}, {Type: evdev.EvSyn, Code: evdev.SynReport}} {
			if _, err := keys.Write(evdev.Encode(e)); err != nil {
				t.Fatal(err)
			}
		}
	}

	src := newScriptedSource()
	whisper := &recordingTranscriber{text: "ptt note"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var d *Daemon
	done := make(chan int, 1)
	{
		o := Options{Config: cfg, DrainTimeout: time.Second, Version: "test", Logger: slog.New(slog.DiscardHandler),
			OpenSource: func(context.Context) (audio.Source, error) { return src, nil }, Transcriber: whisper}
		var code int
		d, code, err = newDaemon(o)
		if err != nil {
			t.Fatalf("newDaemon: %v (code %d)", err, code)
		}
		go func() { c, _ := d.run(ctx); d.close(); done <- c }()
	}

	chunk := func(i int, amp float32) audio.Chunk {
		s := make([]float32, 1600)
		for j := range s {
			s[j] = amp * float32(math.Sin(float64(i*1600+j)/7))
		}
		return audio.Chunk{Samples: s, Offset: int64(i * 1600), Time: time.Now()}
	}
	var held []float32
	send := func(c audio.Chunk) {
		src.waitIdle(t)
		src.chunks <- c
	}
	waitPTT := func(want bool) {
		deadline := time.Now().Add(10 * time.Second)
		for d.ptt.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("push-to-talk never became %v", want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	send(chunk(0, 0.3)) // before the press: not recorded
	send(chunk(1, 0.3))
	src.waitIdle(t)
	press(true)
	waitPTT(true)
	src.waiting <- struct{}{} // waitIdle consumed the signal; the daemon is still waiting
	for i := 2; i < 7; i++ {
		c := chunk(i, 0.5)
		held = append(held, c.Samples...)
		send(c)
	}
	src.waitIdle(t)
	press(false)
	waitPTT(false)
	src.waiting <- struct{}{}
	send(chunk(7, 0.3)) // after the release: not recorded
	send(chunk(8, 0.3))

	deadline := time.Now().Add(10 * time.Second)
	for len(whisper.snapshot()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // a second, wrong utterance would show up by now
	calls := whisper.snapshot()
	if len(calls) != 1 {
		t.Fatalf("whisper calls = %d, want exactly 1 (the held utterance)", len(calls))
	}
	if len(calls[0]) != len(held) {
		t.Fatalf("utterance has %d samples, want the %d held", len(calls[0]), len(held))
	}
	for i := range held {
		if math.Abs(float64(calls[0][i]-held[i])) > 1.0/32768 {
			t.Fatalf("sample %d = %v, want %v", i, calls[0][i], held[i])
		}
	}
	deadline = time.Now().Add(5 * time.Second)
	var recs []string
	for time.Now().Before(deadline) {
		rs, err := d.store.ListListen(0)
		if err != nil {
			t.Fatal(err)
		}
		recs = recs[:0]
		for _, r := range rs {
			recs = append(recs, r.Source+":"+r.Text)
		}
		if len(recs) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(recs) != 1 || recs[0] != "ptt:ptt note" {
		t.Fatalf("listen buffer %q, want the one push-to-talk note", recs)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not stop")
	}
}

// TestJournaledAudioIsTranscribedOnStart: audio journaled before a crash
// (heard, not yet transcribed) is transcribed when the daemon starts again,
// and its journal entry is released once the text is stored.
func TestJournaledAudioIsTranscribedOnStart(t *testing.T) {
	cfg := testConfig(t, "tcp://127.0.0.1:1") // no broker needed
	cfg.Input.Source = "none"
	st, err := buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	speech := make([]float32, 8000)
	for i := range speech {
		speech[i] = 0.25 * float32(math.Sin(float64(i)/5))
	}
	if _, err := st.JournalAudio(speech, time.Now()); err != nil {
		t.Fatal(err)
	}
	st.Close()

	whisper := &recordingTranscriber{text: "recovered note"}
	d, _, err := newDaemon(Options{Config: cfg, DrainTimeout: time.Second, Version: "test", Logger: slog.New(slog.DiscardHandler), Transcriber: whisper})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); d.close(); close(done) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, _ := d.store.ListListen(0)
		pend, _ := d.store.PendingAudio()
		if len(recs) == 1 && recs[0].Text == "recovered note" && recs[0].Source == "journal" && len(pend) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listen buffer %+v, journal %d entries: want the recovered note stored and the journal empty", recs, len(pend))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if calls := whisper.snapshot(); len(calls) != 1 || len(calls[0]) != len(speech) {
		t.Fatalf("whisper calls %d, want 1 with the %d journaled samples", len(calls), len(speech))
	}
}

// TestReloadAppliesSafeChanges: SIGHUP (the Reload channel) applies a new
// wake word from the file at once; a broken file is rejected and the running
// configuration kept.
func TestReloadAppliesSafeChanges(t *testing.T) {
	cfg := testConfig(t, "tcp://127.0.0.1:1")
	cfg.Input.Source = "none"
	path := filepath.Join(t.TempDir(), "agorad.yaml")
	write := func(c *configs.Config) {
		b, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cfg)
	reload := make(chan struct{}, 1)
	d, _, err := newDaemon(Options{Config: cfg, ConfigPath: path, DrainTimeout: time.Second, Version: "test",
		Logger: slog.New(slog.DiscardHandler), Reload: reload, Transcriber: &recordingTranscriber{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); d.close(); close(done) }()
	defer func() { cancel(); <-done }()

	if m := d.match("Computer, wat nu?"); m.Action != wake.None {
		t.Fatalf("before reload: %q is already a wake word", "computer")
	}
	if err := os.WriteFile(path, []byte("sounds:\n  volume: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	time.Sleep(200 * time.Millisecond)
	if m := d.match("agora, wat nu?"); m.Action != wake.Feedback {
		t.Fatal("a rejected reload changed the running wake rules")
	}

	next := *cfg
	next.Wake.Words = []string{"agora", "computer"}
	write(&next)
	reload <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for d.match("Computer, wat nu?").Action != wake.Feedback {
		if time.Now().After(deadline) {
			t.Fatal("reload did not apply the new wake word")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := d.router.Handle(context.Background(), Heard{Text: "Computer, wat nu?", Source: "typed"})
	if err != nil || out.ModeAfter != ModeFeedback || out.Sent != 1 {
		t.Fatalf("after reload: %+v, %v; want feedback with the command queued", out, err)
	}
}

// TestFileInputExitCodes: with a file as input the daemon processes it,
// waits for the outbox to drain and exits 0; with no broker it gives up
// after the drain timeout with ExitUndrained, and the entries stay stored
// for the next start.
func TestFileInputExitCodes(t *testing.T) {
	broker := brokertest.Start(t)
	speech := make([]float32, 3*audio.SampleRate)
	for i := range speech[audio.SampleRate : 2*audio.SampleRate] {
		speech[audio.SampleRate+i] = 0.3 * float32(math.Sin(float64(i)/4))
	}
	tests := []struct {
		name   string
		broker string
		want   int
	}{
		{"drained", broker.URL(), ExitOK},
		{"no broker", "tcp://127.0.0.1:1", ExitUndrained},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, tt.broker)
			cfg.Input.Source = "inspection.wav" // replaced by OpenSource; a file path makes it file input
			cfg.Mode = ModeFeedback
			// A tone is barely speech to Silero: low thresholds let it through
			// as one utterance, which is all this test needs from the VAD.
			cfg.Segment.VADOnset, cfg.Segment.VADOffset = 0.01, 0.005
			whisper := &recordingTranscriber{text: "note from the recording"}
			d, _, err := newDaemon(Options{Config: cfg, DrainTimeout: 700 * time.Millisecond, Version: "test", Logger: slog.New(slog.DiscardHandler),
				Transcriber: whisper,
				OpenSource: func(context.Context) (audio.Source, error) {
					return audio.NewSliceSource(speech, 1600, time.Now()), nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			code, err := d.run(context.Background())
			n, _ := d.store.OutboxCount()
			d.close()
			if code != tt.want || err != nil {
				t.Fatalf("exit %d (%v), want %d", code, err, tt.want)
			}
			if len(whisper.snapshot()) == 0 {
				t.Fatal("the file reached whisper zero times")
			}
			if tt.want == ExitUndrained && n == 0 {
				t.Fatal("undrained exit with an empty outbox")
			}
			if tt.want == ExitOK && n != 0 {
				t.Fatalf("drained exit with %d entries left", n)
			}
		})
	}
}

// numberingTranscriber answers each call with "piece N" (N from 0), so the
// order of what is published can be checked against the order of the audio.
type numberingTranscriber struct {
	mu    sync.Mutex
	calls []int // samples per call
}

func (n *numberingTranscriber) Transcribe(ctx context.Context, s []float32) (transcribe.Result, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, len(s))
	return transcribe.Result{Text: fmt.Sprintf("piece %d", len(n.calls)-1), Lang: "en", AudioDuration: samplesDur(int64(len(s)))}, nil
}

func (n *numberingTranscriber) Close() error { return nil }

// TestPushToTalkLongPressIsCutInOrder: a press of 3.5 × ptt.max_utterance is
// journaled as four pieces no longer than the maximum, transcribed and
// published in order (feedback mode, real mosquitto), with none refused and
// the journal empty afterwards; the samples of all pieces are exactly the
// samples held.
func TestPushToTalkLongPressIsCutInOrder(t *testing.T) {
	broker := brokertest.Start(t)
	sub := broker.Subscribe(t, "agora/v1/dev-test/utterances")
	cfg := testConfig(t, broker.URL())
	cfg.Mode = "feedback"
	cfg.Input.Source = "default" // replaced by the scripted source
	cfg.Input.HandsFree = false
	cfg.Input.PTT.Enabled = true
	cfg.Input.PTT.MaxUtterance = configs.Duration(time.Second)
	src := newScriptedSource()
	whisper := &numberingTranscriber{}
	d, _, err := newDaemon(Options{Config: cfg, DrainTimeout: time.Second, Version: "test", Logger: slog.New(slog.DiscardHandler),
		OpenSource: func(context.Context) (audio.Source, error) { return src, nil }, Transcriber: whisper})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); d.close(); close(done) }()
	defer func() { cancel(); <-done }()

	const chunkLen = 1600 // 100 ms
	send := func(i int) {
		s := make([]float32, chunkLen)
		for j := range s {
			s[j] = 0.4 * float32(math.Sin(float64(i*chunkLen+j)/9))
		}
		src.waitIdle(t)
		src.chunks <- audio.Chunk{Samples: s, Offset: int64(i * chunkLen), Time: time.Now()}
	}
	send(0)
	src.waitIdle(t)
	d.pushToTalk(true)
	src.waiting <- struct{}{}
	for i := 1; i <= 35; i++ { // 3.5 s held
		send(i)
	}
	src.waitIdle(t)
	d.pushToTalk(false)
	src.waiting <- struct{}{}
	send(36)

	// 3.5 s at a 1 s maximum, each cut looking back at most 250 ms for a
	// pause: four or five pieces.
	_, ok := sub.WaitCount(4, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // the rest would show by now
	whisper.mu.Lock()
	defer whisper.mu.Unlock()
	msgs := sub.Messages()
	if n := len(whisper.calls); !ok || n < 4 || n > 5 || len(msgs) != n {
		t.Fatalf("%d pieces transcribed, %d published; want 4 or 5, each published", n, len(msgs))
	}
	total := 0
	for i, n := range whisper.calls {
		if n > audio.SampleRate || n < audio.SampleRate*3/4-chunkLen && i < len(whisper.calls)-1 {
			t.Errorf("piece %d has %d samples, want 0.75..1 s (only the last may be shorter)", i, n)
		}
		total += n
	}
	if total != 35*chunkLen {
		t.Errorf("pieces hold %d samples, want the %d held", total, 35*chunkLen)
	}
	for i, m := range msgs {
		var u struct {
			Text   string `json:"text"`
			Seq    uint64 `json:"seq"`
			Source string `json:"source"`
		}
		if err := json.Unmarshal(m.Payload, &u); err != nil {
			t.Fatal(err)
		}
		if u.Text != fmt.Sprintf("piece %d", i) || u.Source != "ptt" {
			t.Errorf("message %d: %q from %q, want \"piece %d\" from ptt", i, u.Text, u.Source, i)
		}
	}
	st, err := d.store.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.JournalPending != 0 || len(st.Refused) != 0 {
		t.Errorf("after the press: %d journaled, refused %v; want none", st.JournalPending, st.Refused)
	}
}
