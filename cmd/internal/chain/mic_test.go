package chain

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
)

func TestMain(m *testing.M) { testaudio.Main(m) }

// TestMicDeliversSpeech: what the paced FIFO microphone is given reaches a
// PortAudio capture stream (the daemon's) whole and at real time: a
// sentence read back from the stream matches what was spoken, sample for
// sample, and takes as long to arrive as it lasts.
func TestMicDeliversSpeech(t *testing.T) {
	m, err := NewMic(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Env() {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	micDone := make(chan error, 1)
	go func() { micDone <- m.Run(ctx) }()
	src, err := audio.OpenCapture(ctx, audio.CaptureOptions{Device: "default"})
	if err != nil {
		t.Skipf("no PortAudio capture of the file microphone: %v", err)
	}
	var got []float32
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			c, err := src.Read(ctx)
			if err != nil {
				return
			}
			got = append(got, c.Samples...)
		}
	}()
	speech := testaudio.SpeakArgs(t, "The gutter on the east side is blocked, and the beam at grid C is deflected.", Voice...)
	t0 := time.Now()
	sp := <-m.Say("speech", speech)
	took := sp.End.Sub(t0)
	time.Sleep(time.Second)
	cancel()
	src.Close()
	<-readDone
	if err := <-micDone; err != nil {
		t.Fatal(err)
	}
	lasts := time.Duration(len(speech)) * time.Second / audio.SampleRate
	if took < lasts-time.Second || took > lasts+2*time.Second {
		t.Errorf("%v of speech was spoken in %v: not real time", lasts, took)
	}
	lag, corr := testaudio.FindSpeech(speech, got)
	t.Logf("%v of speech, captured %v; found at %d with correlation %.3f", lasts, time.Duration(len(got))*time.Second/audio.SampleRate, lag, corr)
	if corr < 0.95 {
		t.Errorf("the captured speech does not match what was spoken (correlation %.3f): audio lost or garbled on the way", corr)
	}
	_ = os.Remove(m.SpeakerFile)
}
