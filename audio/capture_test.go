package audio_test

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
)

// jfk returns the whisper binding's sample clip (16 kHz mono, 11 s).
func jfk(t *testing.T) []float32 {
	t.Helper()
	s, err := audio.ReadFile(testaudio.JFKPath(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// captureN reads n samples from the default capture device.
func captureN(t *testing.T, device string, n int) []float32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src, err := audio.OpenCapture(ctx, audio.CaptureOptions{Device: device})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var got []float32
	var want int64
	for len(got) < n {
		c, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read after %d samples: %v", len(got), err)
		}
		if c.Offset != want {
			t.Fatalf("chunk offset %d, want %d", c.Offset, want)
		}
		want += int64(len(c.Samples))
		got = append(got, c.Samples...)
	}
	return got
}

// clip reads a shared clip.
func clip(t *testing.T, name string) []float32 {
	t.Helper()
	s, err := audio.ReadFile(testaudio.Clip(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkCaptured asserts that got holds speech at a small lag, followed by
// the file microphone's silence (so nothing was skipped or repeated).
func checkCaptured(t *testing.T, speech, got []float32) {
	t.Helper()
	lag, corr := testaudio.Align(speech, got, 400)
	t.Logf("lag %d samples, correlation %.4f", lag, corr)
	if corr < 0.95 {
		t.Errorf("captured speech correlates %.3f with the original at lag %d, want > 0.95", corr, lag)
	}
	end := len(speech) + lag
	if tail := got[end+200 : end+4000]; rms(tail) > 1e-3 {
		t.Errorf("after the speech's end the capture has rms %.4f, want silence (data repeated or shifted)", rms(tail))
	}
}

func rms(s []float32) float64 {
	var a float64
	for _, v := range s {
		a += float64(v) * float64(v)
	}
	return math.Sqrt(a / float64(max(1, len(s))))
}

// TestCaptureVirtualMic captures through PortAudio from ALSA file-plugin
// microphones of different native formats, one after another in this
// process: each mic has its own asoundrc, which also checks that ALSA picks
// up a changed ALSA_CONFIG_PATH when PortAudio initialises again.
func TestCaptureVirtualMic(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio capture")
	}
	for _, tc := range []struct {
		name           string
		clip           string // "" = jfk.wav from the whisper binding
		rate, channels int
	}{
		{"16k stereo jfk", "", 16000, 2},
		{"48k stereo jfk", "", 48000, 2},
		{"44.1k stereo other clip", "fw_stereo_diarization_left.wav", 44100, 2},
		{"16k stereo other clip", "fw_stereo_diarization_right.wav", 16000, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var speech []float32
			if tc.clip == "" {
				speech = jfk(t)
			} else {
				speech = clip(t, tc.clip)
			}
			testaudio.NewVirtualMicFormat(t, speech, tc.rate, tc.channels)
			devs, err := audio.Devices()
			if err != nil {
				t.Fatal(err)
			}
			var def *audio.Device
			for i, d := range devs {
				if d.IsDefaultInput {
					def = &devs[i]
				}
			}
			if def == nil || def.DefaultSampleRate != float64(tc.rate) {
				t.Fatalf("default input %+v, want the virtual mic at %d Hz (ALSA config not reloaded?)", def, tc.rate)
			}
			got := captureN(t, "default", len(speech)+audio.SampleRate/2)
			checkCaptured(t, speech, got)
		})
	}
}

func TestDevicesAndSelection(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio devices")
	}
	speech := clip(t, "fw_stereo_diarization_right.wav")
	testaudio.NewVirtualMic(t, speech)
	devs, err := audio.Devices()
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for _, d := range devs {
		index[d.Name] = d.Index
		if d.HostAPI == "" {
			t.Errorf("device %q has no host API", d.Name)
		}
	}
	for _, name := range []string{"filein", "mic", "default"} {
		if _, ok := index[name]; !ok {
			t.Errorf("Devices() lacks %q: %+v", name, devs)
		}
	}
	for _, spec := range []string{"mic", strconv.Itoa(index["mic"]), "mi", "MIC"} {
		t.Run("open "+spec, func(t *testing.T) {
			checkCaptured(t, speech, captureN(t, spec, len(speech)+audio.SampleRate/2))
		})
	}
	for _, tc := range []struct{ spec, want string }{
		{"no-such-mic", `no input audio device named "no-such-mic"`},
		{"i", `"i" is ambiguous`},
		{"999", "no audio device with index 999"},
	} {
		_, err := audio.OpenCapture(context.Background(), audio.CaptureOptions{Device: tc.spec})
		if err == nil {
			t.Errorf("OpenCapture(%q) succeeded", tc.spec)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || (tc.spec != "i" && !strings.Contains(err.Error(), `"filein"`)) {
			t.Errorf("OpenCapture(%q): %v; want %q and the list of devices", tc.spec, err, tc.want)
		}
	}
}

// TestCaptureStops checks chunk clocks, and that Close and ctx end the
// capture goroutine.
func TestCaptureStops(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio capture")
	}
	testaudio.NewVirtualMic(t, testaudio.Silence(500))
	ctx, cancel := context.WithCancel(context.Background())
	src, err := audio.OpenCapture(ctx, audio.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := src.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		c, err := src.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d := c.Time.Sub(first.Time); d != time.Duration(c.Offset)*time.Second/audio.SampleRate {
			t.Errorf("chunk at offset %d is %v after the first, want offset/16 kHz", c.Offset, d)
		}
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := src.Read(context.Background())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("read after cancel: %v, want io.EOF", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("capture still delivering 10 s after its context ended")
		}
	}
	if err := src.Close(); err != nil {
		t.Error(err)
	}
	// PortAudio was released: a new capture opens fine.
	src2, err := audio.OpenCapture(context.Background(), audio.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src2.Close()
	if _, err := src2.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("read after Close: %v, want io.EOF", err)
	}
}

// TestCaptureReadHonoursCancelWithBacklog: the file-plugin microphone
// delivers far faster than real time, so chunks are always waiting; a reader
// whose context ends must still stop at once (a stopping daemon otherwise
// kept reading a stuck push-to-talk press past SIGTERM).
func TestCaptureReadHonoursCancelWithBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio capture")
	}
	testaudio.NewVirtualMic(t, testaudio.Silence(500))
	src, err := audio.OpenCapture(context.Background(), audio.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the unpaced capture fill its queue
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 3 {
		if _, err := src.Read(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("read %d with a cancelled context: err %v, want context.Canceled", i, err)
		}
	}
	if _, err := src.Read(context.Background()); err != nil {
		t.Errorf("read with a live context after the cancelled ones: %v", err)
	}
}
