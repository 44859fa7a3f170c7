package testaudio

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agora/agorad/audio"
)

// Speak synthesizes text with espeak-ng (voice "en" or "nl") and returns it
// as 16 kHz mono samples (espeak-ng's WAV converted by sox, decoded by
// audio.ReadFile).
func Speak(t testing.TB, voice, text string) []float32 {
	t.Helper()
	dir := t.TempDir()
	raw := filepath.Join(dir, "espeak.wav")
	out := filepath.Join(dir, "speech.wav")
	if b, err := exec.Command("espeak-ng", "-v", voice, "-w", raw, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng -v %s %q: %v: %s", voice, text, err, b)
	}
	runSox(t, raw, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", out)
	s, err := audio.ReadFile(out)
	if err != nil {
		t.Fatalf("decode synthesized speech: %v", err)
	}
	return s
}

// Silence returns ms milliseconds of 16 kHz silence.
func Silence(ms int) []float32 {
	return make([]float32, ms*audio.SampleRate/1000)
}

// Concat joins signals end to end into a new slice.
func Concat(parts ...[]float32) []float32 {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]float32, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func runSox(t testing.TB, args ...string) {
	t.Helper()
	if b, err := exec.Command("sox", args...).CombinedOutput(); err != nil {
		t.Fatalf("sox %v: %v: %s", args, err, b)
	}
}
