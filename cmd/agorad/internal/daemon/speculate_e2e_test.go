package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/cmd/agorad/internal/turns"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/transcribe"
)

// timedTranscriber is the real whisper, timing each call.
type timedTranscriber struct {
	Transcriber
	mu    sync.Mutex
	calls []time.Duration
	sizes []int // samples per call
	errs  int
}

func (w *timedTranscriber) Transcribe(ctx context.Context, s []float32) (transcribe.Result, error) {
	began := time.Now()
	r, err := w.Transcriber.Transcribe(ctx, s)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, time.Since(began))
	w.sizes = append(w.sizes, len(s))
	if err != nil {
		w.errs++
	}
	return r, err
}

func (w *timedTranscriber) snapshot() ([]time.Duration, []int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.calls...), append([]int(nil), w.sizes...), w.errs
}

func counterValue(t *testing.T, d *Daemon, name, label string) float64 {
	t.Helper()
	mfs, err := d.met.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" {
				return m.GetCounter().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// trimQuiet cuts near-silence (below -40 dBFS peaks) from the start and/or
// the end of s.
func trimQuiet(s []float32, start, end bool) []float32 {
	loud := func(v float32) bool { return v > 0.01 || v < -0.01 }
	lo, hi := 0, len(s)
	for start && lo < hi && !loud(s[lo]) {
		lo++
	}
	for end && hi > lo && !loud(s[hi-1]) {
		hi--
	}
	return s[lo:hi]
}

// Whisper inside the end-of-turn wait, on real tiny.en and a microphone
// paced at real time: with segment.speculate_after the utterance's text is
// ready when the turn ends (hangover − speculate_after of whisper's time is
// hidden, and whisper runs once); without it whisper starts after the
// turn; a pause (900 ms) longer than speculate_after but shorter than the hangover
// drops the early run and the question is transcribed whole, once.
func TestSpeculativeTranscription(t *testing.T) {
	if testing.Short() {
		t.Skip("real tiny.en, Silero VAD, mosquitto and espeak-ng")
	}
	model := testaudio.RealModel(t, "tiny.en")
	// The pause is exactly 900 ms: espeak-ng's own silence at the ends is
	// cut off.
	first := trimQuiet(testaudio.Speak(t, "en-us", "The crack in the beam at frame four"), false, true)
	second := trimQuiet(testaudio.Speak(t, "en-us", "is about two millimetres wide."), true, false)
	whole := testaudio.Speak(t, "en-us", "What should I write in the report about the crack in the beam?")
	tests := []struct {
		name        string
		speech      []float32
		after       time.Duration // -1: the default (segment.speculate_after)
		words       []string      // in the one utterance published
		used        float64       // -1: either (see below)
		dropped     bool
		hiddenAtLst time.Duration // whisper time hidden in the hangover, at least
	}{
		{"question, speculating", whole, -1, []string{"report", "crack"}, 1, false, 300 * time.Millisecond},
		{"question, not speculating", whole, 0, []string{"report", "crack"}, 0, false, 0},
		// The whole utterance's run is used when whisper was free for it;
		// on a loaded machine the aborted first run can still hold whisper
		// when the turn ends, and the job then runs whisper itself (once).
		{"pause inside a question", testaudio.Concat(first, testaudio.Silence(900), second), -1,
			[]string{"crack", "wide"}, -1, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			broker := brokertest.Start(t)
			cfg := replyConfig(t, broker.URL())
			cfg.Input.Source = "default" // replaced by src
			cfg.Input.HandsFree = true
			// Speculation inside the hangover: the early end of a complete
			// turn (TestTurnEndsWhenTheSentenceEnds) is off here.
			cfg.Segment.CompleteWait = 0
			if tc.after >= 0 {
				cfg.Segment.SpeculateAfter = configs.Duration(tc.after)
			}
			w, err := transcribe.New(transcribe.Options{ModelPath: model, Language: "en", Threads: 2, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			whisper := &timedTranscriber{Transcriber: w}
			be := newBackend(t, broker, cfg.DeviceID)
			src := &pacedSource{speaking: func() bool { return false }}
			d, _ := runDaemon(t, Options{Config: cfg, Transcriber: whisper,
				OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})
			time.Sleep(300 * time.Millisecond)
			src.say(tc.speech)
			msgs, ok := be.utterances.WaitCount(1, 60*time.Second)
			if !ok {
				t.Fatal("nothing published")
			}
			time.Sleep(cfg.Segment.Hangover.D() + 500*time.Millisecond) // a second utterance would be here by now
			msgs = be.utterances.Messages()
			if len(msgs) != 1 {
				t.Fatalf("%d utterances published, want the question as one", len(msgs))
			}
			var u struct{ Text string }
			if err := json.Unmarshal(msgs[0].Payload, &u); err != nil {
				t.Fatal(err)
			}
			for _, word := range tc.words {
				if !strings.Contains(strings.ToLower(u.Text), word) {
					t.Errorf("published %q lacks %q", u.Text, word)
				}
			}
			used := counterValue(t, d, "agorad_whisper_speculative_total", "used")
			dropped := counterValue(t, d, "agorad_whisper_speculative_total", "dropped")
			calls, sizes, errs := whisper.snapshot()
			hs := stageSeconds(t, d)
			turnEnd, transcribed := hs[turns.TurnEnd].GetSampleSum(), hs[turns.Transcribed].GetSampleSum()
			last := calls[len(calls)-1]
			hidden := last - time.Duration((transcribed-turnEnd)*float64(time.Second))
			t.Logf("%q: %d whisper calls (%d aborted) %v; speculative used %v dropped %v; turn_end %.3f s, transcribed %.3f s: %v of whisper's %v hidden",
				u.Text, len(calls), errs, calls, used, dropped, turnEnd, transcribed, hidden.Round(time.Millisecond), last.Round(time.Millisecond))
			if (tc.used >= 0 && used != tc.used) || used > 1 || (dropped > 0) != tc.dropped {
				t.Errorf("speculative runs used %v, dropped %v; want used %v, dropped %v", used, dropped, tc.used, tc.dropped)
			}
			// The whole utterance went through whisper once; every other
			// call was a shorter preview, dropped.
			longest, n := 0, 0
			for _, z := range sizes {
				if z > longest {
					longest, n = z, 0
				}
				if z == longest {
					n++
				}
			}
			if n != 1 || sizes[len(sizes)-1] != longest || float64(len(calls)-1) > dropped {
				t.Errorf("whisper calls on %v samples, %v dropped: want the whole utterance once, last", sizes, dropped)
			}
			if tc.hiddenAtLst > 0 && hidden < tc.hiddenAtLst {
				t.Errorf("%v of whisper hidden in the end-of-turn wait, want at least %v", hidden, tc.hiddenAtLst)
			}
			if cfg.Segment.SpeculateAfter == 0 && hidden > 150*time.Millisecond {
				t.Errorf("not speculating, yet %v of whisper before the turn ended", hidden)
			}
		})
	}
}
