// Package segment turns a continuous 16 kHz mono stream into utterances:
// an energy gate keeps silence away from the voice activity detector (so
// silence costs almost no CPU), VAD probabilities with hysteresis decide
// where speech starts and ends, short pauses are bridged (hangover), clicks
// are dropped, pre-roll and post-padding keep soft edges, and speech longer
// than whisper's window is split at the quietest moment near the cap.
// During the silence that may end a turn, Tentative previews the utterance
// exactly as it will be returned if the silence lasts (tentative.go).
package segment

import (
	"fmt"
	"math"
	"time"

	"github.com/agora/agorad/audio"
)

// Prober scores speech probability per fixed-size window, keeping state
// between calls (a streaming VAD such as audio/vad.Detector).
type Prober interface {
	WindowSize() int
	Probs(samples []float32) ([]float32, error)
	Reset()
}

// Utterance is one stretch of speech with its padding.
type Utterance struct {
	// Samples is the audio from PadStart: pre-roll, speech, post-padding.
	Samples []float32
	// SpeechStart and SpeechEnd are the stream offsets (16 kHz samples) of
	// the speech itself, padding excluded; SpeechEnd is exclusive.
	SpeechStart, SpeechEnd int64
	// PadStart is the stream offset of Samples[0].
	PadStart int64
	// Start is the wall clock of SpeechStart.
	Start time.Time
	// Split is set when the maximum length cut the speech at this
	// utterance's end or start: it continues in the next one or came from
	// the previous one.
	Split bool
}

// Stats counts what the segmenter did, for tests and metrics.
type Stats struct {
	Windows    int64 // windows seen
	Gated      int64 // windows the energy gate kept from the VAD when they arrived
	Probed     int64 // windows scored by the VAD (warm-up windows scored when the gate opens count in both)
	Utterances int64 // utterances emitted (split pieces count one each)
	Splits     int64 // cuts made by the maximum length
	Dropped    int64 // candidate utterances shorter than MinSpeech
	Resets     int64 // VAD state resets after long gated stretches or Flush
	Gaps       int64 // chunks that did not continue the stream's offsets
	// NoiseFloorDBFS is the adaptive noise floor estimate.
	NoiseFloorDBFS float64
}

// window is one VAD window of audio with what is known about it.
type window struct {
	off    int64
	t      time.Time
	s      []float32
	db     float64
	p      float32
	probed bool
}

func (w *window) end() int64 { return w.off + int64(len(w.s)) }

const (
	silenceDBFS = -120.0 // energy of digital silence, to keep the math finite
	floorFall   = 0.3    // fraction of the distance the floor follows a quieter window
	floorRise   = 0.05   // dB per window the floor climbs towards louder idle audio
)

// Segmenter is the state machine. It is not safe for concurrent use: one
// goroutine owns a stream.
type Segmenter struct {
	p   Prober
	cfg Config
	w   int64 // window size in samples

	// Config in samples.
	minSpeech, minSilence, preRoll, postPad, maxLen, splitSearch int64
	resetWindows, warmupWindows, histCap                         int

	started  bool
	pend     []float32 // samples not yet making a full window
	pendOff  int64     // stream offset of pend[0] (= next expected offset - len(pend))
	pendTime time.Time // wall clock of pend[0]

	hist     []*window // recent windows outside any utterance, oldest first
	gatedRun int
	floor    float64

	inSpeech    bool
	utt         []*window // windows of the current utterance, from the one holding padStart
	padStart    int64
	speechStart int64
	lastSpeech  int64 // end of the last window at or above OffsetThreshold
	split       bool  // the current utterance continues a split one

	stats Stats
}

// New returns a segmenter over p. p's WindowSize must be positive.
func New(p Prober, cfg Config) (*Segmenter, error) {
	if p == nil {
		return nil, fmt.Errorf("segment: no VAD prober")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := int64(p.WindowSize())
	if w <= 0 {
		return nil, fmt.Errorf("segment: VAD window size %d is not positive", w)
	}
	samples := func(d time.Duration) int64 { return int64(d) * audio.SampleRate / int64(time.Second) }
	windows := func(d time.Duration) int { return int((samples(d) + w - 1) / w) }
	s := &Segmenter{
		p:             p,
		cfg:           cfg,
		w:             w,
		minSpeech:     samples(cfg.MinSpeech),
		minSilence:    samples(cfg.MinSilence),
		preRoll:       samples(cfg.PreRoll),
		postPad:       samples(cfg.PostPad),
		maxLen:        samples(cfg.MaxUtterance),
		splitSearch:   samples(cfg.SplitSearch),
		resetWindows:  windows(cfg.GateResetAfter),
		warmupWindows: windows(cfg.Warmup),
	}
	// The floor starts where it leaves the absolute gate in charge and
	// climbs from there: a loud start (a word, a bang) must not shut the
	// gate on the speech that follows.
	s.floor = cfg.GateFloorDBFS - cfg.GateMarginDB
	s.histCap = max(windows(cfg.PreRoll), s.warmupWindows) + 1
	return s, nil
}

// Push feeds the next chunk of the stream and returns the utterances it
// completed. Chunks may have any size; the result does not depend on how
// the stream is cut. A chunk that skips ahead ends the current utterance
// (as Flush) and restarts there; one that goes back is refused. When the
// VAD fails the chunk is still accepted (its audio is kept; unscored windows
// count as silence) and the error comes back with the utterances completed.
func (s *Segmenter) Push(c audio.Chunk) ([]Utterance, error) {
	if len(c.Samples) == 0 {
		return nil, nil
	}
	var out []Utterance
	if !s.started {
		s.started = true
		s.pendOff, s.pendTime = c.Offset, c.Time
	}
	next := s.pendOff + int64(len(s.pend))
	switch {
	case c.Offset < next:
		return nil, fmt.Errorf("segment: chunk at stream offset %d repeats audio already segmented (next offset is %d)", c.Offset, next)
	case c.Offset > next:
		s.stats.Gaps++
		out = s.Flush()
		s.pendOff, s.pendTime = c.Offset, c.Time
	}
	if len(s.pend) == 0 {
		s.pendTime = c.Time
	}
	s.pend = append(s.pend, c.Samples...)

	var err error
	n := 0
	for int64(len(s.pend)-n) >= s.w && err == nil {
		win := &window{off: s.pendOff, t: s.pendTime, s: append([]float32(nil), s.pend[n:n+int(s.w)]...)}
		n += int(s.w)
		s.pendOff += s.w
		s.pendTime = s.pendTime.Add(samplesDur(s.w))
		var done []Utterance
		done, err = s.process(win)
		out = append(out, done...)
	}
	s.pend = append(s.pend[:0], s.pend[n:]...)
	if err != nil {
		return out, err
	}
	return out, nil
}

// Flush ends the stream: an utterance in progress is completed with the
// audio there is, and the VAD starts fresh for whatever comes next (end of
// file, push-to-talk release).
func (s *Segmenter) Flush() []Utterance {
	var out []Utterance
	if s.inSpeech {
		if len(s.pend) > 0 {
			// The partial last window can only be post-padding.
			s.utt = append(s.utt, &window{off: s.pendOff, t: s.pendTime, s: append([]float32(nil), s.pend...)})
		}
		out = s.finish()
	}
	s.pendOff += int64(len(s.pend))
	s.pendTime = s.pendTime.Add(samplesDur(int64(len(s.pend))))
	s.pend = s.pend[:0]
	s.hist = nil
	s.gatedRun = 0
	s.p.Reset()
	s.stats.Resets++
	return out
}

// Stats returns the counters so far.
func (s *Segmenter) Stats() Stats {
	st := s.stats
	st.NoiseFloorDBFS = s.floor
	return st
}

// process runs one full window through the gate, the VAD and the state machine.
func (s *Segmenter) process(win *window) ([]Utterance, error) {
	s.stats.Windows++
	win.db = dbfs(win.s)
	if s.inSpeech {
		if err := s.probe([]*window{win}); err != nil {
			// Keep the audio: the window joins the utterance as silence.
			return s.advance(win), err
		}
		return s.advance(win), nil
	}
	if win.db < s.gate() {
		s.stats.Gated++
		s.gatedRun++
		if s.resetWindows > 0 && s.gatedRun == s.resetWindows {
			s.p.Reset()
			s.stats.Resets++
		}
		s.updateFloor(win.db)
		s.pushHist(win)
		return nil, nil
	}
	// The gate opened: score the last few gated windows too, so the VAD has
	// context and the onset can be placed where speech really began.
	k := 0
	for k < s.warmupWindows && k < len(s.hist) && !s.hist[len(s.hist)-1-k].probed {
		k++
	}
	batch := append(append([]*window(nil), s.hist[len(s.hist)-k:]...), win)
	s.hist = s.hist[:len(s.hist)-k]
	s.gatedRun = 0
	err := s.probe(batch)
	var out []Utterance
	for _, x := range batch {
		out = append(out, s.advance(x)...)
	}
	return out, err
}

// probe scores ws with one VAD call. On failure the windows count as silence.
func (s *Segmenter) probe(ws []*window) error {
	buf := make([]float32, 0, len(ws)*int(s.w))
	for _, x := range ws {
		buf = append(buf, x.s...)
	}
	p, err := s.p.Probs(buf)
	if err == nil && len(p) != len(ws) {
		err = fmt.Errorf("VAD returned %d probabilities for %d windows", len(p), len(ws))
	}
	if err != nil {
		return fmt.Errorf("segment: score speech at stream offset %d: %w", ws[0].off, err)
	}
	for i, x := range ws {
		x.p, x.probed = p[i], true
	}
	s.stats.Probed += int64(len(ws))
	return nil
}

// advance moves the state machine over one window in stream order.
func (s *Segmenter) advance(x *window) []Utterance {
	if !s.inSpeech {
		if x.probed && float64(x.p) >= s.cfg.OnsetThreshold {
			s.startSpeech(x)
			return nil
		}
		if float64(x.p) < s.cfg.OffsetThreshold {
			s.updateFloor(x.db)
		}
		s.pushHist(x)
		return nil
	}
	s.utt = append(s.utt, x)
	if x.probed && float64(x.p) >= s.cfg.OffsetThreshold {
		s.lastSpeech = x.end()
	}
	end := x.end()
	switch {
	case end-s.lastSpeech >= s.minSilence:
		return s.finish()
	case end-s.padStart+s.postPad > s.maxLen:
		return s.cut()
	}
	return nil
}

// startSpeech opens an utterance at x, taking pre-roll from the history.
func (s *Segmenter) startSpeech(x *window) {
	s.inSpeech = true
	s.split = false
	s.speechStart = x.off
	s.lastSpeech = x.end()
	s.padStart = x.off
	s.utt = s.utt[:0]
	for _, h := range s.hist {
		if h.end() > x.off-s.preRoll {
			s.utt = append(s.utt, h)
			s.padStart = min(s.padStart, max(h.off, x.off-s.preRoll))
		}
	}
	s.utt = append(s.utt, x)
	s.hist = nil
}

// finish ends the current utterance at the last speech window.
func (s *Segmenter) finish() []Utterance {
	s.inSpeech = false
	speechEnd := s.lastSpeech
	utt := s.utt
	s.utt = nil
	// Audio after the post-padding stays as pre-roll for the next onset.
	for _, x := range utt {
		if x.off >= speechEnd+s.postPad && len(x.s) == int(s.w) {
			s.pushHist(x)
		}
	}
	if speechEnd-s.speechStart < s.minSpeech {
		s.stats.Dropped++
		return nil
	}
	return []Utterance{s.emit(utt, s.padStart, speechEnd, speechEnd+s.postPad, s.split)}
}

// cut splits an utterance that reached the maximum length at the quietest
// window of the last SplitSearch, so the cut falls in a pause, not a word.
func (s *Segmenter) cut() []Utterance {
	end := s.utt[len(s.utt)-1].end()
	best := -1
	for i, x := range s.utt {
		if x.off < end-s.splitSearch || x.off < s.speechStart+s.minSpeech {
			continue
		}
		if best < 0 || quieter(x, s.utt[best]) {
			best = i
		}
	}
	if best <= 0 {
		best = len(s.utt) - 1
	}
	c := s.utt[best].off
	u := s.emit(s.utt[:best], s.padStart, min(s.lastSpeech, c), c, true)
	s.stats.Splits++
	s.utt = append([]*window(nil), s.utt[best:]...)
	s.padStart = c
	s.speechStart = c
	s.lastSpeech = max(s.lastSpeech, c)
	s.split = true
	return []Utterance{u}
}

// quieter reports whether a is a better cut than b: clearly lower speech
// probability, or about the same probability and less energy.
func quieter(a, b *window) bool {
	const same = 0.05
	if d := a.p - b.p; d < -same || d > same {
		return d < 0
	}
	return a.db < b.db
}

// emit builds an utterance from the audio of windows ws between stream
// offsets from and until.
func (s *Segmenter) emit(ws []*window, from, speechEnd, until int64, split bool) Utterance {
	s.stats.Utterances++
	return s.build(ws, from, speechEnd, until, split)
}

// build is emit without counting: Tentative previews an utterance with it.
func (s *Segmenter) build(ws []*window, from, speechEnd, until int64, split bool) Utterance {
	var samples []float32
	var start time.Time
	for _, x := range ws {
		if x.off >= until || x.end() <= from {
			continue
		}
		if x.off <= s.speechStart && s.speechStart < x.end() {
			start = x.t.Add(samplesDur(s.speechStart - x.off))
		}
		lo, hi := max(from, x.off)-x.off, min(until, x.end())-x.off
		samples = append(samples, x.s[lo:hi]...)
	}
	return Utterance{
		Samples:     samples,
		SpeechStart: s.speechStart,
		SpeechEnd:   speechEnd,
		PadStart:    from,
		Start:       start,
		Split:       split,
	}
}

func (s *Segmenter) pushHist(x *window) {
	s.hist = append(s.hist, x)
	if len(s.hist) > s.histCap {
		s.hist = append(s.hist[:0], s.hist[len(s.hist)-s.histCap:]...)
	}
}

// gate is the energy a window needs to reach the VAD.
func (s *Segmenter) gate() float64 {
	return max(s.cfg.GateFloorDBFS, s.floor+s.cfg.GateMarginDB)
}

// updateFloor tracks the noise floor from non-speech windows: it follows
// quieter audio quickly and louder audio slowly, so a word does not lift it
// but a fan switched on eventually does.
func (s *Segmenter) updateFloor(db float64) {
	if db < s.floor {
		s.floor += (db - s.floor) * floorFall
	} else {
		s.floor += min(db-s.floor, floorRise)
	}
}

// dbfs is the RMS level of x relative to full scale.
func dbfs(x []float32) float64 {
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	if e == 0 {
		return silenceDBFS
	}
	return max(silenceDBFS, 10*math.Log10(e/float64(len(x))))
}

func samplesDur(n int64) time.Duration {
	return time.Duration(n) * time.Second / audio.SampleRate
}
