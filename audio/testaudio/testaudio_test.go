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

func TestActiveDB(t *testing.T) {
	tone := make([]float32, 16000)
	for i := range tone {
		tone[i] = 0.1 * float32(math.Sin(2*math.Pi*440*float64(i)/16000))
	}
	want := 20 * math.Log10(0.1/math.Sqrt2) // a sine's RMS
	tests := []struct {
		name string
		s    []float32
	}{
		{"tone", tone},
		{"tone between pauses", Concat(Silence(2000), tone, Silence(3000))},
		{"tone over a quiet hum 40 dB down", func() []float32 {
			s := Concat(Silence(1000), tone)
			for i := range s {
				s[i] += 0.001 * float32(math.Sin(2*math.Pi*50*float64(i)/16000))
			}
			return s
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ActiveDB(tc.s, 30); math.Abs(got-want) > 0.2 {
				t.Errorf("ActiveDB = %.2f dBFS, want %.2f (pauses left out)", got, want)
			}
			if got := ActiveDB(AtActiveDB(tc.s, -30, 30), 30); math.Abs(got+30) > 0.01 {
				t.Errorf("after AtActiveDB(-30): %.2f dBFS", got)
			}
		})
	}
}
