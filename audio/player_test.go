package audio_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
)

func peak(s []float32) float64 {
	p := 0.0
	for _, v := range s {
		p = max(p, math.Abs(float64(v)))
	}
	return p
}

func TestPlayerPlaysEarcons(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio playback")
	}
	for _, tc := range []struct {
		name           string
		rate, channels int
		volume         float64
	}{
		{"16k full volume", 16000, 2, 1},
		{"48k half volume", 48000, 2, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mic := testaudio.NewVirtualMicFormat(t, testaudio.Silence(100), tc.rate, tc.channels)
			p, err := audio.OpenPlayer(audio.PlayerOptions{Device: "default", Volume: tc.volume})
			if err != nil {
				t.Fatal(err)
			}
			names := []string{"feedback_on", "stored", "listen_on", "offline", "error"}
			for _, name := range names {
				s, err := audio.Earcon(name)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Play(s); err != nil {
					t.Fatal(err)
				}
			}
			closeStart := time.Now()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			t.Logf("Close took %v", time.Since(closeStart))
			if err := p.Play(testaudio.Silence(10)); !errors.Is(err, audio.ErrPlayerClosed) {
				t.Errorf("Play after Close: %v, want ErrPlayerClosed", err)
			}
			played := mic.Played(t)
			t.Logf("played %d samples", len(played))
			at := -1
			for _, name := range names {
				s, _ := audio.Earcon(name)
				lag, c := testaudio.Find(s, played)
				t.Logf("%s at %d, correlation %.3f", name, lag, c)
				if c < 0.9 {
					t.Errorf("%s not found in what was played (best correlation %.3f)", name, c)
				}
				if lag <= at {
					t.Errorf("%s played at %d, before the previous earcon at %d", name, lag, at)
				}
				at = lag
				if got, want := peak(played[lag:lag+len(s)]), peak(s)*tc.volume; math.Abs(got-want) > 0.1*want {
					t.Errorf("%s peak %.3f, want %.3f (volume %.1f)", name, got, want, tc.volume)
				}
			}
		})
	}
}

func TestOpenPlayerErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("real PortAudio playback")
	}
	testaudio.NewVirtualMic(t, nil)
	if _, err := audio.OpenPlayer(audio.PlayerOptions{Volume: 1.5}); err == nil {
		t.Error("volume 1.5 accepted")
	}
	if _, err := audio.OpenPlayer(audio.PlayerOptions{Device: "no-such-speaker", Volume: 1}); err == nil {
		t.Error("unknown device accepted")
	}
}
