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
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/turnend"
)

// The end of a turn when the sentence ends (issue 47), on real tiny.en,
// Silero and a microphone paced at real time, with real speech: a complete
// question ("what time is it") ends segment.complete_wait into the silence
// (or as soon after as its speculative text is ready), well before the
// hangover; the same speaker's "what's the temperature of the" (a real
// question cut before its last word) keeps the whole hangover.
func TestTurnEndsWhenTheSentenceEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("real tiny.en, Silero VAD, mosquitto and real speech")
	}
	model := testaudio.RealModel(t, "tiny.en")
	w, err := transcribe.New(transcribe.Options{ModelPath: model, Language: "en", Threads: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	question, err := audio.ReadFile(testaudio.Clip(t, "stp_en_what_time_is_it.wav"))
	if err != nil {
		t.Fatal(err)
	}
	long, err := audio.ReadFile(testaudio.Clip(t, "stp_en_what_s_the_temperature_of_the_ecobee.wav"))
	if err != nil {
		t.Fatal(err)
	}
	unfinished := cutLastWord(t, w, long)
	tests := []struct {
		name   string
		speech []float32
		early  bool
	}{
		{"complete question", question, true},
		{"unfinished phrase", unfinished, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			broker := brokertest.Start(t)
			cfg := replyConfig(t, broker.URL())
			cfg.Input.Source = "default" // replaced by src
			cfg.Input.HandsFree = true
			if cfg.Segment.CompleteWait == 0 {
				t.Fatal("segment.complete_wait is off in the default configuration")
			}
			be := newBackend(t, broker, cfg.DeviceID)
			src := &pacedSource{speaking: func() bool { return false }}
			d, _ := runDaemon(t, Options{Config: cfg, Transcriber: w,
				OpenSource: func(context.Context) (audio.Source, error) { return src, nil }})
			time.Sleep(300 * time.Millisecond)
			src.say(tc.speech)
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
			te := stageSeconds(t, d)[turns.TurnEnd].GetSampleSum()
			hang, short := cfg.Segment.Hangover.D().Seconds(), cfg.Segment.CompleteWait.D().Seconds()
			t.Logf("%q (complete: %v): turn ended %.3f s after the end of speech (complete_wait %.1f s, hangover %.1f s)",
				u.Text, turnend.Complete(u.Text), te, short, hang)
			if turnend.Complete(u.Text) != tc.early {
				t.Fatalf("whisper heard %q: complete %v, the case needs %v", u.Text, !tc.early, tc.early)
			}
			switch {
			case tc.early && (te < short-0.1 || te > hang-0.2):
				t.Errorf("complete question: turn ended %.3f s after speech, want from complete_wait (%.1f s) to well before the hangover (%.1f s)", te, short, hang)
			case !tc.early && te < hang-0.1:
				t.Errorf("unfinished phrase: turn ended %.3f s after speech, before the hangover (%.1f s)", te, hang)
			}
		})
	}
}

// cutLastWord returns s up to the start of the last word whisper hears in
// it (a real phrase cut before its end).
func cutLastWord(t *testing.T, w *transcribe.Transcriber, s []float32) []float32 {
	t.Helper()
	res, err := w.Transcribe(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Words) < 2 {
		t.Fatalf("whisper heard %q: too few words to cut", res.Text)
	}
	last := res.Words[len(res.Words)-1]
	t.Logf("cutting %q before %q at %v", res.Text, last.Text, last.Start)
	return s[:min(len(s), int(last.Start.Seconds()*audio.SampleRate))]
}
