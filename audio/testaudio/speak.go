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

// SpeakArgs is Speak with espeak-ng's own options (e.g. "-v", "en-us",
// "-s", "150"): the reference rendering of a reply the device speaks with
// the same voice and rate.
func SpeakArgs(t testing.TB, text string, args ...string) []float32 {
	t.Helper()
	dir := t.TempDir()
	raw := filepath.Join(dir, "espeak.wav")
	out := filepath.Join(dir, "speech.wav")
	if b, err := exec.Command("espeak-ng", append(append([]string{"-w", raw}, args...), "--", text)...).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng %v %q: %v: %s", args, text, err, b)
	}
	runSox(t, raw, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", out)
	s, err := audio.ReadFile(out)
	if err != nil {
		t.Fatalf("decode synthesized speech: %v", err)
	}
	return s
}

// FindSpeech is Find for long signals (seconds of speech in minutes of
// playback): a coarse search on 8x block averages, then Align around the
// best coarse lag. Same result as Find where the match is clear.
func FindSpeech(want, got []float32) (lag int, corr float64) {
	const f = 8
	dec := func(s []float32) []float32 {
		out := make([]float32, len(s)/f)
		for i := range out {
			var sum float32
			for _, v := range s[i*f : (i+1)*f] {
				sum += v
			}
			out[i] = sum / f
		}
		return out
	}
	if len(want) < f || len(got) < len(want) {
		return -1, -1
	}
	cl, _ := Find(dec(want), dec(got))
	if cl < 0 {
		return -1, -1
	}
	start := max(0, cl*f-2*f)
	end := min(len(got), cl*f+len(want)+2*f)
	l, c := Align(want, got[start:end], 3*f)
	return start + l, c
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
