package segment

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
)

const W = 512 // window of the fake VAD

// fakeVAD reads the speech probability back from the audio itself: a window
// of constant amplitude a in [0.05, 0.15] means p = (a-0.05)/0.1, anything
// else p = 0. The script is thus carried by the stream and the segmenter
// cannot tell it apart from a real VAD, whatever the chunking.
type fakeVAD struct {
	calls, windows, resets int
	fail                   bool
}

func (f *fakeVAD) WindowSize() int { return W }
func (f *fakeVAD) Reset()          { f.resets++ }
func (f *fakeVAD) Probs(s []float32) ([]float32, error) {
	if f.fail {
		return nil, errors.New("boom")
	}
	if len(s)%W != 0 {
		return nil, errors.New("not whole windows")
	}
	f.calls++
	out := make([]float32, len(s)/W)
	for i := range out {
		a := s[i*W]
		if a >= 0.05 && a <= 0.15 {
			out[i] = (a - 0.05) / 0.1
		}
	}
	f.windows += len(out)
	return out, nil
}

// part is a run of windows in a scripted stream.
type part struct {
	windows int
	amp     float32 // sample value of every sample
}

func speech(n int) part          { return part{n, 0.14} } // p = 0.9
func prob(n int, p float64) part { return part{n, float32(0.05 + p*0.1)} }
func quiet(n int) part           { return part{n, 0} }     // digital silence, gated
func noise(n int) part           { return part{n, 0.001} } // -60 dBFS, gated
func loud(n int) part            { return part{n, 0.04} }  // passes the gate, VAD says no

func script(parts ...part) []float32 {
	var s []float32
	for _, p := range parts {
		for range p.windows * W {
			s = append(s, p.amp)
		}
	}
	return s
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// run pushes samples in chunks of the given size starting at stream offset
// base, then flushes.
func run(t *testing.T, cfg Config, samples []float32, chunk int, base int64) ([]Utterance, *fakeVAD, Stats) {
	t.Helper()
	f := &fakeVAD{}
	s, err := New(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []Utterance
	for i := 0; i < len(samples); i += chunk {
		end := min(i+chunk, len(samples))
		off := base + int64(i)
		u, err := s.Push(audio.Chunk{Samples: samples[i:end], Offset: off, Time: t0.Add(samplesDur(off))})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u...)
	}
	out = append(out, s.Flush()...)
	return out, f, s.Stats()
}

type span struct{ start, end int64 } // speech bounds in windows

// hangover600 is DefaultConfig with the 600 ms hangover and 300 ms pre-roll
// the scripted window counts below are written for (19 windows of 32 ms; a
// longer pre-roll would reach back into the previous utterance's post-pad
// in "pause of hangover splits").
func hangover600() Config {
	c := DefaultConfig()
	c.MinSilence = 600 * time.Millisecond
	c.PreRoll = 300 * time.Millisecond
	return c
}

func TestSegmenter(t *testing.T) {
	cfg := hangover600()
	tests := []struct {
		name  string
		parts []part
		want  []span
		// stats checks
		dropped, splits int64
	}{
		{"one utterance", []part{quiet(20), speech(30), quiet(40)}, []span{{20, 50}}, 0, 0},
		{"noise around speech", []part{noise(40), speech(30), noise(40)}, []span{{40, 70}}, 0, 0},
		{"pause shorter than hangover is bridged", []part{quiet(20), speech(20), quiet(10), speech(20), quiet(40)}, []span{{20, 70}}, 0, 0},
		{"pause just under hangover is bridged", []part{quiet(20), speech(20), quiet(18), speech(20), quiet(40)}, []span{{20, 78}}, 0, 0},
		{"pause of hangover splits", []part{quiet(20), speech(20), quiet(19), speech(20), quiet(40)}, []span{{20, 40}, {59, 79}}, 0, 0},
		{"two sentences", []part{quiet(20), speech(40), quiet(60), speech(25), quiet(40)}, []span{{20, 60}, {120, 145}}, 0, 0},
		{"click dropped", []part{quiet(20), speech(3), quiet(40)}, nil, 1, 0},
		{"min speech is kept", []part{quiet(20), speech(8), quiet(40)}, []span{{20, 28}}, 0, 0},
		{"hysteresis keeps speech above offset", []part{quiet(20), speech(10), prob(30, 0.4), speech(5), quiet(40)}, []span{{20, 65}}, 0, 0},
		{"below onset never starts", []part{quiet(20), prob(40, 0.45), quiet(40)}, nil, 0, 0},
		{"dip below offset ends after hangover", []part{quiet(20), speech(10), prob(30, 0.3), quiet(20)}, []span{{20, 30}}, 0, 0},
		{"loud non-speech", []part{loud(50), speech(20), loud(50)}, []span{{50, 70}}, 0, 0},
		{"flush ends speech at end of stream", []part{quiet(20), speech(30)}, []span{{20, 50}}, 0, 0},
		{"speech from the first sample", []part{speech(30), quiet(40)}, []span{{0, 30}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := script(tt.parts...)
			got, _, st := run(t, cfg, samples, 1000, 0)
			var spans []span
			for _, u := range got {
				spans = append(spans, span{u.SpeechStart / W, u.SpeechEnd / W})
				if u.SpeechStart%W != 0 || u.SpeechEnd%W != 0 {
					t.Errorf("speech bounds %d..%d not on window edges", u.SpeechStart, u.SpeechEnd)
				}
				// Padding: pre-roll before, post-pad after, as far as the stream has audio.
				wantPad := max(0, u.SpeechStart-int64(cfg.PreRoll.Seconds()*16000))
				if u.PadStart != wantPad {
					t.Errorf("PadStart %d, want %d (%v pre-roll)", u.PadStart, wantPad, cfg.PreRoll)
				}
				wantEnd := min(u.SpeechEnd+4000, int64(len(samples)))
				if got := u.PadStart + int64(len(u.Samples)); got != wantEnd {
					t.Errorf("audio ends at %d, want %d (250 ms post-pad)", got, wantEnd)
				}
				// Samples are the stream's samples at those offsets.
				for i, v := range u.Samples {
					if v != samples[u.PadStart+int64(i)] {
						t.Fatalf("sample %d of utterance differs from stream offset %d", i, u.PadStart+int64(i))
					}
				}
				if want := t0.Add(samplesDur(u.SpeechStart)); !u.Start.Equal(want) {
					t.Errorf("Start %v, want %v", u.Start, want)
				}
				if u.Split {
					t.Error("Split set without a max-length cut")
				}
			}
			if !reflect.DeepEqual(spans, tt.want) {
				t.Errorf("speech spans (windows) %v, want %v", spans, tt.want)
			}
			if st.Dropped != tt.dropped || st.Splits != tt.splits || st.Utterances != int64(len(tt.want)) {
				t.Errorf("stats %+v, want dropped %d splits %d utterances %d", st, tt.dropped, tt.splits, len(tt.want))
			}
		})
	}
}

// TestChunkSizeIndependence: the same stream cut into any chunk sizes, at
// any starting offset, gives the same utterances.
func TestChunkSizeIndependence(t *testing.T) {
	samples := script(noise(30), speech(25), prob(5, 0.3), speech(10), noise(40), speech(3), noise(40), speech(50), loud(30), quiet(100), speech(20))
	ref, _, refStats := run(t, DefaultConfig(), samples, W, 0)
	if len(ref) != 3 {
		t.Fatalf("reference run gave %d utterances, want 3", len(ref))
	}
	for _, chunk := range []int{1, 7, 160, 511, 513, 1600, 4096, 16000, len(samples)} {
		got, _, st := run(t, DefaultConfig(), samples, chunk, 0)
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("chunk %d: utterances differ from 512-sample chunks", chunk)
		}
		if st != refStats {
			t.Errorf("chunk %d: stats %+v, want %+v", chunk, st, refStats)
		}
	}
	// A stream that starts at offset 1e6 gives the same utterances shifted.
	const base = 1_000_000
	got, _, _ := run(t, DefaultConfig(), samples, 777, base)
	for i := range got {
		if got[i].SpeechStart-base != ref[i].SpeechStart || got[i].SpeechEnd-base != ref[i].SpeechEnd || !reflect.DeepEqual(got[i].Samples, ref[i].Samples) {
			t.Errorf("utterance %d at base %d: %d..%d, want %d..%d shifted", i, base, got[i].SpeechStart, got[i].SpeechEnd, ref[i].SpeechStart, ref[i].SpeechEnd)
		}
	}
}

// TestGateSkipsVAD: silence and low noise never reach the VAD; the VAD is
// reset once per long gated stretch.
func TestGateSkipsVAD(t *testing.T) {
	tests := []struct {
		name       string
		parts      []part
		maxProbed  int
		wantResets int // from gated stretches, not counting Flush
	}{
		{"60 s digital silence", []part{quiet(60 * 16000 / W)}, 0, 1},
		{"60 s low noise", []part{noise(60 * 16000 / W)}, 0, 1},
		// Speech: the VAD sees the speech, the hangover and a 4-window warm-up.
		{"speech in silence", []part{quiet(100), speech(20), quiet(100)}, 20 + 19 + 4, 2},
		{"two bursts", []part{quiet(100), speech(20), quiet(100), speech(20), quiet(100)}, 2 * (20 + 19 + 4), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, f, st := run(t, hangover600(), script(tt.parts...), 1600, 0)
			if f.windows > tt.maxProbed || st.Probed != int64(f.windows) {
				t.Errorf("VAD scored %d windows (stats say %d), want at most %d", f.windows, st.Probed, tt.maxProbed)
			}
			if st.Gated+st.Probed < st.Windows {
				t.Errorf("windows %d > gated %d + probed %d", st.Windows, st.Gated, st.Probed)
			}
			if resets := f.resets - 1; resets != tt.wantResets {
				t.Errorf("VAD reset %d times on gated stretches, want %d", resets, tt.wantResets)
			}
		})
	}
}

// TestWarmupFindsEarlyOnset: a soft onset below the energy gate is still
// found once the gate opens, because the warm-up windows are scored too.
func TestWarmupFindsEarlyOnset(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GateFloorDBFS = -16.8 // only the loudest speech opens the gate (p=0.9 is -17.1 dBFS, p=1 is -16.5)
	samples := script(quiet(40), prob(3, 0.9), prob(20, 1), quiet(40))
	got, _, _ := run(t, cfg, samples, 1000, 0)
	if len(got) != 1 || got[0].SpeechStart != 40*W {
		t.Fatalf("got %d utterances (first at %v), want one starting at window 40", len(got), got)
	}
}

// TestMaxLengthSplit: speech longer than MaxUtterance is split at the
// quietest window of the last SplitSearch, and no piece exceeds the cap.
func TestMaxLengthSplit(t *testing.T) {
	cfg := DefaultConfig()
	maxW := int(cfg.MaxUtterance / (32 * time.Millisecond)) // 937 windows
	tests := []struct {
		name    string
		parts   []part
		cutAt   []int64 // expected cut positions in windows
		pieces  int
		lastEnd int64
	}{
		// A dip 2 s before the cap: the cut goes there.
		{"cut at dip", []part{quiet(10), speech(maxW - 70), prob(2, 0.2), speech(600), quiet(40)}, []int64{10 + int64(maxW) - 70}, 2, 10 + int64(maxW) - 70 + 2 + 600},
		// A dip too early (outside SplitSearch) is ignored; a shallower one inside wins.
		{"dip outside search ignored", []part{quiet(10), speech(400), prob(2, 0.1), speech(maxW - 500), prob(1, 0.4), speech(300), quiet(40)}, []int64{10 + 400 + 2 + int64(maxW) - 500}, 2, 10 + 400 + 2 + int64(maxW) - 500 + 1 + 300},
		// 70 s of uniform speech: cut twice, pieces back to back.
		{"long monologue", []part{quiet(10), speech(70 * 16000 / W), quiet(40)}, nil, 3, 10 + 70*16000/W},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := script(tt.parts...)
			got, _, st := run(t, cfg, samples, 3000, 0)
			if len(got) != tt.pieces {
				t.Fatalf("%d pieces, want %d", len(got), tt.pieces)
			}
			for i, u := range got {
				if d := samplesDur(int64(len(u.Samples))); d > cfg.MaxUtterance {
					t.Errorf("piece %d is %v, over MaxUtterance", i, d)
				}
				if !u.Split {
					t.Errorf("piece %d not marked Split", i)
				}
				if i > 0 {
					prev := got[i-1]
					if cut := prev.PadStart + int64(len(prev.Samples)); u.PadStart != cut || u.SpeechStart != cut || prev.SpeechEnd != cut {
						t.Errorf("piece %d starts at %d/%d, previous ends at %d (speech %d): pieces must meet at the cut", i, u.PadStart, u.SpeechStart, cut, prev.SpeechEnd)
					}
					if i-1 < len(tt.cutAt) && u.SpeechStart != tt.cutAt[i-1]*W {
						t.Errorf("cut %d at window %d, want %d", i, u.SpeechStart/W, tt.cutAt[i-1])
					}
				}
			}
			if last := got[len(got)-1]; last.SpeechEnd != tt.lastEnd*W {
				t.Errorf("last piece speech ends at window %d, want %d", last.SpeechEnd/W, tt.lastEnd)
			}
			if st.Splits != int64(tt.pieces-1) {
				t.Errorf("Splits = %d, want %d", st.Splits, tt.pieces-1)
			}
		})
	}
}

func TestFlushMidSpeechKeepsPartialWindow(t *testing.T) {
	f := &fakeVAD{}
	s, err := New(f, hangover600())
	if err != nil {
		t.Fatal(err)
	}
	samples := append(script(quiet(20), speech(20)), make([]float32, 100)...)
	if u, err := s.Push(audio.Chunk{Samples: samples, Time: t0}); err != nil || len(u) != 0 {
		t.Fatalf("Push: %v, %v; want no utterance yet", u, err)
	}
	u := s.Flush()
	if len(u) != 1 || u[0].SpeechEnd != 40*W || u[0].PadStart+int64(len(u[0].Samples)) != int64(len(samples)) {
		t.Fatalf("Flush gave %+v, want one utterance ending at window 40 with the trailing 100 samples", u)
	}
	// The stream continues after a push-to-talk release: offsets carry on.
	more := script(quiet(10), speech(20), quiet(30))
	u2, err := s.Push(audio.Chunk{Samples: more, Offset: int64(len(samples)), Time: t0.Add(samplesDur(int64(len(samples))))})
	if err != nil || len(u2) != 1 {
		t.Fatalf("after Flush: %v, %v; want one utterance", u2, err)
	}
	// Windows realign on the new stream position.
	if want := int64(len(samples)) + 10*W; u2[0].SpeechStart != want {
		t.Errorf("SpeechStart %d, want %d", u2[0].SpeechStart, want)
	}
	if len(s.Flush()) != 0 {
		t.Error("second Flush emitted again")
	}
}

func TestOffsets(t *testing.T) {
	f := &fakeVAD{}
	s, _ := New(f, DefaultConfig())
	a := script(quiet(10), speech(20))
	if _, err := s.Push(audio.Chunk{Samples: a, Offset: 0, Time: t0}); err != nil {
		t.Fatal(err)
	}
	// Backwards: refused, naming the offsets, nothing lost.
	_, err := s.Push(audio.Chunk{Samples: a, Offset: 100, Time: t0})
	if err == nil || !strings.Contains(err.Error(), "offset 100") {
		t.Fatalf("overlapping chunk: err = %v, want one naming offset 100", err)
	}
	// Forward gap: the utterance in progress ends, the stream restarts there.
	u, err := s.Push(audio.Chunk{Samples: script(quiet(40)), Offset: 50 * W, Time: t0.Add(time.Hour)})
	if err != nil || len(u) != 1 || u[0].SpeechStart != 10*W || u[0].SpeechEnd != 30*W {
		t.Fatalf("gap: %+v, %v; want the utterance at windows 10..30", u, err)
	}
	if st := s.Stats(); st.Gaps != 1 {
		t.Errorf("Gaps = %d, want 1", st.Gaps)
	}
	if u, err := s.Push(audio.Chunk{Samples: nil, Offset: 5}); err != nil || u != nil {
		t.Errorf("empty chunk: %v, %v", u, err)
	}
}

func TestProberError(t *testing.T) {
	f := &fakeVAD{}
	s, _ := New(f, DefaultConfig())
	if _, err := s.Push(audio.Chunk{Samples: script(quiet(10), speech(20)), Time: t0}); err != nil {
		t.Fatal(err)
	}
	f.fail = true
	_, err := s.Push(audio.Chunk{Samples: script(speech(2)), Offset: 30 * W, Time: t0})
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("err = %v, want the VAD error with the stream offset", err)
	}
	f.fail = false
	u, err := s.Push(audio.Chunk{Samples: script(quiet(40)), Offset: 32 * W, Time: t0})
	if err != nil || len(u) != 1 || u[0].SpeechStart != 10*W {
		t.Fatalf("after a VAD error: %+v, %v; want the utterance in progress kept", u, err)
	}
	if got, want := int64(len(u[0].Samples)), u[0].SpeechEnd+4000-u[0].PadStart; got != want {
		t.Errorf("utterance has %d samples, want %d", got, want)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(nil, DefaultConfig()); err == nil {
		t.Error("nil prober accepted")
	}
	bad := DefaultConfig()
	bad.OnsetThreshold = 2
	if _, err := New(&fakeVAD{}, bad); err == nil || !strings.Contains(err.Error(), "OnsetThreshold") {
		t.Errorf("bad config: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		field string
		edit  func(*Config)
	}{
		{"", func(*Config) {}},
		{"OnsetThreshold", func(c *Config) { c.OnsetThreshold = 0 }},
		{"OnsetThreshold", func(c *Config) { c.OnsetThreshold = math.NaN() }},
		{"OffsetThreshold", func(c *Config) { c.OffsetThreshold = 1.2 }},
		{"OffsetThreshold", func(c *Config) { c.OffsetThreshold = 0.6 }},
		{"MinSpeech", func(c *Config) { c.MinSpeech = -time.Second }},
		{"MinSilence", func(c *Config) { c.MinSilence = 0 }},
		{"PreRoll", func(c *Config) { c.PreRoll = -1 }},
		{"PostPad", func(c *Config) { c.PostPad = -1 }},
		{"PostPad", func(c *Config) { c.PostPad = c.MinSilence + time.Millisecond }},
		{"MaxUtterance", func(c *Config) { c.MaxUtterance = 500 * time.Millisecond }},
		{"MaxUtterance", func(c *Config) { c.MaxUtterance = 3 * time.Second }},
		{"SplitSearch", func(c *Config) { c.SplitSearch = 0 }},
		{"GateFloorDBFS", func(c *Config) { c.GateFloorDBFS = 3 }},
		{"GateMarginDB", func(c *Config) { c.GateMarginDB = -1 }},
		{"GateResetAfter", func(c *Config) { c.GateResetAfter = -1 }},
		{"Warmup", func(c *Config) { c.Warmup = -1 }},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.edit(&c)
		err := c.Validate()
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("DefaultConfig invalid: %v", err)
		case tt.field != "" && (err == nil || !strings.Contains(err.Error(), tt.field)):
			t.Errorf("%s: err = %v, want one naming %s", tt.field, err, tt.field)
		}
	}
}

// TestRandomStreamsInvariants: random scripts, random chunking, random
// configs — utterances come in order, never overlap, respect the length cap,
// carry exactly the stream's samples, and do not depend on the chunking.
func TestRandomStreamsInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []func(int) part{speech, quiet, noise, loud, func(n int) part { return prob(n, rng.Float64()) }}
	for iter := range 40 {
		var parts []part
		for range 5 + rng.IntN(40) {
			parts = append(parts, kinds[rng.IntN(len(kinds))](1+rng.IntN(300)))
		}
		samples := script(parts...)
		cfg := DefaultConfig()
		cfg.MaxUtterance = time.Duration(4+rng.IntN(10)) * time.Second
		cfg.MinSilence = time.Duration(100+rng.IntN(900)) * time.Millisecond
		cfg.PostPad = min(cfg.PostPad, cfg.MinSilence)
		ref, _, _ := run(t, cfg, samples, W, 0)
		got, _, _ := run(t, cfg, samples, 1+rng.IntN(20000), 0)
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("iteration %d: chunking changed the result", iter)
		}
		var prevEnd int64
		for i, u := range got {
			if !(u.PadStart <= u.SpeechStart && u.SpeechStart < u.SpeechEnd && u.SpeechStart >= prevEnd) {
				t.Fatalf("iteration %d utterance %d: pad %d speech %d..%d after previous speech end %d", iter, i, u.PadStart, u.SpeechStart, u.SpeechEnd, prevEnd)
			}
			if end := u.PadStart + int64(len(u.Samples)); end < u.SpeechEnd || end > int64(len(samples)) {
				t.Fatalf("iteration %d utterance %d: audio ends at %d, speech at %d", iter, i, end, u.SpeechEnd)
			}
			if d := samplesDur(int64(len(u.Samples))); d > cfg.MaxUtterance {
				t.Fatalf("iteration %d utterance %d: %v long, cap %v", iter, i, d, cfg.MaxUtterance)
			}
			if !u.Split && u.SpeechEnd-u.SpeechStart < 4000 {
				t.Fatalf("iteration %d utterance %d: %d samples of speech, under MinSpeech", iter, i, u.SpeechEnd-u.SpeechStart)
			}
			if !reflect.DeepEqual(u.Samples, samples[u.PadStart:u.PadStart+int64(len(u.Samples))]) {
				t.Fatalf("iteration %d utterance %d: samples differ from the stream", iter, i)
			}
			prevEnd = u.SpeechEnd
		}
	}
}
