package wearer

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/agora/agorad/audio"
)

const (
	// FrameSamples is the frame of every level here: 20 ms at 16 kHz.
	FrameSamples = audio.SampleRate / 50
	// FloorPercentile of the last FloorWindow's frames is the noise floor.
	FloorPercentile = 10
	// FloorWindow is how much audio the floor is taken over.
	FloorWindow = 2 * time.Minute
	// recent is how many accepted utterances the wearer's level is the
	// median of (the seed fills the ring at the start).
	recent = 9
	// WordBefore and WordAfter widen a word's span: whisper's token times
	// (no alignment) are rough and run early (docs/wake.md), so the span
	// reaches further after the word than before it.
	WordBefore = 100 * time.Millisecond
	WordAfter  = 300 * time.Millisecond
	// clipLevel is the sample magnitude counted as clipped.
	clipLevel   = 0.99
	silenceDBFS = -120.0
)

// Config is the gate's configuration (configs' wearer section).
type Config struct {
	// Enabled: off keeps every utterance and word (levels are still tracked
	// for doctor).
	Enabled bool
	// ExpectedDBFS is the wearer's speech level expected at the headset
	// microphone (the utterance level, as Level measures it).
	ExpectedDBFS float64
	// BelowDB: an utterance this far under the wearer's level is not the
	// wearer's.
	BelowDB float64
	// WordBelowDB: a word whose span is this far under the reference is not
	// the wearer's.
	WordBelowDB float64
	// MinSNRDB: an utterance must be this far over the noise floor.
	MinSNRDB float64
	// MaxDriftDB bounds how far the tracked level leaves ExpectedDBFS.
	MaxDriftDB float64
	// FrameBelowDB: a 20 ms frame this far under the wearer's level does
	// not open the frame gate (gate.go).
	FrameBelowDB float64
	// Lookahead and Hold: the frame gate opens this long before a loud
	// frame (the stream is delayed by it) and stays open this long after.
	Lookahead, Hold time.Duration
}

// DefaultConfig is what configs/agorad.yaml ships (measured: bench/wearer).
func DefaultConfig() Config {
	return Config{Enabled: true, ExpectedDBFS: -27, BelowDB: 8, WordBelowDB: 14, MinSNRDB: 6, MaxDriftDB: 12,
		FrameBelowDB: 6, Lookahead: 200 * time.Millisecond, Hold: 400 * time.Millisecond}
}

// Validate names the bad field as the configuration spells it.
func (c Config) Validate() error {
	switch {
	case c.ExpectedDBFS < -80 || c.ExpectedDBFS > 0:
		return fmt.Errorf("wearer.expected_dbfs: %g not in -80..0", c.ExpectedDBFS)
	case c.BelowDB <= 0 || c.BelowDB > 40:
		return fmt.Errorf("wearer.below_db: %g not in 0..40 (exclusive of 0)", c.BelowDB)
	case c.WordBelowDB <= 0 || c.WordBelowDB > 40:
		return fmt.Errorf("wearer.word_below_db: %g not in 0..40 (exclusive of 0)", c.WordBelowDB)
	case c.MinSNRDB < 0 || c.MinSNRDB > 40:
		return fmt.Errorf("wearer.min_snr_db: %g not in 0..40", c.MinSNRDB)
	case c.MaxDriftDB < 0 || c.MaxDriftDB > 40:
		return fmt.Errorf("wearer.max_drift_db: %g not in 0..40", c.MaxDriftDB)
	case c.FrameBelowDB <= 0 || c.FrameBelowDB > 40:
		return fmt.Errorf("wearer.frame_below_db: %g not in 0..40 (exclusive of 0)", c.FrameBelowDB)
	case c.Lookahead < 0 || c.Lookahead > time.Second:
		return fmt.Errorf("wearer.lookahead: %s not in 0..1s", c.Lookahead)
	case c.Hold < 0 || c.Hold > 5*time.Second:
		return fmt.Errorf("wearer.hold: %s not in 0..5s", c.Hold)
	}
	return nil
}

// FrameLevels is the dBFS of each 20 ms frame of s (a last partial frame
// counts if it is at least half a frame).
func FrameLevels(s []float32) []float64 {
	out := make([]float64, 0, len(s)/FrameSamples+1)
	for i := 0; i < len(s); i += FrameSamples {
		end := min(i+FrameSamples, len(s))
		if end-i < FrameSamples/2 && i > 0 {
			break
		}
		out = append(out, dbfs(s[i:end]))
	}
	return out
}

// Level is the level of an utterance's speech s: its RMS (dBFS). After the
// frame gate, the stretches of others' talk between the wearer's words are
// silence, so the few loud peaks of someone else that opened the gate give
// a low level (their silenced surroundings count), while the wearer's
// continuous speech keeps about its active level.
func Level(s []float32) float64 { return dbfs(s) }

// meanDB is the level of the frames (power mean).
func meanDB(frames []float64) float64 {
	if len(frames) == 0 {
		return silenceDBFS
	}
	var p float64
	for _, f := range frames {
		p += math.Pow(10, f/10)
	}
	return max(silenceDBFS, 10*math.Log10(p/float64(len(frames))))
}

func dbfs(x []float32) float64 {
	var sum float64
	for _, v := range x {
		sum += float64(v) * float64(v)
	}
	if sum == 0 || len(x) == 0 {
		return silenceDBFS
	}
	return max(silenceDBFS, 10*math.Log10(sum/float64(len(x))))
}

// percentile of xs (nearest rank); silence when xs is empty. xs is not changed.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return silenceDBFS
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Decision is the gate's verdict on one utterance.
type Decision struct {
	Keep bool
	// Level is the utterance's active level; Wearer and Floor the tracked
	// levels it was compared with (dBFS).
	Level, Wearer, Floor float64
	// Ref is the level the utterance's words are checked against after
	// whisper: the lower of Level and Wearer, so a wearer a little quieter
	// than usual keeps their words.
	Ref float64
	// Why names the rule that dropped it ("" when kept).
	Why string
}

// Tracker follows the noise floor and the wearer's level and decides.
type Tracker struct {
	cfg Config

	frames  []float64 // ring of the last FloorWindow's frame levels
	clipped []bool    // ring: the frame held a clipped sample
	next    int
	full    bool
	floor   float64 // Floor, taken again once a second by the gate

	g gate

	levels  []float64 // ring of the last accepted utterances' levels (seeded)
	li      int
	heard   []heardLevel // accepted utterances of the last FloorWindow, for doctor
	dropped []heardLevel // and the dropped ones

	mu   sync.Mutex
	snap Snapshot
}

type heardLevel struct {
	at    time.Time
	level float64
}

// NewTracker returns a tracker; cfg must be valid.
func NewTracker(cfg Config) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := int(FloorWindow / (time.Second / 50))
	t := &Tracker{cfg: cfg, frames: make([]float64, n), clipped: make([]bool, n), levels: make([]float64, recent)}
	for i := range t.levels {
		t.levels[i] = cfg.ExpectedDBFS
	}
	t.snap = Snapshot{Floor: silenceDBFS, Wearer: cfg.ExpectedDBFS, Expected: cfg.ExpectedDBFS, Heard: math.NaN(), DroppedLevel: math.NaN()}
	t.floor = silenceDBFS
	t.initGate()
	return t, nil
}

// Config is the tracker's configuration.
func (t *Tracker) Config() Config { return t.cfg }

// observe records one frame's level for the floor and the clipping count.
func (t *Tracker) observe(f []float32, level float64) {
	clip := false
	for _, v := range f {
		if v >= clipLevel || v <= -clipLevel {
			clip = true
			break
		}
	}
	t.frames[t.next], t.clipped[t.next] = level, clip
	t.next++
	if t.next == len(t.frames) {
		t.next, t.full = 0, true
	}
}

// observed is the frames seen, oldest position irrelevant.
func (t *Tracker) observed() []float64 {
	if t.full {
		return t.frames
	}
	return t.frames[:t.next]
}

// Floor is the noise floor now (dBFS).
func (t *Tracker) Floor() float64 { return percentile(t.observed(), FloorPercentile) }

// Wearer is the wearer's tracked speech level now (dBFS).
func (t *Tracker) Wearer() float64 {
	m := percentile(t.levels, 50)
	return min(max(m, t.cfg.ExpectedDBFS-t.cfg.MaxDriftDB), t.cfg.ExpectedDBFS+t.cfg.MaxDriftDB)
}

// Judge is the verdict on an utterance's speech (padding excluded)
// without remembering it: the preview of an utterance (speculative whisper)
// is judged, the utterance itself decided.
func (t *Tracker) Judge(speech []float32) Decision {
	d := Decision{Keep: true, Level: Level(speech), Wearer: t.Wearer(), Floor: t.Floor()}
	d.Ref = min(d.Level, d.Wearer)
	if t.cfg.Enabled {
		switch {
		case d.Level < d.Wearer-t.cfg.BelowDB:
			d.Keep, d.Why = false, fmt.Sprintf("%.1f dB under the wearer's level", d.Wearer-d.Level)
		case d.Level < d.Floor+t.cfg.MinSNRDB:
			d.Keep, d.Why = false, fmt.Sprintf("only %.1f dB over the noise floor", d.Level-d.Floor)
		}
	}
	return d
}

// Decide judges an utterance heard at now; a kept one moves the wearer's
// level. With the gate off every utterance is kept (and counts as heard
// for doctor).
func (t *Tracker) Decide(speech []float32, now time.Time) Decision {
	d := t.Judge(speech)
	if d.Keep {
		t.levels[t.li] = d.Level
		t.li = (t.li + 1) % len(t.levels)
		t.heard = append(t.heard, heardLevel{now, d.Level})
	} else {
		t.dropped = append(t.dropped, heardLevel{now, d.Level})
	}
	t.publish(now)
	return d
}

// Update refreshes the snapshot doctor reads (call now and then when no
// utterance comes: the floor moves with the audio).
func (t *Tracker) Update(now time.Time) { t.publish(now) }

func (t *Tracker) publish(now time.Time) {
	t.heard = recentLevels(t.heard, now)
	t.dropped = recentLevels(t.dropped, now)
	s := Snapshot{Floor: t.Floor(), Wearer: t.Wearer(), Expected: t.cfg.ExpectedDBFS,
		Heard: median(t.heard), Utterances: len(t.heard), DroppedLevel: median(t.dropped), Dropped: len(t.dropped)}
	obs := t.observed()
	s.Seconds = float64(len(obs)) / 50
	n := 0
	for _, c := range t.clipped[:len(obs)] {
		if c {
			n++
		}
	}
	if len(obs) > 0 {
		s.Clipped = float64(n) / float64(len(obs))
	}
	t.mu.Lock()
	t.snap = s
	t.mu.Unlock()
}

// recentLevels drops the levels older than FloorWindow.
func recentLevels(hs []heardLevel, now time.Time) []heardLevel {
	cut := 0
	for cut < len(hs) && now.Sub(hs[cut].at) > FloorWindow {
		cut++
	}
	return hs[cut:]
}

// median of the levels, NaN when there are none.
func median(hs []heardLevel) float64 {
	if len(hs) == 0 {
		return math.NaN()
	}
	ls := make([]float64, len(hs))
	for i, h := range hs {
		ls[i] = h.level
	}
	return percentile(ls, 50)
}

// Snapshot is what the tracker saw over the last FloorWindow, for doctor.
type Snapshot struct {
	Floor    float64 // noise floor (dBFS)
	Wearer   float64 // tracked wearer level used by the gate (dBFS)
	Expected float64 // configured expected level (dBFS)
	// Heard is the median level of the utterances kept over the window
	// (NaN: none), Utterances their number.
	Heard      float64
	Utterances int
	// DroppedLevel and Dropped: the same for the utterances the gate
	// dropped (a wearer far from the microphone shows up here).
	DroppedLevel float64
	Dropped      int
	Seconds      float64 // audio the floor was taken over
	Clipped      float64 // share of frames holding a clipped sample
}

// Snapshot returns the latest snapshot; safe from any goroutine.
func (t *Tracker) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snap
}

// Span is a word's place in the utterance's audio (from its first sample);
// Start < 0 means whisper gave no time.
type Span struct{ Start, End time.Duration }

// KeepWords says which words are loud enough to be the wearer's: frames are
// FrameLevels of the audio whisper heard, ref the reference level the
// utterance was decided with. With the gate off all are kept.
func (c Config) KeepWords(frames []float64, spans []Span, ref float64) []bool {
	keep := make([]bool, len(spans))
	for i, sp := range spans {
		keep[i] = true
		if !c.Enabled || sp.Start < 0 || sp.End < sp.Start {
			continue
		}
		a := frameAt(sp.Start - WordBefore)
		b := frameAt(sp.End+WordAfter) + 1
		a, b = max(a, 0), min(b, len(frames))
		if a >= b {
			continue
		}
		if meanDB(frames[a:b]) < ref-c.WordBelowDB {
			keep[i] = false
		}
	}
	return keep
}

func frameAt(d time.Duration) int { return int(d / (time.Second / 50)) }
