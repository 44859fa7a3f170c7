package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/cmd/agorad/internal/turns"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/turnend"
)

// The end of a turn when the sentence ends (issue 47), on real tiny.en,
// Silero and a microphone paced at real time, with real speech: a complete
// question ("what time is it") ends segment.complete_wait into the silence
// (or as soon after as its speculative text is ready), well before the
// hangover; the same speaker's "what's the temperature of the" (a real
// question cut before its last word) keeps the whole hangover (3 s here).
func TestTurnEndsWhenTheSentenceEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("real tiny.en, Silero VAD, mosquitto and real speech")
	}
	model := testaudio.RealModel(t, "tiny.en")
	// The daemon closes its transcriber when it stops: one per daemon.
	whisper := func(t *testing.T) *transcribe.Transcriber {
		w, err := transcribe.New(transcribe.Options{ModelPath: model, Language: "en", Threads: 2, Window: transcribe.WindowSteps,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	cutter := whisper(t)
	defer cutter.Close()
	question, err := audio.ReadFile(testaudio.Clip(t, "stp_en_what_time_is_it.wav"))
	if err != nil {
		t.Fatal(err)
	}
	long, err := audio.ReadFile(testaudio.Clip(t, "stp_en_what_s_the_temperature_of_the_ecobee.wav"))
	if err != nil {
		t.Fatal(err)
	}
	unfinished := cutUnfinished(t, cutter, long)
	tests := []struct {
		name   string
		speech []float32
		early  bool
	}{
		{"complete question", question, true},
		{"unfinished phrase", unfinished, false},
	}
	// turn runs one daemon on speech and returns what it published and how
	// long after the end of speech the turn ended.
	turn := func(t *testing.T, speech []float32) (string, float64, *configs.Config) {
		broker := brokertest.Start(t)
		cfg := replyConfig(t, broker.URL())
		cfg.Input.Source = "default" // replaced by src
		cfg.Input.HandsFree = true
		if cfg.Segment.CompleteWait == 0 {
			t.Fatal("segment.complete_wait is off in the default configuration")
		}
		// A long hangover, so that on a loaded machine whisper's
		// speculative run (which decides) is done well before it.
		cfg.Segment.Hangover = configs.Duration(3 * time.Second)
		be := newBackend(t, broker, cfg.DeviceID)
		src := &pacedSource{speaking: func() bool { return false }}
		d, stop := runDaemon(t, Options{Config: cfg, Transcriber: whisper(t),
			OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})
		defer stop()
		time.Sleep(300 * time.Millisecond)
		src.say(speech)
		if _, ok := be.utterances.WaitCount(1, 60*time.Second); !ok {
			t.Fatal("nothing published")
		}
		time.Sleep(cfg.Segment.Hangover.D() + 500*time.Millisecond) // a second utterance would be here by now
		msgs := be.utterances.Messages()
		if len(msgs) != 1 {
			t.Fatalf("%d utterances published, want one", len(msgs))
		}
		var u struct{ Text string }
		if err := json.Unmarshal(msgs[0].Payload, &u); err != nil {
			t.Fatal(err)
		}
		return u.Text, stageSeconds(t, d)[turns.TurnEnd].GetSampleSum(), cfg
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The daemon's whisper hears the cut phrase a little differently
			// from the cutter's (the segmenter's padding, the speculative
			// preview's timing): in a fresh root it once wrote "What's the
			// temperature of this?". Whatever it wrote, the turn must end as
			// the rule says for that text; the case is the one asked for
			// only when the text is, so up to three daemons try.
			for attempt := 1; attempt <= 3; attempt++ {
				text, te, cfg := turn(t, tc.speech)
				hang, short := cfg.Segment.Hangover.D().Seconds(), cfg.Segment.CompleteWait.D().Seconds()
				complete := turnend.Complete(text)
				t.Logf("%q (complete: %v): turn ended %.3f s after the end of speech (complete_wait %.1f s, hangover %.1f s)",
					text, complete, te, short, hang)
				switch {
				case complete && (te < short-0.1 || te > hang-0.1):
					t.Errorf("%q is complete: turn ended %.3f s after speech, want from complete_wait (%.1f s) to well before the hangover (%.1f s)", text, te, short, hang)
				case !complete && te < hang-0.1:
					t.Errorf("%q is unfinished: turn ended %.3f s after speech, before the hangover (%.1f s)", text, te, hang)
				}
				if complete == tc.early {
					return
				}
				t.Logf("attempt %d: whisper heard %q, complete %v; the case needs %v", attempt, text, complete, tc.early)
			}
			t.Skipf("whisper never heard the case (complete %v) in 3 daemons: the rule held for what it heard, the case was not exercised", tc.early)
		})
	}
}

// cutUnfinished returns the longest start of s, cut before one of its
// words, that whisper hears as an unfinished phrase (a real question cut
// short; whisper's language model tends to finish a phrase cut right
// before its last word: "temperature of the incubator?").
func cutUnfinished(t *testing.T, w *transcribe.Transcriber, s []float32) []float32 {
	t.Helper()
	res, err := w.Transcribe(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	for k := len(res.Words) - 1; k >= 2; k-- {
		at := res.Words[k].Start - 50*time.Millisecond
		piece := s[:min(len(s), int(at.Seconds()*audio.SampleRate))]
		got, err := w.Transcribe(t.Context(), piece)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%q cut before %q at %v: heard %q", res.Text, res.Words[k].Text, at, got.Text)
		if !turnend.Complete(got.Text) {
			return piece
		}
	}
	t.Fatalf("no cut of %q is heard as unfinished", res.Text)
	return nil
}
