package transcribe

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/transcribe/wer"
)

func TestParseWindow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Window
		err  bool
	}{
		{"", WindowFull, false},
		{"full", WindowFull, false},
		{"steps", WindowSteps, false},
		{"Steps", "", true},
		{"10s", "", true},
	} {
		got, err := ParseWindow(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseWindow(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestStepCtx(t *testing.T) {
	sec := func(s float64) int { return int(s * sampleRate) }
	for _, tc := range []struct {
		name   string
		n      int
		margin time.Duration
		want   int
	}{
		{"padded short input", minSamples, StepMargin, 512},
		{"a command", sec(3), StepMargin, 512},
		{"fills 10.24 s with the margin exactly", sec(8.24), StepMargin, 512},
		{"a sample over: next step", sec(8.24) + 1, StepMargin, 768},
		{"fills 15.36 s with the margin exactly", sec(13.36), StepMargin, 768},
		{"longer: full window", sec(13.36) + 1, StepMargin, 0},
		{"a packed window", sec(29), StepMargin, 0},
		{"no margin", sec(10.24), 0, 512},
		{"a larger margin moves it up", sec(3), 8 * time.Second, 768},
	} {
		if got := stepCtx(tc.n, windowSteps, tc.margin); got != tc.want {
			t.Errorf("%s: stepCtx(%d samples, margin %v) = %d, want %d", tc.name, tc.n, tc.margin, got, tc.want)
		}
	}
	if got := stepCtx(sampleRate, nil, 0); got != 0 {
		t.Errorf("no steps: %d, want 0 (full)", got)
	}
}

func TestSteppedBroken(t *testing.T) {
	// 3 s of audio in a 512 window (1024 cs)
	ok := seg(0, 250, "the", "door", "is", "open")
	loop := segment{t0: 0, t1: 280, text: strings.Repeat(" the door is open", 12)}
	for _, tc := range []struct {
		name   string
		segs   []segment
		passes int
		broken string // "" or a word of the reason
	}{
		{"plain", []segment{ok}, 1, ""},
		{"two segments", []segment{seg(0, 100, "the", "door"), seg(100, 290, "is", "open")}, 1, ""},
		{"ends after the audio (whisper overshoots)", []segment{seg(0, 700, "open")}, 1, ""},
		{"nothing decoded", nil, 1, "segments"},
		{"a second pass", []segment{ok}, 2, "passes"},
		{"ends just before the edge zone", []segment{seg(0, 973, "open")}, 1, ""},
		{"ends near the window's edge", []segment{seg(0, 974, "open")}, 1, "ends"},
		{"ends at the window's edge", []segment{seg(0, 1024, "open")}, 1, "ends"},
		{"first segment fine, second at the edge", []segment{ok, seg(250, 1000, "open")}, 1, "ends"},
		{"repeats itself", []segment{loop}, 1, "compression"},
		// whisper.cpp's end of a segment it closed with no timestamp
		{"no closing timestamp (30 s)", []segment{untimed(seg(0, 3000, "de", "deur", "is", "open"))}, 1, ""},
		{"timestamped first, then untimed", []segment{ok, untimed(seg(250, 3000, "open"))}, 1, ""},
		{"no closing timestamp, repeats itself", []segment{untimed(segment{t0: 0, t1: 3000, text: loop.text})}, 1, "compression"},
		{"no closing timestamp, second pass", []segment{untimed(seg(0, 3000, "open"))}, 2, "passes"},
	} {
		why := steppedBroken(tc.segs, tc.passes, 512)
		if (tc.broken == "") != (why == "") || !strings.Contains(why, tc.broken) {
			t.Errorf("%s: steppedBroken = %q, want %q", tc.name, why, tc.broken)
		}
	}
}

// TestRealSteppedWindow: with steps, a short utterance is decoded in a
// 10.24 s window (a third of the encoder's positions) into the words the
// full window gives, within a word in ten, and a long one after short ones
// still gets the full window and exactly its text: the cross-attention rows
// the stepped passes left (window.go) are padding, not their speech.
func TestRealSteppedWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights: slow")
	}
	model := testaudio.RealModel(t, "tiny.en")
	type utt struct {
		name    string
		samples []float32
		window  time.Duration // with steps
	}
	const small, full = 10240 * time.Millisecond, 30 * time.Second
	utts := []utt{
		{"stp_en_lock_the_front_door.wav", readWAV16(t, testaudio.Clip(t, "stp_en_lock_the_front_door.wav")), small},
		{"espeak-ng", testaudio.Speak(t, "en", "The crack in the beam is not structural."), small},
		{"fw_jfk.wav (11 s)", readWAV16(t, testaudio.Clip(t, "fw_jfk.wav")), 15360 * time.Millisecond},
		{"ljspeech_lj001_0006.wav", readWAV16(t, testaudio.Clip(t, "ljspeech_lj001_0006.wav")), small},
		{"leopard_diarization_test.wav (20 s)", readWAV16(t, testaudio.Clip(t, "leopard_diarization_test.wav")), full},
	}
	fullTr := newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2})
	steps := newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2, Window: WindowSteps})
	errs, words := 0, 0
	for _, u := range utts {
		want, err := fullTr.Transcribe(context.Background(), u.samples)
		if err != nil {
			t.Fatal(err)
		}
		got, err := steps.Transcribe(context.Background(), u.samples)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: steps %v %q; full %v %q", u.name, got.Window, got.Text, want.Window, want.Text)
		if want.Window != full || got.Window != u.window {
			t.Errorf("%s: windows %v (steps) and %v (full), want %v and %v", u.name, got.Window, want.Window, u.window, full)
		}
		e, n := wer.Errors(want.Text, got.Text)
		errs, words = errs+e, words+n
		if want.Text == "" || (u.window == full && e > 0) {
			t.Errorf("%s: steps %q, full window %q: want the same words", u.name, got.Text, want.Text)
		}
	}
	// A stepped window may change a word (measured: "mentioning" heard as
	// "mention"); the packed test's tolerance, a word in ten, over all.
	if errs > words/10 {
		t.Errorf("steps: %d of the full window's %d words differ, want at most a tenth", errs, words)
	}
}

// untimed is s as whisper gives a segment it closed with no timestamp.
func untimed(s segment) segment {
	s.untimed = true
	return s
}
