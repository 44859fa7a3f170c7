package transcribe

import (
	"math"
	"slices"
	"strings"
)

// Word times (issue 24). The name's place (wake.Rules.MatchHeard and
// MatchSpot), the wearer gate's word check and the split of a packed window
// all read where each word was said. whisper.cpp's token timestamps (its
// "experimental" heuristic, no DTW: that needs flash attention off) split a
// segment's span [t0, t1) among its tokens by how long their text takes to
// say, then move each token's edges to where the signal's energy crosses
// half its local mean. In 1.8.5 that goes wrong three ways:
//
//   - A segment's closing timestamp can lie far past the audio: 7 s for a
//     2.6 s utterance in a stepped window (audio_ctx 512), 3.4 s for a 1.8 s
//     command in the full one. The words are spread over time with no
//     sound, and the energy step clamps every word past the audio's end to
//     its last sample: "is deflected" came out 0 ms long at 2.48 s, and the
//     wearer's word check cut it.
//   - Pauses count as speech: a word after a pause started up to a second
//     early.
//   - For a segment after the first, the energy is read from the start of
//     the audio (timestamp_to_sample subtracts the segment's start).
//
// retime does it from the audio whisper decoded instead: a segment's span
// ends where its sound ends (segmentEnd); the span's stretches of sound
// between pauses each get a run of whole words whose voice length fits
// their length, preferring pauses where whisper wrote punctuation
// (assignRuns); each run's sound, pauses inside it left out, is split among
// its words by voice length (splitSound); then whisper.cpp's energy step.
// Measured against where espeak-ng said each word (bench/wordtimes): see
// the issue 24 note.
//
// Invariants: a segment's token times lie in [t0, min(t1, end of its sound)],
// in order, each token's start at or before its end. The segment's own t0
// and t1 stay whisper's: steppedBroken and the packed split read them.

const (
	// energyHalfWidth: the signal's energy at a sample is the mean of |x|
	// over this many samples each side (whisper.cpp's get_signal_energy).
	energyHalfWidth = 32
	// edgeReach: a token's edges move to the energy within this much of its
	// split position (whisper.cpp's 1/8 s).
	edgeReach = sampleRate / 8
	// soundEndRatio: a segment's sound ends at its last 20 ms frame whose
	// RMS reaches this fraction (-30 dB) of its louder frames' (90th
	// percentile). Lower than the -20 dB tail skip (trailingQuiet): a
	// quieter voice after the wearer's is still sound here, so its words
	// keep their own times for the wearer's word check.
	soundEndRatio = 0.0316
	// minPause (cs): a stretch without sound this long is a pause between
	// words, not a stop inside one (a plosive's closure is 50-100 ms).
	minPause = 15
	// punctuatedPause: a pause after a word whisper ended with punctuation
	// is worth as much as misplacing a five-letter word (in assignRuns'
	// squares of voice length): whisper writes most pauses as punctuation.
	punctuatedPause = 5 * 5
)

// retime sets the token times of segs (centiseconds from in's start) from
// in, the samples whisper decoded; floor is the RMS below which a frame is
// never sound.
func retime(segs []segment, in []float32, floor float64) {
	if len(in) == 0 {
		return
	}
	energy := signalEnergy(in, energyHalfWidth)
	for i := range segs {
		s := &segs[i]
		t1 := segmentEnd(in, s.t0, s.t1, floor)
		retimeSegment(s.tokens, min(s.t0, t1), t1, in, energy, floor)
	}
}

// segmentEnd is where the sound of the segment [t0, t1) ends (cs): at most
// t1 and the end of in, and no later than its last frame of sound.
func segmentEnd(in []float32, t0, t1 int64, floor float64) int64 {
	s0 := clampSample(t0, len(in))
	s1 := clampSample(t1, len(in)+1)
	if s1 <= s0 {
		return min(t1, toCS(len(in)))
	}
	end := s0 + soundEnd(in[s0:s1], floor, soundEndRatio)
	if end <= s0 { // no frame of sound: the split keeps the clamped span
		end = s1
	}
	return min(t1, toCS(end))
}

// retimeSegment times toks in [t0, t1): runs of words to stretches of
// sound, each run's sound split by voice length, then each token's edges
// moved to the energy (whisper.cpp's step, with indices into energy taken
// from in's start).
func retimeSegment(toks []token, t0, t1 int64, in, energy []float32, floor float64) {
	n := len(toks)
	if n == 0 {
		return
	}
	sound := sounding(in, t0, t1, floor)
	runs := soundRuns(sound, minPause)
	groups := assignRuns(toks, runs)
	for r, g := range groups {
		if g[1] > g[0] {
			splitSound(toks[g[0]:g[1]], t0+int64(runs[r][0]), t0+int64(runs[r][1]), sound[runs[r][0]:runs[r][1]])
		}
	}
	for j := range toks {
		s0, s1 := clampSample(toks[j].t0, len(energy)), clampSample(toks[j].t1, len(energy))
		lo, hi := max(s0-edgeReach, 0), min(s1+edgeReach, len(energy))
		var mean float64
		for _, e := range energy[lo:hi] {
			mean += float64(e)
		}
		mean /= float64(hi - lo)
		th := float32(mean / 2)

		prevEnd, nextStart := t0, t1
		if j > 0 {
			prevEnd = toks[j-1].t1
		}
		if j < n-1 {
			nextStart = toks[j+1].t0
		}
		// The start: back to where the sound it lies in began, or on to
		// where sound begins.
		k := s0
		if energy[k] > th {
			for k > 0 && energy[k] > th {
				k--
			}
			if at := toCS(k); at >= prevEnd {
				toks[j].t0, s0 = at, k
			} else {
				toks[j].t0 = prevEnd
			}
		} else {
			for energy[k] < th && k < s1 {
				k++
			}
			toks[j].t0, s0 = toCS(k), k
		}
		// The end: on to where its sound ends, or back to where it was
		// last heard.
		k = s1
		if energy[k] > th {
			for k < len(energy)-1 && energy[k] > th {
				k++
			}
			toks[j].t1 = min(toCS(k), nextStart)
		} else {
			for energy[k] < th && k > s0 {
				k--
			}
			toks[j].t1 = toCS(k)
		}
		toks[j].t0 = max(toks[j].t0, prevEnd)
		toks[j].t1 = min(max(toks[j].t1, toks[j].t0), t1)
	}
}

// sounding says, for each centisecond of [t0, t1), whether in has sound
// there: its RMS reaches soundEndRatio of the span's louder centiseconds'
// (loudFrom).
func sounding(in []float32, t0, t1 int64, floor float64) []bool {
	const frame = sampleRate / csPerSecond
	n := int(max(t1-t0, 0))
	from := min(int(t0)*frame, len(in))
	levels := frameLevels(in[from:min(from+n*frame, len(in))], frame, n)
	th := loudFrom(levels, floor, soundEndRatio)
	out := make([]bool, n)
	for i, l := range levels {
		out[i] = l >= th && l > 0
	}
	return out
}

// soundRuns are the stretches of sound ([from, to) in centiseconds of
// sound's span), pauses shorter than minPause bridged; the whole span when
// it has no sound.
func soundRuns(sound []bool, minPause int) [][2]int {
	var runs [][2]int
	quiet := minPause // silence since the last sound
	for i, s := range sound {
		switch {
		case !s:
			quiet++
		case quiet >= minPause || len(runs) == 0:
			runs = append(runs, [2]int{i, i + 1})
			quiet = 0
		default:
			runs[len(runs)-1][1] = i + 1
			quiet = 0
		}
	}
	if len(runs) == 0 {
		return [][2]int{{0, len(sound)}}
	}
	return runs
}

// assignRuns gives each run of sound a contiguous group of toks ([from,
// to) indices, in order, possibly none), so that each run's length is
// nearest (least squares) to its words' voice length at the segment's mean
// rate: a word is not split across a pause, and the words after a pause
// start after it. Every token is in a group.
func assignRuns(toks []token, runs [][2]int) [][2]int {
	n, m := len(toks), len(runs)
	voice := make([]float64, n+1) // voice length of toks[:i]
	for i, t := range toks {
		voice[i+1] = voice[i] + max(voiceLength(t.text), 0.01)
	}
	var sound float64
	for _, r := range runs {
		sound += float64(r[1] - r[0])
	}
	rate := sound / voice[n] // centiseconds per unit of voice length
	inf := math.Inf(1)
	// cost[r][i]: the least cost of toks[:i] in runs[:r]; from[r][i] the
	// start of run r-1's group in it.
	cost := make([][]float64, m+1)
	from := make([][]int, m+1)
	for r := range cost {
		cost[r], from[r] = make([]float64, n+1), make([]int, n+1)
		for i := range cost[r] {
			cost[r][i] = inf
		}
	}
	cost[0][0] = 0
	for r := 1; r <= m; r++ {
		d := float64(runs[r-1][1] - runs[r-1][0])
		for j := 0; j <= n; j++ {
			for i := 0; i <= j; i++ {
				if cost[r-1][i] == inf || i > 0 && i < j && !strings.HasPrefix(toks[i].text, " ") {
					continue // a group starts at a word, not inside one
				}
				e := d - rate*(voice[j]-voice[i])
				c := cost[r-1][i] + e*e
				if i > 0 && j > i && clauseEnd(toks[i-1].text) {
					c -= punctuatedPause * rate * rate
				}
				if c < cost[r][j] {
					cost[r][j], from[r][j] = c, i
				}
			}
		}
	}
	groups := make([][2]int, m)
	for r, j := m, n; r > 0; r-- {
		i := from[r][j]
		groups[r-1] = [2]int{i, j}
		j = i
	}
	return groups
}

// clauseEnd says whether text ends a clause: whisper writes the pause after
// it as punctuation.
func clauseEnd(text string) bool {
	return strings.HasSuffix(text, ",") || strings.HasSuffix(text, ".") || strings.HasSuffix(text, "?") ||
		strings.HasSuffix(text, "!") || strings.HasSuffix(text, ";") || strings.HasSuffix(text, ":")
}

// splitSound gives each token of toks a share of [t0, t1) by its voice length,
// counting only the centiseconds with sound (a pause between words is no
// one's), or all of them when none has. Whisper.cpp splits the whole span,
// so a word after a pause started up to a second early.
func splitSound(toks []token, t0, t1 int64, sound []bool) {
	cum := make([]int, len(sound)+1) // centiseconds of sound before each
	for i, s := range sound {
		cum[i+1] = cum[i]
		if s {
			cum[i+1]++
		}
	}
	total := cum[len(sound)]
	if total == 0 {
		for i := range sound {
			cum[i+1] = i + 1
		}
		total = len(sound)
	}
	// begin is where the c-th centisecond of sound begins, end where the
	// one before it ends (a share ending in a pause ends before it).
	begin := func(c float64) int64 {
		if c >= float64(total) {
			return t1
		}
		f, _ := slices.BinarySearch(cum, int(c)+1) // first f with cum[f] > c
		return t0 + int64(f-1)
	}
	end := func(c float64) int64 {
		if c <= 0 {
			return t0
		}
		return begin(math.Ceil(c)-1) + 1
	}
	var sum float64
	for _, t := range toks {
		sum += voiceLength(t.text)
	}
	var acc float64
	for i := range toks {
		share := 1 / float64(len(toks))
		if sum > 0 {
			share = voiceLength(toks[i].text) / sum
		}
		toks[i].t0 = begin(acc * float64(total))
		acc += share
		toks[i].t1 = max(toks[i].t0, end(acc*float64(total)))
	}
	toks[len(toks)-1].t1 = t1
}

// voiceLength is how long text takes to say, roughly (whisper.cpp's
// voice_length): a letter 1, a digit or sentence end 3, a comma 2.
func voiceLength(text string) float64 {
	var l float64
	for _, c := range []byte(text) {
		switch {
		case c == ' ':
			l += 0.01
		case c == ',':
			l += 2
		case c == '.' || c == '!' || c == '?' || c >= '0' && c <= '9':
			l += 3
		default:
			l++
		}
	}
	return l
}

// signalEnergy is the mean of |x| over hw samples each side of each sample
// (fewer at the ends, divided by the full width as whisper.cpp does).
func signalEnergy(in []float32, hw int) []float32 {
	out := make([]float32, len(in))
	var sum float64
	for i := 0; i < min(hw, len(in)); i++ {
		sum += math.Abs(float64(in[i]))
	}
	for i := range in {
		if j := i + hw; j < len(in) {
			sum += math.Abs(float64(in[j]))
		}
		if j := i - hw - 1; j >= 0 {
			sum -= math.Abs(float64(in[j]))
		}
		out[i] = float32(max(sum, 0) / float64(2*hw+1))
	}
	return out
}

// soundEnd is where in's sound ends: the end of its last 20 ms frame whose
// RMS reaches ratio of its louder frames' (loudFrom); 0 when no frame does.
func soundEnd(in []float32, floor, ratio float64) int {
	const frame = sampleRate / 50
	levels := frameLevels(in, frame, (len(in)+frame-1)/frame)
	th := loudFrom(levels, floor, ratio)
	for i := len(levels) - 1; i >= 0; i-- {
		if levels[i] >= th {
			return min(len(in), (i+1)*frame)
		}
	}
	return 0
}

// frameLevels is the RMS of n frames of in (those past its end are 0).
func frameLevels(in []float32, frame, n int) []float64 {
	levels := make([]float64, n)
	for i := range levels {
		s0 := min(i*frame, len(in))
		levels[i] = rms(in[s0:min(s0+frame, len(in))])
	}
	return levels
}

// loudFrom is the level from which a frame counts as sound: ratio of the
// louder frames' (90th percentile), or floor if that is higher.
func loudFrom(levels []float64, floor, ratio float64) float64 {
	if len(levels) == 0 {
		return floor
	}
	sorted := slices.Clone(levels)
	slices.Sort(sorted)
	return max(floor, sorted[len(sorted)*9/10]*ratio)
}

// toCS is sample i's time in centiseconds.
func toCS(i int) int64 { return int64(i) * csPerSecond / sampleRate }

// clampSample is time t's (cs) sample index, in [0, n-1].
func clampSample(t int64, n int) int {
	return max(0, min(n-1, int(t*sampleRate/csPerSecond)))
}
