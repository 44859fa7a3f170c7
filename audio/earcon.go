package audio

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// tone is one segment of an earcon: freq 0 is a pause.
type tone struct {
	freq float64 // Hz
	ms   int
	amp  float64
	buzz bool // add odd harmonics (a rough, low "error" sound)
}

// earcons are told apart by pitch pattern, not by loudness: one blip for a
// stored note, rising for "I'm listening to your command", falling for "back
// to note-taking", low for trouble.
var earcons = map[string][]tone{
	"stored":      {{freq: 1320, ms: 80, amp: 0.25}},
	"feedback_on": {{freq: 587, ms: 110, amp: 0.4}, {freq: 880, ms: 140, amp: 0.4}},
	"listen_on":   {{freq: 784, ms: 110, amp: 0.4}, {freq: 523, ms: 140, amp: 0.4}},
	"offline":     {{freq: 330, ms: 110, amp: 0.45}, {ms: 70}, {freq: 330, ms: 110, amp: 0.45}},
	"error":       {{freq: 150, ms: 350, amp: 0.35, buzz: true}},
	// Two soft high blips: an answer is waiting (listen mode holds it).
	"reply_waiting": {{freq: 1047, ms: 70, amp: 0.3}, {ms: 60}, {freq: 1047, ms: 70, amp: 0.3}},
	// Soft, low and slow: the backend is still working on the question.
	"thinking": {{freq: 660, ms: 120, amp: 0.12}, {ms: 90}, {freq: 740, ms: 120, amp: 0.12}, {ms: 90}, {freq: 660, ms: 120, amp: 0.12}},
}

// EarconNames lists the names Earcon accepts.
func EarconNames() []string {
	names := make([]string, 0, len(earcons))
	for n := range earcons {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Earcon synthesizes the named short sound at 16 kHz: "stored",
// "feedback_on", "listen_on", "offline", "error", "reply_waiting" or
// "thinking".
func Earcon(name string) ([]float32, error) {
	tones, ok := earcons[name]
	if !ok {
		return nil, fmt.Errorf("unknown earcon %q (have %s)", name, strings.Join(EarconNames(), ", "))
	}
	var out []float32
	for _, t := range tones {
		out = append(out, synth(t)...)
	}
	return out, nil
}

// synth renders one tone with 8 ms raised-cosine fades so it does not click.
func synth(t tone) []float32 {
	n := t.ms * SampleRate / 1000
	out := make([]float32, n)
	if t.freq == 0 {
		return out
	}
	fade := min(8*SampleRate/1000, n/2)
	for i := range out {
		ph := 2 * math.Pi * t.freq * float64(i) / SampleRate
		v := math.Sin(ph)
		if t.buzz {
			v = 0.6*v + 0.25*math.Sin(3*ph) + 0.15*math.Sin(5*ph)
		}
		g := t.amp
		if i < fade {
			g *= 0.5 - 0.5*math.Cos(math.Pi*float64(i)/float64(fade))
		} else if j := n - 1 - i; j < fade {
			g *= 0.5 - 0.5*math.Cos(math.Pi*float64(j)/float64(fade))
		}
		out[i] = float32(g * v)
	}
	return out
}
