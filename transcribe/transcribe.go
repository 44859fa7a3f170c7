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
// Language "auto" on a multilingual model (issue 24): an utterance is
// decoded in the language the last one was detected in, and its own
// language is then read from one decoder step over the encoder output that
// decoding left in the state; only when the two differ is it decoded again.
// A steady speaker costs one encoder pass per utterance, as a fixed
// language does; a change of language costs one more decoding (in the wrong
// language first), and the first utterance a detection pass of its own.
// Detection stays restricted to AutoLanguages.
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

// AutoLanguages are the languages "auto" chooses among on a multilingual
// model: the product's. Whisper's open detection labels short English
// commands Japanese or Urdu (issue 15); restricted to these two it cannot.
var AutoLanguages = []string{"en", "nl"}

// Options configure a Transcriber.
type Options struct {
	ModelPath     string   // ggml whisper model file
	Language      string   // "nl", "en" or "auto" ("" means "auto": detect among AutoLanguages)
	InitialPrompt string   // text whisper sees as preceding the utterance; "" or "-" means none
	Terms         []string // domain terms appended to the prompt so whisper spells them as expected (config transcribe.contexts)
	Threads       int      // whisper threads per call; 0 means all cores
	Contexts      int      // whisper contexts (concurrent calls); 0 means 1, each holds its own copy of the model
	SilenceRMS    float64  // below this RMS audio is not transcribed; 0 means DefaultSilenceRMS
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
	Text           string
	Lang           string
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
	// autoIDs are whisper's ids of AutoLanguages when the language is
	// detected per utterance (auto on a multilingual model), else nil.
	autoIDs []int
	// lastLang is 1 + the index in AutoLanguages of the language the last
	// utterance was detected in (0: none yet): the next is first decoded in it.
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
	abort  abortFlag
	bias   hotBias   // Options.Hotwords in this context's tokens; zero when none
	thread *osThread // runs every whisper compute call on ctx (thread.go)
	passes int       // encoder passes of the last whisper_full on ctx
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
	if opts.InitialPrompt == "-" {
		opts.InitialPrompt = ""
	}
	if terms := strings.Join(nonEmpty(opts.Terms), ", "); terms != "" {
		opts.InitialPrompt = strings.TrimSpace(opts.InitialPrompt + " " + terms + ".")
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
	t := &Transcriber{opts: opts, log: opts.Logger, lang: lang, header: h, pool: make(chan *wctx, opts.Contexts), done: make(chan struct{})}
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
		for _, l := range AutoLanguages {
			t.autoIDs = append(t.autoIDs, t.all[0].ctx.Whisper_lang_id(l))
		}
	}
	t.log.Info("whisper model loaded", "model", opts.ModelPath, "language", lang,
		"multilingual", t.multi, "contexts", opts.Contexts, "threads", opts.Threads, "window", opts.Window)
	return t, nil
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
	p := ctx.Whisper_full_default_params(whisper.SAMPLING_GREEDY)
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
	if t.opts.InitialPrompt != "" {
		p.SetInitialPrompt(t.opts.InitialPrompt)
	}
	seqs := hotwordTokens(ctx, t.opts.Hotwords)
	t.log.Debug("hotword bias", "hotwords", t.opts.Hotwords, "spellings", len(seqs), "bias", t.opts.HotwordBias)
	bias := newHotBias(seqs, ctx.Whisper_token_eot(), t.opts.HotwordBias, hotwordCont*t.opts.HotwordBias)
	return &wctx{ctx: ctx, params: &p, abort: newAbortFlag(), bias: bias, thread: startOSThread()}, nil
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
		segs, lang, audioCtx, err = t.decodeAuto(ctx, w, &params, in)
		res.Lang = AutoLanguages[lang]
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

// decodeAuto decodes in on w in the language the last utterance was
// detected in, then detects in's language over the encoder output that
// decoding left in w's state (a decoder step, no second encoder pass), and
// decodes again only when the two differ: a steady speaker costs one
// encoder pass per utterance instead of detection's pass plus decoding's
// (issue 24). The first utterance is detected first (its own pass).
// Returns the segments, the index in AutoLanguages of their language and
// the encoder window they were decoded in.
func (t *Transcriber) decodeAuto(ctx context.Context, w *wctx, params *whisper.Params, in []float32) ([]segment, int, int, error) {
	var audioCtx int
	decodeIn := func(lang int) ([]segment, int, int, error) {
		if err := params.SetLanguage(t.autoIDs[lang]); err != nil {
			return nil, lang, 0, err
		}
		segs, n, err := t.decodeWindow(ctx, w, params, in)
		audioCtx = n
		return segs, lang, n, err
	}
	lang := int(t.lastLang.Load()) - 1
	if lang < 0 {
		// No utterance yet: a guess that is wrong costs a whole decoding in
		// the wrong language (measured: Dutch decoded as English ran into
		// temperature fallbacks, 3x the CPU), so detect first, as before.
		var err error
		if t.detectLang != nil { // unit tests of the packing
			lang = t.detectLang(in)
		} else if lang, _, err = t.detectOn(w, in); err != nil {
			return nil, 0, 0, err
		}
		t.lastLang.Store(int32(lang + 1))
		return decodeIn(lang)
	}
	segs, _, _, err := decodeIn(lang)
	if err != nil {
		return nil, lang, 0, err
	}
	var found int
	if t.detectLang != nil { // unit tests of the packing
		found = t.detectLang(in)
	} else {
		var p float64
		w.thread.do(func() { found, p, err = detectEncoded(w.ctx, t.opts.Threads, t.autoIDs) })
		if err != nil { // the text is decoded: keep it, in the language it was decoded in
			t.log.Warn("language detection after decoding failed", "err", err)
			return segs, lang, audioCtx, nil
		}
		t.log.Debug("language detected on the decoded utterance", "decoded", AutoLanguages[lang],
			"detected", AutoLanguages[found], "p", p)
	}
	if found == lang {
		return segs, lang, audioCtx, nil
	}
	t.lastLang.Store(int32(found + 1))
	return decodeIn(found)
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

// detectOn runs whisper's language detection on w, on w's thread.
func (t *Transcriber) detectOn(w *wctx, samples []float32) (i int, p float64, err error) {
	w.thread.do(func() { i, p, err = detectLanguage(w.ctx, samples, t.opts.Threads, t.autoIDs) })
	return i, p, err
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
	eot := w.ctx.Whisper_token_eot()
	segs := make([]segment, w.ctx.Whisper_full_n_segments())
	for s := range segs {
		seg := segment{t0: w.ctx.Whisper_full_get_segment_t0(s), t1: w.ctx.Whisper_full_get_segment_t1(s),
			text: w.ctx.Whisper_full_get_segment_text(s)}
		for k := 0; k < w.ctx.Whisper_full_n_tokens(s); k++ {
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
