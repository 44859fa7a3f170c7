package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/cmd/agorad/internal/evdev"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/transcribe"
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
	o := testOptions(cfg)
	o.OpenSource = func(context.Context) (audio.Source, error) { return src, nil }
	o.Transcriber = whisper
	d, run := startDaemon(t, o)

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
		for d.speech.ptt.Load() != want {
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
	if err := run.Stop(); err != nil {
		t.Fatalf("daemon stopped with %v", err)
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
	o := testOptions(cfg)
	o.OpenSource = func(context.Context) (audio.Source, error) { return src, nil }
	o.Transcriber = whisper
	d, _ := startDaemon(t, o)

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
	d.speech.pushToTalk(true)
	src.waiting <- struct{}{}
	for i := 1; i <= 35; i++ { // 3.5 s held
		send(i)
	}
	src.waitIdle(t)
	d.speech.pushToTalk(false)
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
