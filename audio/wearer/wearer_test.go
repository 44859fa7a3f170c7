package wearer

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
)

// tone is n samples of a 300 Hz sine at level dB (RMS, dBFS).
func tone(n int, db float64) []float32 {
	a := math.Sqrt2 * math.Pow(10, db/20)
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(a * math.Sin(2*math.Pi*300*float64(i)/audio.SampleRate))
	}
	return s
}

func secs(f float64) int { return int(f * audio.SampleRate) }

func TestLevel(t *testing.T) {
	tests := []struct {
		name string
		s    []float32
		want float64
	}{
		{"steady tone", tone(secs(1), -20), -20},
		{"quiet tone", tone(secs(1), -45), -45},
		// The power mean: 0.2 s at -20 in 1 s sets it (-27.0).
		{"loud fifth", append(tone(secs(0.8), -50), tone(secs(0.2), -20)...), -26.97},
		// A peak of someone else that opened the frame gate, in the
		// silence the gate made around it, is low.
		{"peak among silence", append(tone(secs(0.1), -30), make([]float32, secs(0.9))...), -40},
		{"silence", make([]float32, secs(0.5)), silenceDBFS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Level(tc.s); math.Abs(got-tc.want) > 0.2 {
				t.Errorf("Level = %.2f, want %.2f", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // "" valid
	}{
		{"default", func(*Config) {}, ""},
		{"expected positive", func(c *Config) { c.ExpectedDBFS = 1 }, "wearer.expected_dbfs"},
		{"below zero", func(c *Config) { c.BelowDB = 0 }, "wearer.below_db"},
		{"word below huge", func(c *Config) { c.WordBelowDB = 41 }, "wearer.word_below_db"},
		{"frame below negative", func(c *Config) { c.FrameBelowDB = -1 }, "wearer.frame_below_db"},
		{"snr negative", func(c *Config) { c.MinSNRDB = -1 }, "wearer.min_snr_db"},
		{"drift huge", func(c *Config) { c.MaxDriftDB = 50 }, "wearer.max_drift_db"},
		{"lookahead long", func(c *Config) { c.Lookahead = 2 * time.Second }, "wearer.lookahead"},
		{"hold negative", func(c *Config) { c.Hold = -time.Second }, "wearer.hold"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid config refused: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Fatalf("err = %v, want one naming %s", err, tc.field)
			}
		})
	}
}

// feed pushes s through the tracker's gate in 20 ms chunks from offset off
// and returns the gated stream (flushed).
func feed(t *testing.T, tr *Tracker, s []float32, off int64) []float32 {
	t.Helper()
	t0 := time.Unix(1e9, 0)
	var out []float32
	next := off
	take := func(cs []audio.Chunk) {
		for _, c := range cs {
			if c.Offset != next {
				t.Fatalf("gated chunk at offset %d, want %d (contiguous)", c.Offset, next)
			}
			if want := t0.Add(time.Duration(c.Offset) * time.Second / audio.SampleRate); !c.Time.Equal(want) {
				t.Fatalf("gated chunk at offset %d has time %v, want %v", c.Offset, c.Time, want)
			}
			next += int64(len(c.Samples))
			out = append(out, c.Samples...)
		}
	}
	for i := 0; i < len(s); i += 333 { // not a multiple of the frame
		end := min(i+333, len(s))
		take(tr.Push(audio.Chunk{Samples: s[i:end], Offset: off + int64(i), Time: t0.Add(time.Duration(off+int64(i)) * time.Second / audio.SampleRate)}))
	}
	take(tr.Flush())
	if len(out) != len(s) {
		t.Fatalf("gate returned %d samples of %d", len(out), len(s))
	}
	return out
}

func TestGateKeepsTheWearer(t *testing.T) {
	cfg := DefaultConfig() // expected -27, frames 8 under it
	wearerSpeech := tone(secs(1), -26)
	tests := []struct {
		name     string
		enabled  bool
		in       []float32
		open     [][2]float64 // seconds where the output must equal the input
		shut     [][2]float64 // seconds where it must be silent
		openPart float64
	}{
		{"wearer alone passes whole", true, append(append(tone(secs(1), -70), wearerSpeech...), tone(secs(1), -70)...),
			[][2]float64{{0.85, 2.35}}, [][2]float64{{0, 0.75}, {2.5, 3}}, 0},
		{"others 15 dB under stay out", true, tone(secs(3), -42), nil, [][2]float64{{0, 3}}, 0},
		{"others with the wearer: only around the wearer", true,
			append(append(tone(secs(1), -42), wearerSpeech...), tone(secs(2), -42)...),
			[][2]float64{{0.85, 2.35}}, [][2]float64{{0, 0.75}, {2.5, 3}}, 0},
		{"off passes everything", false, tone(secs(3), -42), [][2]float64{{0, 3}}, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.Enabled = tc.enabled
			tr, err := NewTracker(c)
			if err != nil {
				t.Fatal(err)
			}
			out := feed(t, tr, tc.in, 16000*7)
			for _, r := range tc.open {
				for i := secs(r[0]); i < secs(r[1]); i++ {
					if out[i] != tc.in[i] {
						t.Fatalf("sample at %.3fs gated (%g, was %g); want it passed", float64(i)/audio.SampleRate, out[i], tc.in[i])
					}
				}
			}
			for _, r := range tc.shut {
				for i := secs(r[0]); i < secs(r[1]); i++ {
					if out[i] != 0 {
						t.Fatalf("sample at %.3fs passed (%g); want it silenced", float64(i)/audio.SampleRate, out[i])
					}
				}
			}
		})
	}
}

func TestDecide(t *testing.T) {
	at := time.Unix(1e9, 0)
	tests := []struct {
		name    string
		floor   float64 // level of the audio fed before (the floor)
		history []float64
		level   float64
		keep    bool
		why     string
	}{
		{"first utterance at the expected level", -70, nil, -27, true, ""},
		{"first utterance of someone 15 dB under", -70, nil, -42, false, "under the wearer"},
		{"9 dB under is kept", -70, nil, -36, true, ""},
		{"too close to the floor", -33, nil, -30, false, "over the noise floor"},
		// The wearer talks louder than expected: the level follows...
		{"follows a louder wearer", -70, []float64{-16, -16, -16, -16, -16}, -29, false, "under the wearer"},
		// ... but others' speech that slipped through cannot drag it down
		// further than max_drift_db under the expected level.
		{"not dragged down", -70, []float64{-33, -33, -33, -33, -33, -40, -40, -40, -40, -40, -40}, -48, false, "under the wearer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.MaxDriftDB = 10
			c.BelowDB = 10
			tr, err := NewTracker(c)
			if err != nil {
				t.Fatal(err)
			}
			feed(t, tr, tone(secs(5), tc.floor), 0)
			for _, h := range tc.history {
				if d := tr.Decide(tone(secs(1), h), at); !d.Keep {
					t.Fatalf("history utterance at %g dropped: %+v", h, d)
				}
			}
			d := tr.Decide(tone(secs(1), tc.level), at)
			if d.Keep != tc.keep || !strings.Contains(d.Why, tc.why) {
				t.Fatalf("Decide(%g) = %+v, want keep %v (%q)", tc.level, d, tc.keep, tc.why)
			}
			if d.Wearer < c.ExpectedDBFS-c.MaxDriftDB-0.01 {
				t.Fatalf("wearer level %.1f below expected - drift", d.Wearer)
			}
		})
	}
}

func TestKeepWords(t *testing.T) {
	// 1 s at the wearer's level, then 1 s of someone 15 dB under, then
	// silence: frames of 20 ms; words within 10 dB of -22 are kept.
	var frames []float64
	for i := 0; i < 50; i++ {
		frames = append(frames, -22)
	}
	for i := 0; i < 50; i++ {
		frames = append(frames, -37)
	}
	for i := 0; i < 50; i++ {
		frames = append(frames, silenceDBFS)
	}
	ms := func(a, b int) Span {
		return Span{time.Duration(a) * time.Millisecond, time.Duration(b) * time.Millisecond}
	}
	tests := []struct {
		name    string
		enabled bool
		span    Span
		keep    bool
	}{
		{"inside the wearer's speech", true, ms(200, 500), true},
		{"early by 300 ms (whisper's times run early)", true, ms(700, 800), true},
		{"in the other's speech", true, ms(1500, 1800), false},
		{"in silence", true, ms(2400, 2800), false},
		{"no times", true, Span{-1, -1}, true},
		{"gate off", false, ms(1500, 1800), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Enabled = tc.enabled
			if got := c.KeepWords(frames, []Span{tc.span}, -22)[0]; got != tc.keep {
				t.Fatalf("keep = %v, want %v", got, tc.keep)
			}
		})
	}
}

func TestSnapshot(t *testing.T) {
	tr, err := NewTracker(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := tone(secs(10), -50)
	for i := 0; i < secs(1); i += 97 {
		s[i] = 1 // clipped samples in the first second
	}
	feed(t, tr, s, 0)
	at := time.Unix(1e9, 0)
	tr.Decide(tone(secs(1), -30), at)
	tr.Decide(tone(secs(1), -28), at.Add(time.Second))
	tr.Decide(tone(secs(1), -32), at.Add(2*time.Second))
	got := tr.Snapshot()
	if math.Abs(got.Floor+50) > 0.5 || math.Abs(got.Heard+30) > 0.1 || got.Utterances != 3 || got.Seconds != 10 {
		t.Fatalf("snapshot %+v: want floor -50, heard -30 from 3 utterances over 10 s", got)
	}
	if got.Clipped < 0.09 || got.Clipped > 0.11 {
		t.Fatalf("clipped share %.3f, want 0.1 (1 s of 10)", got.Clipped)
	}
	// Two minutes later the utterances are out of the window.
	tr.Update(at.Add(FloorWindow + 3*time.Second))
	if got := tr.Snapshot(); got.Utterances != 0 || !math.IsNaN(got.Heard) {
		t.Fatalf("snapshot after the window %+v: want no utterances", got)
	}
}
