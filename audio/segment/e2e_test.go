package segment_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/transcribe"
)

// countingTranscriber wraps the real whisper transcriber and records every call.
type countingTranscriber struct {
	t     *transcribe.Transcriber
	mu    sync.Mutex
	calls [][]float32
}

func (c *countingTranscriber) Transcribe(ctx context.Context, samples []float32) (transcribe.Result, error) {
	c.mu.Lock()
	c.calls = append(c.calls, samples)
	c.mu.Unlock()
	return c.t.Transcribe(ctx, samples)
}

// TestEndToEndVirtualMic: speech played through the ALSA file microphone,
// captured with PortAudio, segmented with real Silero and transcribed with
// whisper (test model): one whisper call per utterance, boundaries within
// 300 ms of the truth, no call for the silence after the speech ends.
func TestEndToEndVirtualMic(t *testing.T) {
	if testing.Short() {
		t.Skip("PortAudio, Silero and whisper end to end: slow")
	}
	jfk, err := audio.ReadFile(testaudio.JFKPath(t))
	if err != nil {
		t.Fatal(err)
	}
	// 1 s silence, JFK, then an English and a Dutch sentence after pauses
	// of known length; the infile ends 500 ms after the last word, and the
	// microphone delivers zeros from there on.
	speech := testaudio.Silence(1000)
	jfkSpan := [2]int{len(speech), len(speech) + len(jfk)}
	speech = append(speech, jfk...)
	var truth [][2]int
	for i, s := range []struct {
		pause       int
		voice, text string
	}{
		{2000, "en", "Agora, the second valve is leaking."},
		{2500, "nl", "Agora luister, de druk is te hoog."},
	} {
		speech = append(speech, testaudio.Silence(s.pause)...)
		clip := testaudio.Speak(t, s.voice, s.text)
		first, last := speechBounds(clip)
		if first < 0 {
			t.Fatalf("sentence %d synthesized as silence", i)
		}
		truth = append(truth, [2]int{len(speech) + first, len(speech) + last})
		speech = append(speech, clip...)
	}
	speech = append(speech, testaudio.Silence(500)...)

	tr, err := transcribe.New(transcribe.Options{ModelPath: testaudio.Model(t, "for-tests-ggml-tiny.bin"), Language: "auto", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	whisper := &countingTranscriber{t: tr}
	det := openSilero(t)
	seg, err := segment.New(det, segment.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}

	testaudio.NewVirtualMic(t, speech)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src, err := audio.OpenCapture(ctx, audio.CaptureOptions{Device: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	// Stop on our own condition: 3 s of the microphone's zeros after the
	// speech file ended (the file plugin is not clock-paced).
	stopAt := int64(len(speech) + 3*audio.SampleRate)
	var (
		utts     []segment.Utterance
		captured []float32
		next     int64
	)
	for next < stopAt {
		c, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("capture read at offset %d: %v", next, err)
		}
		if c.Offset != next {
			t.Fatalf("capture chunk at offset %d, want %d", c.Offset, next)
		}
		next += int64(len(c.Samples))
		captured = append(captured, c.Samples...)
		done, err := seg.Push(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range done {
			if u.SpeechEnd > int64(len(speech)) {
				t.Errorf("utterance %d..%d reaches into the silence after the speech file (%d)", u.SpeechStart, u.SpeechEnd, len(speech))
			}
			res, err := whisper.Transcribe(ctx, u.Samples)
			if err != nil {
				t.Fatalf("transcribe utterance at %d: %v", u.SpeechStart, err)
			}
			if strings.HasPrefix(res.Rejected, "near-silent") {
				t.Errorf("utterance at %.0f ms was not sent to whisper: %s", ms(u.SpeechStart), res.Rejected)
			}
			t.Logf("utterance %.0f..%.0f ms (%d samples): whisper %v for %v of audio, text %q rejected %q",
				ms(u.SpeechStart), ms(u.SpeechEnd), len(u.Samples), res.ProcessingTime, res.AudioDuration, res.Text, res.Rejected)
			utts = append(utts, u)
		}
	}
	if rest := seg.Flush(); len(rest) != 0 {
		t.Errorf("Flush after 3 s of trailing silence gave %d utterances, want none", len(rest))
	}
	st := seg.Stats()
	t.Logf("stats %+v", st)

	// The capture may be shifted against the file by the ALSA/PortAudio
	// buffering: measure it on the first sentence's audio and apply it.
	lag, corr := testaudio.Align(speech[truth[0][0]:truth[0][1]], captured[truth[0][0]:min(truth[0][1]+4000, len(captured))], 1600)
	t.Logf("capture lag %d samples (%.1f ms), correlation %.3f", lag, ms(int64(lag)), corr)
	if corr < 0.9 {
		t.Fatalf("captured audio does not match the speech file (correlation %.3f)", corr)
	}

	if len(whisper.calls) != len(utts) {
		t.Errorf("%d whisper calls for %d utterances, want exactly one each", len(whisper.calls), len(utts))
	}
	// JFK: 1..4 utterances inside its span; then exactly one per sentence.
	var jfkUtts, rest []segment.Utterance
	for _, u := range utts {
		if u.SpeechStart < int64(jfkSpan[1]+lag) {
			jfkUtts = append(jfkUtts, u)
		} else {
			rest = append(rest, u)
		}
	}
	if len(jfkUtts) < 1 || len(jfkUtts) > 4 {
		t.Errorf("JFK gave %d utterances, want 1..4", len(jfkUtts))
	}
	for _, u := range jfkUtts {
		if u.SpeechStart < int64(jfkSpan[0]+lag) {
			t.Errorf("JFK utterance starts at %.0f ms, before the clip (%.0f ms)", ms(u.SpeechStart), ms(int64(jfkSpan[0])))
		}
	}
	shifted := make([][2]int, len(truth))
	for i, tr := range truth {
		shifted[i] = [2]int{tr[0] + lag, tr[1] + lag}
	}
	checkTruth(t, rest, shifted, time.Time{}) // capture stamps its own clock
}
