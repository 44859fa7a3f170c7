// Package transcribe turns utterances into text with whisper.cpp: the model
// is loaded once, each whisper call is greedy over whisper's full 30 s
// window (or, with Options.Window steps, a 10.24 s or 15.36 s one when the
// utterance fits in it with a margin: window.go), and a hallucination guard
// drops text whisper invents on silence and noise. Model files (finding, fetching, importing) are
// transcribe/model's job.
//
// Invariants: Transcribe is one utterance, one call. TranscribeBatch packs
// consecutive waiting utterances into shared windows (pack.go) and still
// gives every utterance its own Result, in order, each judged by the guard on
// its own; a word whisper decodes goes to exactly one utterance. Near-silent
// audio never reaches whisper, and whisper gets no encoder pass that would
// start in an input's trailing quiet (trailingQuiet). All of a whisper
// context's compute runs on one locked OS thread (thread.go): ggml's OpenMP
// pool is per calling thread, and more pools than cores made every decoder
// step 4-6x slower. Word times are agorad's own (wordtimes.go), taken from
// the sound of the audio whisper decoded, in whichever window: a word's
// time lies inside its segment's sound and never runs past the audio.
//
// Language "auto" on a multilingual model (issues 24, 46): an utterance is
// decoded in the language the last one was taken to be in (at first the
// wearer's first language), and its own language is then read from one
// decoder step over the encoder output that decoding left in the state;
// only when the decision (language.go: the wearer's languages only, with
// hysteresis) differs is it decoded again. A steady speaker costs one
// encoder pass per utterance, as a fixed language does; a change of
// language costs one more decoding (in the wrong language first).
//
// Measured on real weights (issue 15): an encoder window sized to the
// utterance (not in steps, no margin) saves compute but breaks decoding (repetition loops, WER 34 %
// against 12 % at the full window), and in whisper.cpp 1.9's flash-attention
// path it also leaks the previous utterance's audio into the next one (the
// cross-attention reads the window rounded up to 256 positions, unmasked, and
// the encoder writes only the sized part: the rest is still the last
// utterance's). The default initial prompt cost WER and is gone: a prompt is
// only what the configuration asks for.
package transcribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agora/agorad/audio/ggml"
	"github.com/agora/agorad/wake"
	"github.com/ggerganov/whisper.cpp/bindings/go"
)

const (
	sampleRate = 16000
	// minSamples: whisper_full ignores input shorter than 1 s; pad up to it.
	minSamples = sampleRate + sampleRate/10
)

// Options configure a Transcriber.
type Options struct {
	ModelPath string // ggml whisper model file
	Language  string // "nl", "en" or "auto" ("" means "auto": choose among Languages)
	// Languages are the wearer's languages "auto" chooses among, the first
	// assumed until another is heard (language.go); nil means
	// DefaultLanguages. SwitchP is the probability whisper must give
	// another of them to take over from the one heard last; 0 means
	// DefaultSwitchP.
	Languages     []string
	SwitchP       float64
	InitialPrompt string   // text whisper sees as preceding the utterance; "" or "-" means none
	Terms         []string // domain terms appended to the prompt so whisper spells them as expected (config transcribe.contexts)
	// Vocabulary are more terms per language (config
	// transcribe.vocabulary): appended to the prompt when an utterance is
	// decoded in that language only, so a Dutch list does not push
	// English speech toward Dutch words.
	Vocabulary map[string][]string
	// Beam is the beam size: 0 or 1 is greedy decoding, as shipped.
	Beam int
	// NoFallback turns off whisper's temperature fallback (decoding again
	// at a higher temperature when the text looks repetitive or unlikely).
	NoFallback bool
	Threads    int     // whisper threads per call; 0 means all cores
	Contexts   int     // whisper contexts (concurrent calls); 0 means 1, each holds its own copy of the model
	SilenceRMS float64 // below this RMS audio is not transcribed; 0 means DefaultSilenceRMS
	// Hotwords are words whisper is pushed toward (the wake word): their
	// spellings' tokens get HotwordBias added to their logits while
	// decoding (hotwords.go). No hotwords or a zero bias is plain decoding.
	Hotwords    []string
	HotwordBias float64
	// Window is the encoder window per utterance (window.go): full ("" too)
	// or steps.
	Window Window
	// WhisperWordTimes gives words whisper.cpp's own token times instead
	// of retime's: what bench/wordtimes measures them against.
	WhisperWordTimes bool
	Logger           *slog.Logger // nil means slog.Default()
}

// Result is what one utterance became.
type Result struct {
	Text string
	Lang string
	// LangP is whisper's probability of Lang among the wearer's languages
	// when it was chosen per utterance (language auto), else 0.
	LangP          float64
	Confidence     float64 // geometric mean of the text tokens' probabilities; 0 when there were none
	AudioDuration  time.Duration
	ProcessingTime time.Duration
	Rejected       string // why the hallucination guard dropped the text, "" if kept
	// Words are Text's words with their times (wordtimes.go: a median 0.1 s
	// off on synthetic speech), from the utterance's start; nil when Rejected.
	Words []Word
	// Window is the encoder window the text was decoded in: 30 s (full)
	// unless Options.Window is steps; 0 when whisper did not run.
	Window time.Duration
}

// Word is one word of a transcript and where it was heard (retime); Start
// and End are -1 when there are no times. It is the wake package's word, which
// places a name the keyword spotter heard among them.
type Word = wake.Word

// Transcriber runs whisper.cpp. It is safe for concurrent use: calls queue
// for one of Options.Contexts whisper contexts, as one context is not thread-safe.
type Transcriber struct {
	opts   Options
	log    *slog.Logger
	lang   string // "auto" or a whisper language code
	header ggml.WhisperHeader
	multi  bool // multilingual model
	// langs are the wearer's languages (Options.Languages); autoIDs their
	// whisper ids when the language is chosen per utterance (auto on a
	// multilingual model), else nil.
	langs   []string
	autoIDs []int
	// lastLang is the index in langs of the language the last utterance
	// was taken to be in (at first 0, the wearer's first language): the
	// next is first decoded in it.
	lastLang atomic.Int32
	// run replaces the whisper call in unit tests of the packing; nil in use.
	run func(ctx context.Context, params *whisper.Params, in []float32) ([]segment, error)
	// detectLang replaces the language detection in those tests.
	detectLang func(samples []float32) int
	pool       chan *wctx
	all        []*wctx
	done       chan struct{} // closed by Close
	once       sync.Once
}

// ErrClosed is returned by Transcribe after Close.
var ErrClosed = errors.New("transcribe: transcriber closed")

// wctx is one whisper context with its parameters, used by one call at a time.
type wctx struct {
	ctx *whisper.Context
	// params is its own allocation: cgo checks the whole object a pointer
	// passed to C points into, and wctx holds Go pointers.
	params *whisper.Params
	// prompts are the initial prompts of the wearer's languages (index as
	// Transcriber.langs) under language auto, else nil (params holds it).
	prompts []cPrompt
	abort   abortFlag
	bias    hotBias   // Options.Hotwords in this context's tokens; zero when none
	thread  *osThread // runs every whisper compute call on ctx (thread.go)
	passes  int       // encoder passes of the last whisper_full on ctx
}

// New checks and loads the model (once per context) and prepares the
// decoding parameters. Errors name the model file.
func New(opts Options) (*Transcriber, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Threads <= 0 {
		opts.Threads = runtime.NumCPU()
	}
	if opts.Contexts <= 0 {
		opts.Contexts = 1
	}
	if opts.SilenceRMS == 0 {
		opts.SilenceRMS = DefaultSilenceRMS
	}
	if len(opts.Languages) == 0 {
		opts.Languages = DefaultLanguages
	}
	if opts.SwitchP == 0 {
		opts.SwitchP = DefaultSwitchP
	}
	if opts.SwitchP < 0.5 || opts.SwitchP > 1 {
		return nil, fmt.Errorf("transcribe: language switch probability %g not in 0.5..1", opts.SwitchP)
	}
	if opts.InitialPrompt == "-" {
		opts.InitialPrompt = ""
	}
	opts.InitialPrompt = withTerms(opts.InitialPrompt, opts.Terms)
	if opts.Beam < 0 || opts.Beam > 8 {
		return nil, fmt.Errorf("transcribe: beam size %d not in 0..8", opts.Beam)
	}
	window, err := ParseWindow(string(opts.Window))
	if err != nil {
		return nil, fmt.Errorf("transcribe: %w", err)
	}
	opts.Window = window
	lang := strings.ToLower(strings.TrimSpace(opts.Language))
	if lang == "" {
		lang = "auto"
	}
	if opts.ModelPath == "" {
		return nil, errors.New("transcribe: no whisper model path given")
	}
	h, err := ggml.CheckWhisper(opts.ModelPath)
	if err != nil {
		return nil, err
	}
	routeNativeLogs(opts.Logger)
	t := &Transcriber{opts: opts, log: opts.Logger, lang: lang, langs: opts.Languages, header: h, pool: make(chan *wctx, opts.Contexts), done: make(chan struct{})}
	for i := 0; i < opts.Contexts; i++ {
		w, err := t.newContext()
		if err != nil {
			t.Close()
			return nil, err
		}
		t.all = append(t.all, w)
		t.pool <- w
	}
	t.multi = t.all[0].ctx.Whisper_is_multilingual() != 0
	if t.lang == "auto" && t.multi {
		ids, err := checkLanguages(t.langs, t.all[0].ctx.Whisper_lang_id)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("transcribe: the wearer's languages: %w", err)
		}
		t.autoIDs = ids
	}
	t.log.Info("whisper model loaded", "model", opts.ModelPath, "language", lang, "languages", t.langs, "switch_p", opts.SwitchP,
		"multilingual", t.multi, "contexts", opts.Contexts, "threads", opts.Threads, "window", opts.Window)
	return t, nil
}

// withTerms is prompt with terms appended ("a, b, c.").
func withTerms(prompt string, terms []string) string {
	if list := strings.Join(nonEmpty(terms), ", "); list != "" {
		return strings.TrimSpace(prompt + " " + list + ".")
	}
	return prompt
}

// promptFor is the initial prompt for an utterance decoded in lang.
func (t *Transcriber) promptFor(lang string) string {
	return withTerms(t.opts.InitialPrompt, t.opts.Vocabulary[lang])
}

func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Prompt is the initial prompt whisper gets before every utterance.
func (t *Transcriber) Prompt() string { return t.opts.InitialPrompt }

// loadContext asks whisper.cpp to load path; whisper reports failure as NULL.
func loadContext(path string) (*whisper.Context, error) {
	// Without ggml's backends loaded whisper.cpp aborts the process.
	if err := ggml.LoadBackends(); err != nil {
		return nil, fmt.Errorf("load whisper model %s: %w", path, err)
	}
	ctx := whisper.Whisper_init(path)
	if ctx == nil {
		return nil, fmt.Errorf("load whisper model %s: whisper.cpp could not load it (corrupt or truncated? run with debug logging for its reason)", path)
	}
	return ctx, nil
}

func (t *Transcriber) newContext() (*wctx, error) {
	ctx, err := loadContext(t.opts.ModelPath)
	if err != nil {
		return nil, err
	}
	strategy := whisper.SAMPLING_GREEDY
	if t.opts.Beam > 1 {
		strategy = whisper.SAMPLING_BEAM_SEARCH
	}
	p := ctx.Whisper_full_default_params(strategy)
	if t.opts.Beam > 1 {
		p.SetBeamSize(t.opts.Beam)
	}
	if t.opts.NoFallback {
		p.SetTemperatureFallback(-1)
	}
	p.SetThreads(t.opts.Threads)
	p.SetNoContext(true) // utterances are independent: no text carried between them
	// Word times (where the name the keyword spotter heard ends, the
	// question begins) are retime's, not whisper.cpp's (wordtimes.go).
	p.SetTokenTimestamps(t.opts.WhisperWordTimes)
	p.SetSingleSegment(false)
	p.SetPrintProgress(false)
	p.SetPrintRealtime(false)
	p.SetPrintTimestamps(false)
	p.SetPrintSpecial(false)
	p.SetTranslate(false)
	if t.lang == "auto" {
		err = p.SetLanguage(-1)
	} else {
		id := ctx.Whisper_lang_id(t.lang)
		if id < 0 {
			err = fmt.Errorf("unknown language %q (want nl, en, auto or another whisper language code)", t.lang)
		} else if ctx.Whisper_is_multilingual() == 0 && t.lang != "en" {
			err = fmt.Errorf("language %q needs a multilingual model, %s is English-only", t.lang, t.opts.ModelPath)
		} else {
			err = p.SetLanguage(id)
		}
	}
	if err != nil {
		ctx.Whisper_free()
		return nil, fmt.Errorf("transcribe: %w", err)
	}
	var prompts []cPrompt
	fixed := t.lang
	switch {
	case t.lang == "auto" && ctx.Whisper_is_multilingual() != 0:
		// a prompt per wearer's language, set on each call's copy of p
		fixed = ""
		for _, l := range t.langs {
			prompts = append(prompts, newCPrompt(t.promptFor(l)))
		}
	case t.lang == "auto":
		fixed = "en" // an English-only model
	}
	if prompt := t.promptFor(fixed); fixed != "" && prompt != "" {
		p.SetInitialPrompt(prompt)
	}
	seqs := hotwordTokens(ctx, t.opts.Hotwords)
	t.log.Debug("hotword bias", "hotwords", t.opts.Hotwords, "spellings", len(seqs), "bias", t.opts.HotwordBias)
	bias := newHotBias(seqs, ctx.Whisper_token_eot(), t.opts.HotwordBias, hotwordCont*t.opts.HotwordBias)
	return &wctx{ctx: ctx, params: &p, prompts: prompts, abort: newAbortFlag(), bias: bias, thread: startOSThread()}, nil
}

// Close waits for calls in flight, then frees the whisper contexts. Later
// calls get ErrClosed. Closing twice is harmless.
func (t *Transcriber) Close() error {
	t.once.Do(func() {
		close(t.done)
		debug := t.log.Enabled(context.Background(), slog.LevelDebug)
		for range t.all {
			w := <-t.pool
			if debug {
				// whisper's totals (encoder runs, decoder steps, fallbacks)
				// through the log hook: what a benchmark wants to count.
				w.ctx.Whisper_print_timings()
			}
			w.thread.stop()
			w.ctx.Whisper_free()
			freePrompt(w.params)
			for _, p := range w.prompts {
				p.free()
			}
			w.abort.free()
			w.bias.free()
		}
	})
	return nil
}

// Transcribe runs whisper on one utterance (16 kHz mono). Near-silent audio
// is not sent to whisper; likely hallucinations come back with empty Text
// and Rejected set. A cancelled ctx aborts a running whisper call.
func (t *Transcriber) Transcribe(ctx context.Context, samples []float32) (Result, error) {
	return t.transcribe(ctx, samples, nil)
}

// transcribe is Transcribe; after, when not nil, runs on the result while
// the whisper context that made it is still held (its encoder output still
// in its state), and its error is the call's.
func (t *Transcriber) transcribe(ctx context.Context, samples []float32, after func(*wctx, Result) error) (Result, error) {
	res := Result{AudioDuration: time.Duration(len(samples)) * time.Second / sampleRate, Lang: t.lang}
	if t.lang == "auto" {
		res.Lang = ""
		if !t.multi {
			res.Lang = "en"
		}
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	select {
	case <-t.done:
		return res, ErrClosed
	default:
	}
	for i, v := range samples {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return res, fmt.Errorf("transcribe: sample %d of %d is %v: refusing corrupt audio", i, len(samples), v)
		}
	}
	if level := rms(samples); level < t.opts.SilenceRMS {
		res.Rejected = fmt.Sprintf("near-silent input (RMS %.5f below %.5f): not transcribed", level, t.opts.SilenceRMS)
		return res, nil
	}
	w, err := t.acquire(ctx)
	if err != nil {
		return res, err
	}
	defer t.release(w)

	start := time.Now()
	in := samples
	if len(in) < minSamples {
		in = make([]float32, minSamples)
		copy(in, samples)
	}
	params := *w.params
	var segs []segment
	var audioCtx int
	if len(t.autoIDs) > 0 {
		var lang int
		segs, lang, res.LangP, audioCtx, err = t.decodeAuto(ctx, w, &params, in)
		res.Lang = t.langs[lang]
	} else {
		segs, audioCtx, err = t.decodeWindow(ctx, w, &params, in)
	}
	res.Window = time.Duration(audioCtx) * time.Second / ctxPerSecond
	if err != nil {
		return res, fmt.Errorf("transcribe %s of audio: %w", res.AudioDuration, err)
	}
	var p piece
	for _, s := range segs {
		p.addSegment(s)
	}
	res.Text, res.Confidence = p.result()
	res.Words = clampWords(p.words, res.AudioDuration)
	res.ProcessingTime = time.Since(start)
	if why := guard(res.Text, res.Confidence, res.AudioDuration); why != "" {
		t.log.Debug("transcript rejected", "text", res.Text, "reason", why)
		res.Text, res.Rejected, res.Words = "", why, nil
	}
	if after != nil && len(segs) > 0 {
		if err := after(w, res); err != nil {
			return res, fmt.Errorf("transcribe %s of audio: %w", res.AudioDuration, err)
		}
	}
	return res, nil
}

// decodeAuto decodes in on w in the language the last utterance was taken
// to be in, then detects in's language over the encoder output that
// decoding left in w's state (a decoder step, no second encoder pass), and
// decodes again only when the decision (decide: the wearer's languages,
// hysteresis) differs: a steady speaker costs one encoder pass per
// utterance, as a fixed language does (issue 24). Returns the segments, the
// index in t.langs of their language, whisper's probability of it among
// t.langs, and the encoder window they were decoded in.
func (t *Transcriber) decodeAuto(ctx context.Context, w *wctx, params *whisper.Params, in []float32) ([]segment, int, float64, int, error) {
	lang := int(t.lastLang.Load())
	decodeIn := func(lang int) ([]segment, int, error) {
		if err := params.SetLanguage(t.autoIDs[lang]); err != nil {
			return nil, 0, err
		}
		if lang < len(w.prompts) {
			w.prompts[lang].set(params)
		}
		return t.decodeWindow(ctx, w, params, in)
	}
	segs, audioCtx, err := decodeIn(lang)
	if err != nil {
		return nil, lang, 0, 0, err
	}
	var probs []float64
	if t.detectLang != nil { // unit tests of the packing
		probs = onehot(t.detectLang(in), len(t.autoIDs))
	} else {
		w.thread.do(func() { probs, err = detectEncoded(w.ctx, t.opts.Threads, t.autoIDs) })
		if err != nil { // the text is decoded: keep it, in the language it was decoded in
			t.log.Warn("language detection after decoding failed", "err", err)
			return segs, lang, 0, audioCtx, nil
		}
	}
	found := decide(lang, probs, t.opts.SwitchP)
	t.log.Debug("language of the decoded utterance", "decoded", t.langs[lang],
		"taken", t.langs[found], "p", probs)
	if found == lang {
		return segs, lang, probs[lang], audioCtx, nil
	}
	t.lastLang.Store(int32(found))
	segs, audioCtx, err = decodeIn(found)
	return segs, found, probs[found], audioCtx, err
}

// onehot is certainty of language i among n.
func onehot(i, n int) []float64 {
	p := make([]float64, n)
	p[i] = 1
	return p
}

// decodeWindow is decode in the encoder window Options.Window chooses for
// in: with steps, the smallest step in fits in, and when that decoding looks
// broken (steppedBroken) the full window again. Returns the window it
// decoded in (audio_ctx positions, fullCtx for the full window).
func (t *Transcriber) decodeWindow(ctx context.Context, w *wctx, params *whisper.Params, in []float32) ([]segment, int, error) {
	n := 0
	if t.opts.Window == WindowSteps {
		n = stepCtx(len(in), windowSteps, StepMargin)
	}
	if n > 0 {
		params.SetAudioCtx(n)
		segs, err := t.decode(ctx, w, params, in)
		params.SetAudioCtx(0)
		if err != nil {
			return nil, n, err
		}
		why := steppedBroken(segs, w.passes, n)
		t.log.Debug("stepped encoder window", "audio_ctx", n, "broken", why)
		if why == "" {
			return segs, n, nil
		}
	}
	segs, err := t.decode(ctx, w, params, in)
	return segs, fullCtx, err
}

// detectOn runs whisper's language detection on w, on w's thread: the
// probabilities of t.langs.
func (t *Transcriber) detectOn(w *wctx, samples []float32) (probs []float64, err error) {
	w.thread.do(func() { probs, err = detectLanguage(w.ctx, samples, t.opts.Threads, t.autoIDs) })
	return probs, err
}

// trailingQuiet returns where in's trailing quiet begins: the end of its
// last 20 ms frame whose RMS reaches a tenth (-20 dB) of the level of its
// louder frames (90th percentile), or floor if that is higher. Room noise
// after the last word stays under it; a word does not.
func trailingQuiet(in []float32, floor float64) int {
	return soundEnd(in, floor, 0.1)
}

// acquire waits for a free whisper context; release gives it back.
func (t *Transcriber) acquire(ctx context.Context) (*wctx, error) {
	var w *wctx
	select {
	case w = <-t.pool:
	case <-t.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-t.done: // Close is waiting for this slot
		t.pool <- w
		return nil, ErrClosed
	default:
	}
	return w, nil
}

func (t *Transcriber) release(w *wctx) { t.pool <- w }

// decode runs one whisper_full call on w (tests replace it through
// Transcriber.run) and returns whisper's segments. A cancelled ctx aborts it.
func (t *Transcriber) decode(ctx context.Context, w *wctx, params *whisper.Params, in []float32) ([]segment, error) {
	if t.run != nil {
		return t.run(ctx, params, in)
	}
	w.abort.set(false)
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { w.abort.set(true); close(fired) })
	quiet := trailingQuiet(in, t.opts.SilenceRMS)
	var st fullStats
	var err error
	w.thread.do(func() { st, err = runFull(w.ctx, params, in, quiet, w.abort, w.bias) })
	w.passes = st.passes
	t.log.Debug("whisper call", "audio", time.Duration(len(in))*time.Second/sampleRate,
		"encoder_passes", st.passes, "tail_skipped", st.skipped,
		"quiet_from", time.Duration(quiet)*time.Second/sampleRate)
	if !stop() {
		<-fired // a late abort must not hit this context's next call
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	eot, beg := w.ctx.Whisper_token_eot(), w.ctx.Whisper_token_beg()
	segs := make([]segment, w.ctx.Whisper_full_n_segments())
	for s := range segs {
		seg := segment{t0: w.ctx.Whisper_full_get_segment_t0(s), t1: w.ctx.Whisper_full_get_segment_t1(s),
			text: w.ctx.Whisper_full_get_segment_text(s)}
		n := w.ctx.Whisper_full_n_tokens(s)
		seg.untimed = n == 0 || w.ctx.Whisper_full_get_token_id(s, n-1) <= beg
		for k := 0; k < n; k++ {
			if w.ctx.Whisper_full_get_token_id(s, k) >= eot { // special and timestamp tokens
				continue
			}
			d := w.ctx.Whisper_full_get_token_data(s, k)
			seg.tokens = append(seg.tokens, token{text: w.ctx.Whisper_full_get_token_text(s, k),
				p: float64(w.ctx.Whisper_full_get_token_p(s, k)), t0: d.T0(), t1: d.T1()})
		}
		segs[s] = seg
	}
	if !t.opts.WhisperWordTimes {
		retime(segs, in, t.opts.SilenceRMS)
	}
	return segs, nil
}
