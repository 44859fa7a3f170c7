package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/internal/testrun"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/configs/configtest"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/transcribe"
)

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

// testOptions runs cfg quietly; tests add a transcriber and a source.
func testOptions(cfg *configs.Config) Options {
	return Options{Config: cfg, DrainTimeout: time.Second, Version: "test", Logger: slog.New(slog.DiscardHandler)}
}

// startDaemon starts a daemon that runs until the test ends or Stop.
func startDaemon(t *testing.T, o Options) (*Daemon, *testrun.Run) {
	t.Helper()
	d, err := newDaemon(o)
	if err != nil {
		t.Fatalf("newDaemon: %v", err)
	}
	return d, testrun.Start(t, "daemon", func(ctx context.Context) error {
		defer d.close()
		return d.run(ctx)
	})
}

func testConfig(t *testing.T, brokerURL string) *configs.Config {
	t.Helper()
	return configtest.Daemon(t, "dev-test", brokerURL)
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
	o := testOptions(cfg)
	o.Transcriber = whisper
	d, _ := startDaemon(t, o)

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

// TestFileInputEnds: with a file as input the daemon processes it, waits
// for the outbox to drain and returns nil; with no broker it gives up after
// the drain timeout with ErrUndrained, and the entries stay stored for the
// next start.
func TestFileInputEnds(t *testing.T) {
	broker := brokertest.Start(t)
	speech := make([]float32, 3*audio.SampleRate)
	for i := range speech[audio.SampleRate : 2*audio.SampleRate] {
		speech[audio.SampleRate+i] = 0.3 * float32(math.Sin(float64(i)/4))
	}
	tests := []struct {
		name   string
		broker string
		want   error
	}{
		{"drained", broker.URL(), nil},
		{"no broker", "tcp://127.0.0.1:1", ErrUndrained},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, tt.broker)
			cfg.Input.Source = "inspection.wav" // replaced by OpenSource; a file path makes it file input
			cfg.Mode = buffer.ModeFeedback
			// A tone is barely speech to Silero: low thresholds let it through
			// as one utterance, which is all this test needs from the VAD.
			cfg.Segment.VADOnset, cfg.Segment.VADOffset = 0.01, 0.005
			whisper := &recordingTranscriber{text: "note from the recording"}
			o := testOptions(cfg)
			o.DrainTimeout, o.Transcriber = 700*time.Millisecond, whisper
			o.OpenSource = func(context.Context) (audio.Source, error) {
				return audio.NewSliceSource(speech, 1600, time.Now()), nil
			}
			d, err := newDaemon(o)
			if err != nil {
				t.Fatal(err)
			}
			err = d.run(context.Background())
			n, _ := d.store.OutboxCount()
			d.close()
			if !errors.Is(err, tt.want) {
				t.Fatalf("run = %v, want %v", err, tt.want)
			}
			if len(whisper.snapshot()) == 0 {
				t.Fatal("the file reached whisper zero times")
			}
			if tt.want != nil && n == 0 {
				t.Fatal("undrained with an empty outbox")
			}
			if tt.want == nil && n != 0 {
				t.Fatalf("drained with %d entries left", n)
			}
		})
	}
}

// batchingTranscriber is a recordingTranscriber that also takes batches,
// naming each utterance after its level ("note 25" for 0.25).
type batchingTranscriber struct {
	mu      sync.Mutex
	single  int
	batches []int
}

func (b *batchingTranscriber) result(s []float32) transcribe.Result {
	return transcribe.Result{Text: fmt.Sprintf("note %d", int(math.Round(float64(s[0])*100))), Lang: "en", AudioDuration: samplesDur(int64(len(s)))}
}

func (b *batchingTranscriber) Transcribe(ctx context.Context, s []float32) (transcribe.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.single++
	return b.result(s), nil
}

func (b *batchingTranscriber) TranscribeBatch(ctx context.Context, utts [][]float32) ([]transcribe.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches = append(b.batches, len(utts))
	var out []transcribe.Result
	for _, s := range utts {
		out = append(out, b.result(s))
	}
	return out, nil
}

func (b *batchingTranscriber) Close() error { return nil }

// TestJournaledBacklogIsPacked: a backlog of journaled utterances goes to
// whisper packed, as many as fit one window per call (one longer than the
// window alone), and every utterance is routed on its own, in order, its
// journal entry released.
func TestJournaledBacklogIsPacked(t *testing.T) {
	cfg := testConfig(t, "tcp://127.0.0.1:1") // no broker needed
	cfg.Input.Source = "none"
	st, err := buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	level := func(l float32, d time.Duration) []float32 {
		s := make([]float32, int(d.Seconds()*audio.SampleRate))
		for i := range s {
			s[i] = l
		}
		return s
	}
	t0 := time.Now().Add(-time.Minute)
	for i, u := range [][]float32{level(0.11, time.Second), level(0.12, 2*time.Second), level(0.13, 31*time.Second), level(0.14, time.Second), level(0.15, time.Second)} {
		if _, err := st.JournalAudio(u, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	whisper := &batchingTranscriber{}
	o := testOptions(cfg)
	o.Transcriber = whisper
	d, _ := startDaemon(t, o)
	want := []string{"note 11", "note 12", "note 13", "note 14", "note 15"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, _ := d.store.ListListen(0)
		pend, _ := d.store.PendingAudio()
		if len(recs) == len(want) && len(pend) == 0 {
			for i, r := range recs {
				if r.Text != want[i] {
					t.Errorf("listen buffer entry %d: %q, want %q (order of the audio)", i, r.Text, want[i])
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listen buffer %+v, journal %d entries: want %d notes stored and the journal empty", recs, len(pend), len(want))
		}
		time.Sleep(10 * time.Millisecond)
	}
	whisper.mu.Lock()
	defer whisper.mu.Unlock()
	if fmt.Sprint(whisper.batches) != "[2 2]" || whisper.single != 1 {
		t.Errorf("batches %v and %d single calls, want [2 2] and 1 (the 31 s utterance alone)", whisper.batches, whisper.single)
	}
}
