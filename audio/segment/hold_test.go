package segment

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
)

// tone is n samples of a 220 Hz tone at amplitude a (a = 0: silence).
func tone(n int, a float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = a * float32(math.Sin(2*math.Pi*220*float64(i)/audio.SampleRate))
	}
	return s
}

func TestHoldCutsLongPresses(t *testing.T) {
	const sr = audio.SampleRate
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		max     time.Duration
		search  time.Duration
		audio   []float32
		chunk   int
		wantCut []int  // expected cut offsets within the press (samples), before the release; nil: any
		firstIn [2]int // when set, the first cut lies in [lo, hi]
		cuts    int    // number of cuts before the release
	}{
		{
			name: "short press is one piece", max: 2 * time.Second, search: 500 * time.Millisecond,
			audio: tone(sr, 0.5), chunk: 1600, cuts: 0,
		},
		{
			// A pause 1.6-1.7 s lies in the last 0.5 s of a 2 s piece: the cut lands in it.
			name: "cut in the pause", max: 2 * time.Second, search: 500 * time.Millisecond,
			audio: slices.Concat(tone(sr*16/10, 0.5), tone(sr/10, 0), tone(sr*2, 0.5)), chunk: 1600,
			firstIn: [2]int{sr * 16 / 10, sr * 17 / 10}, cuts: 2,
		},
		{
			// No pause: pieces at the maximum, each cut at its quietest window.
			name: "steady speech, chunk larger than a window", max: time.Second, search: 0,
			audio: tone(sr*35/10, 0.5), chunk: 3000,
			wantCut: []int{sr, 2 * sr, 3 * sr}, cuts: 3,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHold(tc.max, tc.search)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Push(audio.Chunk{Samples: tone(1600, 0.5), Time: t0}); got != nil || h.HeldFor() != 0 {
				t.Fatalf("audio before the press was kept: %d pieces, held %s", len(got), h.HeldFor())
			}
			h.Press(t0)
			var pieces []Piece
			for off := 0; off < len(tc.audio); off += tc.chunk {
				end := min(off+tc.chunk, len(tc.audio))
				c := audio.Chunk{Samples: tc.audio[off:end], Offset: int64(off), Time: t0.Add(samplesDur(int64(off)))}
				pieces = append(pieces, h.Push(c)...)
				if len(h.buf) >= h.max {
					t.Fatalf("held %d samples after a push, maximum %d", len(h.buf), h.max)
				}
			}
			var cuts []int
			at := 0
			for _, p := range pieces {
				at += len(p.Samples)
				cuts = append(cuts, at)
			}
			if len(cuts) != tc.cuts || (tc.wantCut != nil && !slices.Equal(cuts, tc.wantCut)) {
				t.Errorf("cuts at %v, want %d cuts %v", cuts, tc.cuts, tc.wantCut)
			}
			if tc.firstIn != [2]int{} && (len(cuts) == 0 || cuts[0] < tc.firstIn[0] || cuts[0] > tc.firstIn[1]) {
				t.Errorf("first cut at %v, want it in the pause %v", cuts, tc.firstIn)
			}
			if h.HeldFor() != samplesDur(int64(len(tc.audio))) {
				t.Errorf("HeldFor %s, want %s", h.HeldFor(), samplesDur(int64(len(tc.audio))))
			}
			last, ok := h.Release()
			if !ok || !last.Last {
				t.Fatalf("release gave no last piece (ok %v)", ok)
			}
			pieces = append(pieces, last)
			var joined []float32
			for i, p := range pieces {
				if p.Index != i {
					t.Errorf("piece %d has index %d", i, p.Index)
				}
				if len(p.Samples) > h.max {
					t.Errorf("piece %d: %d samples, maximum %d", i, len(p.Samples), h.max)
				}
				if want := t0.Add(samplesDur(int64(len(joined)))); !p.Start.Equal(want) {
					t.Errorf("piece %d starts at %s, want %s", i, p.Start.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
				}
				joined = append(joined, p.Samples...)
			}
			if !slices.Equal(joined, tc.audio) {
				t.Errorf("pieces join to %d samples that differ from the %d held", len(joined), len(tc.audio))
			}
			if _, ok := h.Release(); ok || h.Held() {
				t.Error("a second release gave a piece")
			}
		})
	}
}

// A key stuck down for a long time keeps memory bounded by the maximum.
func TestHoldStuckKeyBoundedMemory(t *testing.T) {
	h, err := NewHold(2*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h.Press(time.Now())
	chunk := tone(1600, 0.3)
	n, capMinute := 0, 0
	for i := range 60 * 60 * 10 { // an hour of 100 ms chunks
		n += len(h.Push(audio.Chunk{Samples: chunk, Offset: int64(i * 1600)}))
		if i == 600 {
			capMinute = cap(h.buf)
		}
	}
	if c := cap(h.buf); c != capMinute || c > 2*(h.max+len(chunk)) {
		t.Errorf("buffer capacity %d after an hour (%d after a minute), want no growth and at most %d", c, capMinute, 2*(h.max+len(chunk)))
	}
	if n < 1800 {
		t.Errorf("%d pieces for an hour at a 2 s maximum, want at least 1800", n)
	}
	if h.HeldFor() != time.Hour {
		t.Errorf("HeldFor %s, want 1h", h.HeldFor())
	}
}

func TestNewHoldRejectsTinyMaximum(t *testing.T) {
	if _, err := NewHold(10*time.Millisecond, 0); err == nil {
		t.Fatal("a 10 ms maximum was accepted")
	}
}
