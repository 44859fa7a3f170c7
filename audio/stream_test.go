package audio_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
)

// chunks delivers a signal in 50 ms pieces, like a synthesizer.
type chunks struct {
	s []float32
	n int
}

func (c *chunks) Read() ([]float32, error) {
	if len(c.s) == 0 {
		return nil, io.EOF
	}
	n := min(len(c.s), 800)
	out := c.s[:n]
	c.s = c.s[n:]
	c.n++
	return out, nil
}

func TestPlayStream(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio playback")
	}
	speech := testaudio.Speak(t, "en", "The crack in the beam is not structural.")
	for _, rate := range []int{16000, 48000} {
		mic := testaudio.NewVirtualMicFormat(t, testaudio.Silence(100), rate, 2)
		p, err := audio.OpenPlayer(audio.PlayerOptions{Device: "default", Volume: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		var first time.Time
		t0 := time.Now()
		done, err := p.PlayStream(context.Background(), &chunks{s: speech}, func(at time.Time) { first = at })
		if err != nil {
			t.Fatal(err)
		}
		earcon, _ := audio.Earcon("stored")
		if err := p.Play(earcon); err != nil { // queued behind the speech
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("stream: %v", err)
		}
		took := time.Since(t0)
		// Then a stream interrupted after 400 ms.
		ctx, cancel := context.WithCancel(context.Background())
		done2, _ := p.PlayStream(ctx, &chunks{s: speech}, nil)
		time.Sleep(400 * time.Millisecond)
		cancel()
		if err := <-done2; !errors.Is(err, context.Canceled) {
			t.Errorf("interrupted stream: %v", err)
		}
		p.Close()
		played := mic.Played(t)
		lag, c := testaudio.Find(speech, played)
		t.Logf("%d Hz: full stream at %d corr %.3f, first sample after %v, played in %v", rate, lag, c, first.Sub(t0), took)
		if c < 0.9 {
			t.Errorf("%d Hz: speech correlation %.3f", rate, c)
		}
		if first.IsZero() || first.Sub(t0) > 100*time.Millisecond {
			t.Errorf("started at %v", first.Sub(t0))
		}
		if d := time.Duration(len(speech)) * time.Second / 16000; took < d-200*time.Millisecond {
			t.Errorf("a %v stream played in %v: not paced", d, took)
		}
		elag, ec := testaudio.Find(earcon, played)
		if ec < 0.9 || elag < lag+len(speech)-400 {
			t.Errorf("earcon at %d (corr %.3f), speech ends at %d: earcon over speech", elag, ec, lag+len(speech))
		}
		// The interrupted one left only a prefix (~400 ms + lead), after the earcon.
		rest := played[elag+len(earcon):]
		n := 0
		for i, v := range rest {
			if v != 0 {
				n = i
			}
		}
		t.Logf("interrupted stream left %d samples (%.0f ms)", n, float64(n)/16)
		if n > 16000*800/1000 || n < 16000*200/1000 {
			t.Errorf("interrupted stream left %d samples, want 200-800 ms", n)
		}
	}
}
