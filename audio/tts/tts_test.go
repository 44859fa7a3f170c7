package tts_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/audio/tts"
)

func TestPrepare(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
		cut      bool
	}{
		{"plain", "Ja, dat is constructief.", 0, "Ja, dat is constructief.", false},
		{"control characters", "bell\a tab\tnul\x00 esc\x1b[31mred", 0, "bell tab nul esc [31mred", false},
		{"newlines collapse", "one\n\n  two\r\nthree", 0, "one two three", false},
		{"phoneme brackets", "say [[h@l'oU]] now", 0, "say [ [h@l'oU] ] now", false},
		{"nested brackets", "[[[x]]]", 0, "[ [ [x] ] ]", false},
		{"markup stays text", "<speak><break time='9s'/>hi</speak>", 0, "<speak><break time='9s'/>hi</speak>", false},
		{"invalid utf-8", "a\xffb", 0, "a b", false},
		{"cut at sentence", "First one. Second one! Third one is long.", 30, "First one. Second one!", true},
		{"cut at word", "no sentence end in this long text", 12, "no sentence", true},
		{"cut inside word", "abcdefghij", 4, "abcd", true},
		{"short enough", "Kort.", 5, "Kort.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := tts.Prepare(tc.in, tc.max)
			if got != tc.want || cut != tc.cut {
				t.Errorf("Prepare(%q, %d) = %q, %v; want %q, %v", tc.in, tc.max, got, cut, tc.want, tc.cut)
			}
		})
	}
}

func newEngine(t *testing.T) tts.Engine {
	t.Helper()
	e, err := tts.New(tts.Config{Engine: "espeak-ng", Voices: map[string]string{"nl": "nl", "en": "en"}, Volume: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func readAll(t *testing.T, s tts.Stream) ([]float32, time.Duration) {
	t.Helper()
	start := time.Now()
	var first time.Duration
	var out []float32
	for {
		c, err := s.Read()
		if first == 0 && len(c) > 0 {
			first = time.Since(start)
		}
		out = append(out, c...)
		if errors.Is(err, io.EOF) {
			return out, first
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The engine's stream is espeak-ng's own rendering: it correlates with the
// espeak-ng command line's WAV (resampled by sox) in both languages.
func TestEspeakMatchesCLI(t *testing.T) {
	e := newEngine(t)
	for _, tc := range []struct{ lang, text string }{
		{"en", "The crack in the beam at frame four is not structural."},
		{"nl", "Deze scheur in de balk is niet constructief."},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			for i := range 2 { // the second one uses the process started ahead
				s, err := e.Synthesize(context.Background(), tc.text, tc.lang)
				if err != nil {
					t.Fatal(err)
				}
				got, first := readAll(t, s)
				s.Close()
				ref := testaudio.Speak(t, tc.lang, tc.text)
				lag, c := testaudio.Align(ref, got, 200)
				t.Logf("run %d: %d samples (cli %d), first audio after %v, lag %d, correlation %.3f", i, len(got), len(ref), first, lag, c)
				if c < 0.9 {
					t.Errorf("correlation with espeak-ng's own rendering %.3f, want > 0.9", c)
				}
				if d := len(got) - len(ref); d < -800 || d > 800 {
					t.Errorf("length %d, cli %d", len(got), len(ref))
				}
			}
		})
	}
}

func TestEspeakErrors(t *testing.T) {
	if e, err := tts.New(tts.Config{Engine: "espeak-ng", Voices: map[string]string{"nl": "zz"}, Volume: 1}); err == nil || !strings.Contains(err.Error(), `"zz"`) || e != nil {
		t.Errorf("bad voice: %v, engine %v", err, e)
	}
	if _, err := tts.New(tts.Config{Engine: "festival", Voices: map[string]string{"en": "en"}, Volume: 1}); err == nil {
		t.Error("unknown engine accepted")
	}
	if _, err := tts.New(tts.Config{Engine: "espeak-ng", Voices: map[string]string{"en": "en"}, Volume: 1, Binary: "/nonexistent/espeak-ng"}); err == nil {
		t.Error("missing binary accepted")
	}
	if _, err := tts.New(tts.Config{Engine: "espeak-ng", Voices: map[string]string{"en": "--help"}, Volume: 1}); err == nil {
		t.Error("option as voice accepted")
	}
	e := newEngine(t)
	if _, err := e.Synthesize(context.Background(), "x", "de"); err == nil {
		t.Error("language without voice accepted")
	}
	// Cancelling ends a long utterance early.
	ctx, cancel := context.WithCancel(context.Background())
	s, err := e.Synthesize(ctx, strings.Repeat("This is a long sentence. ", 50), "en")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(); err != nil {
		t.Fatal(err)
	}
	cancel()
	n := 0
	for {
		c, err := s.Read()
		n += len(c)
		if err != nil {
			break
		}
	}
	s.Close()
	if n > 16000*60 {
		t.Errorf("%d samples after cancel", n)
	}
}
