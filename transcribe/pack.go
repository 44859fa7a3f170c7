package transcribe

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// Packing (issue 15): every whisper call pays a full 30 s encoder pass, so
// utterances that are waiting together (a file, a backlog in the daemon) go
// through whisper several at a time: joined with PackGap of silence into one
// window of at most PackWindow, decoded by one call, and the text split back
// by whisper's timestamps. Each utterance keeps its own Result.
const (
	// PackGap is the silence between packed utterances: long enough that
	// whisper ends a segment there and the split has a margin for its
	// timestamps, short enough to fit many utterances in a window.
	PackGap = 1000 * time.Millisecond
	// PackWindow bounds a packed window (utterances and gaps). Whisper's
	// window is 30 s; the margin keeps the last utterance's closing
	// timestamp inside it so whisper does not open a second window.
	PackWindow = 29 * time.Second
)

// csPerSecond: whisper's timestamps are in centiseconds.
const csPerSecond = 100

// token is one text token whisper decoded; t0 and t1 are whisper's token
// timestamps in centiseconds (-1 when it has none).
type token struct {
	text   string
	p      float64
	t0, t1 int64
}

// segment is one of whisper's segments: [t0, t1) in centiseconds from the
// start of the call's audio, its text and its text tokens.
type segment struct {
	t0, t1 int64
	text   string
	tokens []token
	// untimed: whisper closed the segment with no timestamp token, so t1
	// is not a time it heard but whisper.cpp's default, the end of its
	// 30 s chunk (a prompt makes whisper base write Dutch without
	// timestamps: window.go).
	untimed bool
}

// piece is the text gathered for one utterance and its tokens' probabilities.
type piece struct {
	text   strings.Builder
	logSum float64
	tokens int
	offset int64  // where the utterance starts in the call's audio (cs)
	words  []Word // with times from the utterance's start
}

func (p *piece) addSegment(s segment) {
	p.text.WriteString(s.text)
	p.addTokens(s.tokens)
}

func (p *piece) addTokens(toks []token) {
	for _, t := range toks {
		p.logSum += math.Log(max(t.p, 1e-9))
		p.tokens++
	}
	for _, w := range words(toks) {
		var text strings.Builder
		for _, t := range w {
			text.WriteString(t.text)
		}
		word := Word{Text: strings.TrimSpace(text.String()), Start: -1, End: -1}
		if w[0].t0 >= 0 && w[len(w)-1].t1 >= 0 {
			word.Start = time.Duration(w[0].t0-p.offset) * 10 * time.Millisecond
			word.End = time.Duration(w[len(w)-1].t1-p.offset) * 10 * time.Millisecond
		}
		if word.Text != "" {
			p.words = append(p.words, word)
		}
	}
}

// clampWords keeps word times inside the utterance: whisper stretches the
// last word of a segment to the segment's end, past the utterance into the
// packing gap or the padding.
func clampWords(ws []Word, d time.Duration) []Word {
	for i := range ws {
		ws[i].Start, ws[i].End = min(ws[i].Start, d), min(ws[i].End, d)
	}
	return ws
}

// result is the piece's text and confidence (geometric mean of its tokens'
// probabilities, 0 without tokens).
func (p *piece) result() (string, float64) {
	conf := 0.0
	if p.tokens > 0 {
		conf = math.Exp(p.logSum / float64(p.tokens))
	}
	return strings.Join(strings.Fields(p.text.String()), " "), conf
}

// span is where one utterance lies in a packed window, in centiseconds.
type span struct{ from, to int64 }

// packs groups consecutive utterances of the given lengths (samples) into
// windows of at most limit samples with gap samples between utterances;
// an utterance longer than the window is a group of its own. It returns
// [start, end) index ranges covering lengths in order.
func packs(lengths []int, gap, limit int) [][2]int {
	var out [][2]int
	for i := 0; i < len(lengths); {
		j, total := i+1, lengths[i]
		for j < len(lengths) && total+gap+lengths[j] <= limit {
			total += gap + lengths[j]
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// split gives each span the text whisper decoded for it. The spans'
// regions meet halfway across each gap. Whisper ends a segment at a pause,
// so a segment normally belongs to one utterance, but its timestamps drift
// (measured: a segment ending 1.5 s after its utterance, into the next
// one's region): a segment goes whole to the region it overlaps most, unless
// other regions hold more than a third of it (whisper ran short utterances
// into one segment). Then it is split word by word, a word going to the
// region its first token starts in. Last, each cut between utterances moves
// to the nearest sentence end within sentenceSnap words: whisper also puts
// segment boundaries inside sentences (measured on base: "Next. What time" |
// "is it?" over two commands).
func split(segs []segment, spans []span) []piece {
	pieces := make([]piece, len(spans))
	if len(spans) == 0 {
		return pieces
	}
	// bound[i] is where region i ends and region i+1 begins.
	bound := make([]int64, len(spans)-1)
	for i := range bound {
		bound[i] = (spans[i].to + spans[i+1].from) / 2
	}
	region := func(t int64) int {
		for i, b := range bound {
			if t < b {
				return i
			}
		}
		return len(spans) - 1
	}
	// Every word gets a region (its segment's, or its own for a split
	// segment); then the cuts between regions move to sentence ends.
	var ws [][]token
	var regs []int
	for _, s := range segs {
		best, bestOv := region(s.t0), int64(0)
		for i := range spans {
			lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
			if i > 0 {
				lo = bound[i-1]
			}
			if i < len(bound) {
				hi = bound[i]
			}
			ov := min(hi, s.t1) - max(lo, s.t0)
			if ov > bestOv {
				best, bestOv = i, ov
			}
		}
		whole := 3*bestOv >= 2*(s.t1-s.t0)
		for _, w := range words(s.tokens) {
			r := best
			if at := w[0].t0; !whole && at >= 0 {
				r = region(at)
			} else if !whole {
				r = region(s.t0) // no token timestamps
			}
			ws, regs = append(ws, w), append(regs, r)
		}
	}
	if len(ws) == 0 {
		return pieces
	}
	for k := range pieces {
		pieces[k].offset = spans[k].from
	}
	for k, group := range snapToSentences(ws, regs) {
		p := &pieces[k]
		for _, w := range group {
			for _, t := range w {
				p.text.WriteString(t.text)
			}
			p.addTokens(w)
		}
	}
	return pieces
}

// sentenceSnap is how many words a cut between utterances may move to fall
// after a sentence's end.
const sentenceSnap = 3

// snapToSentences turns the regions token timestamps gave the words of one
// segment into word groups per region. Token timestamps are rough (measured:
// "Next. What time | is it?" over two utterances), and whisper ends an
// utterance's text with its punctuation, so each cut moves to the nearest
// sentence end within sentenceSnap words. Cuts stay in order; a word's
// region never goes back.
func snapToSentences(ws [][]token, regs []int) map[int][][]token {
	// cuts[k] is the index of the first word of region changes, in order.
	type cut struct{ at, region int }
	var cuts []cut
	cur := regs[0]
	for k := 1; k < len(ws); k++ {
		if regs[k] > cur {
			cur = regs[k]
			cuts = append(cuts, cut{k, cur})
		}
	}
	prev := 0
	for i := range cuts {
		best, dist := cuts[i].at, sentenceSnap+1
		for k := max(prev+1, cuts[i].at-sentenceSnap); k <= min(len(ws)-1, cuts[i].at+sentenceSnap); k++ {
			if endsSentence(ws[k-1]) && abs(k-cuts[i].at) < dist {
				best, dist = k, abs(k-cuts[i].at)
			}
		}
		if i+1 < len(cuts) && best >= cuts[i+1].at {
			best = cuts[i].at
		}
		cuts[i].at, prev = best, best
	}
	out := map[int][][]token{}
	reg, next := regs[0], 0
	for k, w := range ws {
		for next < len(cuts) && k >= cuts[next].at {
			reg = cuts[next].region
			next++
		}
		out[reg] = append(out[reg], w)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// endsSentence: the word ends with sentence punctuation and is not a title
// ("Mr." before a name: measured, a cut snapped to it took "Mr." from the
// start of an utterance into the previous one).
func endsSentence(w []token) bool {
	var b strings.Builder
	for _, t := range w {
		b.WriteString(t.text)
	}
	word := strings.TrimSpace(b.String())
	if titles[strings.ToLower(word)] {
		return false
	}
	return strings.HasSuffix(word, ".") || strings.HasSuffix(word, "?") || strings.HasSuffix(word, "!")
}

// titles end with a full stop but never a sentence (English and Dutch).
var titles = map[string]bool{"mr.": true, "mrs.": true, "ms.": true, "dr.": true, "st.": true, "prof.": true,
	"dhr.": true, "mevr.": true, "ir.": true, "ing.": true, "drs.": true}

// words groups tokens into words: a word starts at a token that begins with
// a space (whisper's tokenizer marks word starts so), or at the first token.
func words(toks []token) [][]token {
	var out [][]token
	for i, t := range toks {
		if i == 0 || strings.HasPrefix(t.text, " ") {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], t)
	}
	return out
}

// TranscribeBatch transcribes utterances that are waiting together, in
// order, packing consecutive ones into shared whisper windows (PackGap,
// PackWindow): one whisper call per window instead of one per utterance.
// Each utterance gets its own Result, as Transcribe would give it: its own
// text, confidence, language, guard verdict, and a share of the window's
// processing time in proportion to its audio. On an error it returns the
// results of the utterances before the one that failed, and the error.
func (t *Transcriber) TranscribeBatch(ctx context.Context, utts [][]float32) ([]Result, error) {
	results := make([]Result, len(utts))
	var live []int // utterances whisper gets: not near-silent
	for i, u := range utts {
		for k, v := range u {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("transcribe: utterance %d of %d: sample %d of %d is %v: refusing corrupt audio", i+1, len(utts), k, len(u), v)
			}
		}
		if rms(u) < t.opts.SilenceRMS {
			// Transcribe gives the near-silent verdict without calling whisper.
			r, err := t.Transcribe(ctx, u)
			if err != nil {
				return results[:i], err
			}
			results[i] = r
			continue
		}
		live = append(live, i)
	}
	if len(live) == 1 {
		// Nothing to pack: one whisper call, and with "auto" the language
		// from that call's own encoder pass (Transcribe), not a pass of its own.
		r, err := t.Transcribe(ctx, utts[live[0]])
		if err != nil {
			return results[:live[0]], err
		}
		results[live[0]] = r
		return results, nil
	}
	lengths := make([]int, len(live))
	for k, i := range live {
		lengths[k] = len(utts[i])
	}
	// Language "auto" on a multilingual model: whisper decodes a window in
	// one language, and a window's detection follows its majority (measured
	// on base: two English commands packed with two Dutch recordings came
	// back as Dutch, "Wat tijd is dat?"). So each utterance gets its own
	// detection, as unpacked, and only runs of one language share windows.
	langs := make([]int, len(live)) // index into t.langs; -1: the fixed language
	detecting := make([]time.Duration, len(utts))
	for k, i := range live {
		langs[k] = -1
		if len(t.autoIDs) > 0 {
			start := time.Now()
			probs, err := t.detect(ctx, utts[i])
			if err != nil {
				return results[:i], err
			}
			// the decision in order, as unpacked (hysteresis on the last)
			l := decide(int(t.lastLang.Load()), probs, t.opts.SwitchP)
			t.lastLang.Store(int32(l))
			langs[k], detecting[i] = l, time.Since(start)
			results[i].LangP = probs[l]
		}
	}
	gap, limit := samplesOf(PackGap), samplesOf(PackWindow)
	for from := 0; from < len(live); {
		to := from + 1
		for to < len(live) && langs[to] == langs[from] {
			to++
		}
		for _, g := range packs(lengths[from:to], gap, limit) {
			idx := live[from+g[0] : from+g[1]]
			var err error
			if len(idx) == 1 && langs[from] < 0 {
				results[idx[0]], err = t.Transcribe(ctx, utts[idx[0]])
			} else {
				err = t.transcribePack(ctx, utts, idx, langs[from], results)
			}
			if err != nil {
				return results[:idx[0]], err
			}
		}
		from = to
	}
	for i := range results {
		results[i].ProcessingTime += detecting[i]
	}
	return results, nil
}

// detect returns whisper's probabilities of t.langs for samples.
func (t *Transcriber) detect(ctx context.Context, samples []float32) ([]float64, error) {
	if t.detectLang != nil {
		return onehot(t.detectLang(samples), len(t.langs)), nil
	}
	w, err := t.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer t.release(w)
	probs, err := t.detectOn(w, padded(samples))
	if err != nil {
		return nil, fmt.Errorf("detect the language of %s of audio: %w", time.Duration(len(samples))*time.Second/sampleRate, err)
	}
	return probs, nil
}

// padded is samples padded with silence to what whisper_full accepts.
func padded(samples []float32) []float32 {
	if len(samples) >= minSamples {
		return samples
	}
	in := make([]float32, minSamples)
	copy(in, samples)
	return in
}

func samplesOf(d time.Duration) int { return int(d * sampleRate / time.Second) }

// transcribePack runs utterances idx of utts through one whisper call and
// fills their results. lang is the index in t.langs of their language
// (detected), or -1 for the configured one.
func (t *Transcriber) transcribePack(ctx context.Context, utts [][]float32, idx []int, lang int, results []Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	gap := samplesOf(PackGap)
	var in []float32
	spans := make([]span, len(idx))
	var audio int
	for k, i := range idx {
		if k > 0 {
			in = append(in, make([]float32, gap)...)
		}
		spans[k] = span{from: int64(len(in)) * csPerSecond / sampleRate}
		in = append(in, utts[i]...)
		spans[k].to = int64(len(in)) * csPerSecond / sampleRate
		audio += len(utts[i])
	}
	window := time.Duration(len(in)) * time.Second / sampleRate
	w, err := t.acquire(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	params := *w.params
	name := t.lang
	if t.lang == "auto" && !t.multi {
		name = "en"
	}
	if lang >= 0 {
		name = t.langs[lang]
		if err := params.SetLanguage(t.autoIDs[lang]); err != nil {
			t.release(w)
			return fmt.Errorf("transcribe %d utterances packed in %s: %w", len(idx), window, err)
		}
		if lang < len(w.prompts) {
			w.prompts[lang].set(&params)
		}
	}
	segs, err := t.decode(ctx, w, &params, padded(in))
	t.release(w)
	if err != nil {
		return fmt.Errorf("transcribe %d utterances packed in %s: %w", len(idx), window, err)
	}
	took := time.Since(start)
	pieces := split(segs, spans)
	for k, i := range idx {
		r := Result{Lang: name, AudioDuration: time.Duration(len(utts[i])) * time.Second / sampleRate,
			ProcessingTime: took * time.Duration(len(utts[i])) / time.Duration(audio)}
		r.Text, r.Confidence = pieces[k].result()
		r.Words = clampWords(pieces[k].words, r.AudioDuration)
		if why := guard(r.Text, r.Confidence, r.AudioDuration); why != "" {
			t.log.Debug("transcript rejected", "text", r.Text, "reason", why)
			r.Text, r.Rejected, r.Words = "", why, nil
		}
		r.LangP = results[i].LangP // the detection's, set by TranscribeBatch
		results[i] = r
	}
	t.log.Debug("packed whisper call", "utterances", len(idx), "window", window, "took", took)
	return nil
}
