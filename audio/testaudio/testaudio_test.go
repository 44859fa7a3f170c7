package testaudio

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/agora/agorad/audio"
)

func rms(s []float32) float64 {
	var a float64
	for _, v := range s {
		a += float64(v) * float64(v)
	}
	return math.Sqrt(a / float64(max(1, len(s))))
}

func TestSilenceConcat(t *testing.T) {
	s := Silence(250)
	if len(s) != 4000 || rms(s) != 0 {
		t.Errorf("Silence(250): %d samples, rms %v; want 4000 zeros", len(s), rms(s))
	}
	c := Concat([]float32{1, 2}, nil, []float32{3})
	if len(c) != 3 || c[0] != 1 || c[2] != 3 {
		t.Errorf("Concat = %v", c)
	}
}

func TestSpeak(t *testing.T) {
	for _, tc := range []struct{ voice, text string }{
		{"en", "agora listen"},
		{"nl", "agora luister, de deur is beschadigd"},
	} {
		s := Speak(t, tc.voice, tc.text)
		secs := float64(len(s)) / audio.SampleRate
		if secs < 0.4 || secs > 6 || rms(s) < 0.01 {
			t.Errorf("Speak(%s, %q): %.2f s, rms %.3f; want audible speech", tc.voice, tc.text, secs, rms(s))
		}
	}
}

func TestVirtualMicFiles(t *testing.T) {
	speech := []float32{0.5, -0.5, 0.25}
	m := NewVirtualMic(t, speech)
	b, err := os.ReadFile(m.InFile)
	if err != nil {
		t.Fatal(err)
	}
	frames := len(speech) + TrailingSilenceMs*audio.SampleRate/1000
	if len(b) != frames*2*m.Channels {
		t.Errorf("infile has %d bytes, want %d", len(b), frames*2*m.Channels)
	}
	if got := int16(uint16(b[2]) | uint16(b[3])<<8); got != 16384 {
		t.Errorf("first sample on channel 2 = %d, want 16384", got)
	}
	if p := m.Played(t); len(p) != 0 {
		t.Errorf("Played before any playback: %d samples", len(p))
	}
	if os.Getenv("ALSA_CONFIG_PATH") == "" {
		t.Error("ALSA_CONFIG_PATH not set")
	}
}

// TestSpeechThroughVirtualMic is the helper's end-to-end use: synthesized
// speech captured back through PortAudio.
func TestSpeechThroughVirtualMic(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio capture")
	}
	speech := Speak(t, "en", "agora, the door is damaged")
	NewVirtualMic(t, speech)
	ctx := context.Background()
	src, err := audio.OpenCapture(ctx, audio.CaptureOptions{Device: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var got []float32
	for len(got) < len(speech) {
		c, err := src.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Samples...)
	}
	var xy, xx, yy float64
	for i, x := range speech {
		y := float64(got[i])
		xy += float64(x) * y
		xx += float64(x) * float64(x)
		yy += y * y
	}
	if c := xy / math.Sqrt(xx*yy); c < 0.95 {
		t.Errorf("captured speech correlates %.3f with what was spoken, want > 0.95", c)
	}
}
