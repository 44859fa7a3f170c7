package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/model"
	"github.com/agora/agorad/wake"
)

// Default models of `agorad transcribe`. The VAD is tried under its catalog
// name first, then under the name of the identical copy in shared/models.
var (
	defaultWhisperModel = "base"
	defaultVADModels    = []string{"silero-v6.2.0", "for-tests-silero-v6.2.0-ggml.bin"}
)

// utteranceTranscriber is what the command needs from transcribe.Transcriber.
type utteranceTranscriber interface {
	Transcribe(ctx context.Context, samples []float32) (transcribe.Result, error)
	Close() error
}

// batchTranscriber packs utterances that are waiting together into shared
// whisper windows (transcribe.Transcriber.TranscribeBatch).
type batchTranscriber interface {
	TranscribeBatch(ctx context.Context, utts [][]float32) ([]transcribe.Result, error)
}

// prober is a voice activity detector the segmenter can own.
type prober interface {
	segment.Prober
	Close() error
}

// pipeline builds the components `agorad transcribe` runs; tests swap in fakes.
type pipeline interface {
	Resolve(kind, name, path string) (string, error)
	Transcriber(opts transcribe.Options) (utteranceTranscriber, error)
	VAD(path string) (prober, error)
}

type realPipeline struct{}

func (realPipeline) Resolve(kind, name, path string) (string, error) {
	return model.Resolve(kind, name, path)
}

func (realPipeline) Transcriber(opts transcribe.Options) (utteranceTranscriber, error) {
	return transcribe.New(opts)
}

func (realPipeline) VAD(path string) (prober, error) { return vad.Open(path, vad.Options{}) }

// utteranceJSON is one line of `agorad transcribe` output.
type utteranceJSON struct {
	File         string    `json:"file"`
	StartMS      int64     `json:"start_ms"` // speech bounds in the file, padding excluded
	EndMS        int64     `json:"end_ms"`
	PadStartMS   int64     `json:"pad_start_ms"` // where the utterance's audio (pre-roll included) starts: words' and the spotter's times are from here
	Text         string    `json:"text"`
	Lang         string    `json:"lang"`
	LangP        float64   `json:"lang_p,omitempty"` // whisper's probability of lang among the wearer's languages (language auto)
	Confidence   float64   `json:"confidence"`
	ProcessingMS int64     `json:"processing_ms"`
	Split        bool      `json:"split,omitempty"`    // cut by the maximum utterance length
	Rejected     string    `json:"rejected,omitempty"` // why the hallucination guard dropped the text
	Wake         *wakeJSON `json:"wake,omitempty"`
	Spot         *spotJSON `json:"spot,omitempty"` // the keyword spotter's best window, when it runs
	// TextWake is what whisper's text alone says, when the spotter runs: one
	// run measures both (bench/wakebench).
	TextWake *wakeJSON `json:"text_wake,omitempty"`
	// Words are whisper's words with their times, when the spotter ran:
	// what wake.Rules.MatchSpot placed the name among.
	Words []wordJSON `json:"words,omitempty"`
}

type wordJSON struct {
	Text    string `json:"text"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
}

type spotJSON struct {
	Score float64 `json:"score"`
	EndMS int64   `json:"end_ms"` // from the utterance's start (padding included)
	Heard bool    `json:"heard"`
	MS    int64   `json:"ms"` // time the spotter took on this utterance
	// With the late head, the parts of Score (kws.Hit.Head, Late).
	Head float64 `json:"head,omitempty"`
	Late float64 `json:"late,omitempty"`
	// The audio after the name transcribed again (wake.Rules.TailFrom),
	// when it was: from where, what whisper wrote, and the time it took.
	TailFromMS *int64 `json:"tail_from_ms,omitempty"`
	Tail       string `json:"tail,omitempty"`
	TailMS     int64  `json:"tail_ms,omitempty"`
	TailError  string `json:"tail_error,omitempty"`
}

type wakeJSON struct {
	Action    wake.Action `json:"action"`
	Remainder string      `json:"remainder"`
	Before    string      `json:"before,omitempty"`
}

// wakeOf is m as JSON, nil when it is no wake phrase.
func wakeOf(m wake.Match) *wakeJSON {
	if m.Action == wake.None {
		return nil
	}
	return &wakeJSON{Action: m.Action, Remainder: m.Remainder, Before: m.Before}
}

// vocabularyFlag is transcribe.vocabulary as --vocabulary's value.
func vocabularyFlag(v map[string]string) string {
	var parts []string
	for l, src := range v {
		parts = append(parts, l+"="+src)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// cmdTranscribe runs each file through the daemon's pipeline (decode,
// segment with the Silero VAD, whisper, wake rules) and writes one JSON
// object per utterance. A file that fails is reported on stderr and the
// others are still done (exit 1); a usage or model problem exits 2.
func cmdTranscribe(ctx context.Context, args []string, stdout, stderr io.Writer, p pipeline) int {
	fs := flag.NewFlagSet("agorad transcribe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", defaultWhisperModel, "whisper model: catalog name (agorad model list) or path to a ggml .bin")
	vadModel := fs.String("vad-model", "", "Silero VAD model: catalog name or path (default "+strings.Join(defaultVADModels, ", then ")+")")
	shipped := configs.Default().Transcribe
	lang := fs.String("lang", shipped.Language, "language: nl, en or auto (as the daemon's transcribe.language; auto chooses among --languages)")
	languages := fs.String("languages", strings.Join(shipped.Languages, ","), "the wearer's languages auto chooses among, the first assumed until another is heard (as transcribe.languages)")
	langSwitch := fs.Float64("language-switch", shipped.LanguageSwitch, "whisper's probability another of --languages needs to take over from the one heard last (as transcribe.language_switch)")
	vocabulary := fs.String("vocabulary", vocabularyFlag(shipped.Vocabulary), "terms added to the prompt per language, as transcribe.vocabulary: LANG=LIST[,LANG=LIST] (a built-in list such as inspection-nl, or a file); \"\" for none")
	beam := fs.Int("beam", 0, "beam size (0 or 1: greedy, as the daemon decodes)")
	fallback := fs.Bool("fallback", true, "whisper's temperature fallback (decode again hotter when the text looks broken), as the daemon")
	threads := fs.Int("threads", 0, "whisper threads (0: all cores)")
	prompt := fs.String("prompt", "", "initial prompt for whisper (default none)")
	wakeBias := fs.Float64("wake-bias", wake.DefaultBias, "logit bias toward the wake word's tokens, as the daemon's wake.bias (0: off)")
	spotDir := fs.String("spotter", "", "keyword spotter: directory of its front end, or \"off\" (default: kws/ in the model places, off with a warning when missing)")
	spotThreshold := fs.Float64("spotter-threshold", 0, "keyword spotter threshold (0: the trained head's)")
	spotHead := fs.String("spotter-head", "", "keyword spotter heads: a directory the recipe wrote (make kws-head: head.json, and late.json, gate.json when there) instead of the built-in ones for \"Agora\"")
	wakeFuse := fs.Float64("wake-fuse", wake.DefaultFuse, "spotter score from which a name whisper wrote something like counts, as the daemon's wake.fuse (0: off)")
	wakeFuseLike := fs.Float64("wake-fuse-like", wake.DefaultFuseLike, "how much whisper's words must sound like the name in the fuse band, as wake.fuse_like")
	window := fs.String("window", configs.Default().Transcribe.Window, "whisper's encoder window per utterance, as the daemon's transcribe.window: full (30 s) or steps (10.24/15.36 s when the utterance fits with 2 s to spare)")
	whisperTimes := fs.Bool("whisper-word-times", false, "words get whisper.cpp's own token times, not agorad's (for bench/wordtimes)")
	pack := fs.Bool("pack", true, "pack consecutive utterances into shared 30 s whisper windows (one call per window, not per utterance)")
	verbose := fs.Bool("v", false, "log debug details (whisper's own logging included) on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agorad transcribe [flags] FILE...\n\nWrites one JSON object per utterance on stdout.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	files := fs.Args()
	if len(files) == 0 {
		fmt.Fprintln(stderr, "agorad transcribe: no input files")
		fs.Usage()
		return exitUsage
	}
	switch *lang {
	case "nl", "en", "auto":
	default:
		fmt.Fprintf(stderr, "agorad transcribe: --lang %q: want nl, en or auto\n", *lang)
		return exitUsage
	}
	if *threads < 0 {
		fmt.Fprintf(stderr, "agorad transcribe: --threads %d: want 0 or more\n", *threads)
		return exitUsage
	}
	if *langSwitch < 0.5 || *langSwitch > 1 {
		fmt.Fprintf(stderr, "agorad transcribe: --language-switch %g: want 0.5..1\n", *langSwitch)
		return exitUsage
	}
	vcfg := configs.Transcribe{Vocabulary: map[string]string{}}
	for _, kv := range strings.Split(*vocabulary, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		l, src, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintf(stderr, "agorad transcribe: --vocabulary %q: want LANG=LIST (e.g. nl=inspection-nl)\n", kv)
			return exitUsage
		}
		vcfg.Vocabulary[strings.TrimSpace(l)] = strings.TrimSpace(src)
	}
	vocab, err := vcfg.VocabularyTerms()
	if err != nil {
		fmt.Fprintf(stderr, "agorad transcribe: --vocabulary: %v\n", err)
		return exitUsage
	}
	var wearerLangs []string
	for _, l := range strings.Split(*languages, ",") {
		if l = strings.TrimSpace(l); l != "" {
			wearerLangs = append(wearerLangs, l)
		}
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	whisperPath, err := resolveFlag(p, "whisper", *model)
	if err != nil {
		fmt.Fprintf(stderr, "agorad transcribe: %v\n", err)
		return exitUsage
	}
	vadPath, err := resolveVAD(p, *vadModel)
	if err != nil {
		fmt.Fprintf(stderr, "agorad transcribe: %v\n", err)
		return exitUsage
	}
	wcfg := wake.DefaultConfig()
	wcfg.Bias = *wakeBias
	wcfg.Fuse, wcfg.FuseLike = *wakeFuse, *wakeFuseLike
	rules, err := wake.New(wcfg)
	if err != nil {
		fmt.Fprintf(stderr, "agorad transcribe: %v\n", err)
		return exitUsage
	}
	judge := wakeJudge{rules: rules}
	if *spotDir != "off" {
		sp, err := openSpotter(*spotDir, *spotHead, *spotThreshold)
		switch {
		case err != nil && (*spotDir != "" || *spotHead != ""):
			fmt.Fprintf(stderr, "agorad transcribe: %v\n", err)
			return exitUsage
		case err != nil:
			fmt.Fprintf(stderr, "agorad transcribe: warning: %v; the wake word is found in whisper's text alone\n", err)
		default:
			defer sp.Close()
			judge.spot = sp
		}
	}
	// The transcriber first: it routes whisper/ggml logging (the VAD's too) to slog.
	tr, err := p.Transcriber(transcribe.Options{ModelPath: whisperPath, Language: *lang, Languages: wearerLangs, SwitchP: *langSwitch,
		Threads: *threads, InitialPrompt: *prompt, Terms: shipped.Contexts, Vocabulary: vocab, Beam: *beam, NoFallback: !*fallback,
		Hotwords: wcfg.Hotwords(), HotwordBias: wcfg.Bias, Window: transcribe.Window(*window), WhisperWordTimes: *whisperTimes, Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "agorad transcribe: %v\n", err)
		return exitUsage
	}
	defer tr.Close()
	judge.tail = tr
	det, err := p.VAD(vadPath)
	if err != nil {
		fmt.Fprintf(stderr, "agorad transcribe: %v\n", err)
		return exitUsage
	}
	defer det.Close()

	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	code := exitOK
	var run utteranceTranscriber = tr
	if !*pack {
		run = onePerCall{tr}
	}
	for _, file := range files {
		if err := transcribeFile(ctx, file, det, run, judge, enc); err != nil {
			fmt.Fprintf(stderr, "agorad transcribe: %v\n", err)
			code = exitFailed
			if ctx.Err() != nil {
				break
			}
		}
	}
	return code
}

// onePerCall hides TranscribeBatch: one whisper call per utterance (--pack=false).
type onePerCall struct{ utteranceTranscriber }

// resolveFlag treats a value that names an existing file or contains a path
// separator as a path, anything else as a model name.
func resolveFlag(p pipeline, kind, value string) (string, error) {
	if strings.ContainsRune(value, os.PathSeparator) || strings.ContainsRune(value, '/') {
		return p.Resolve(kind, value, value)
	}
	if st, err := os.Stat(value); err == nil && !st.IsDir() {
		return p.Resolve(kind, value, value)
	}
	return p.Resolve(kind, value, "")
}

func resolveVAD(p pipeline, value string) (string, error) {
	if value != "" {
		return resolveFlag(p, "vad", value)
	}
	var first error
	for _, name := range defaultVADModels {
		path, err := p.Resolve("vad", name, "")
		if err == nil {
			return path, nil
		}
		if first == nil {
			first = err
		}
	}
	return "", first
}

// transcribeFile runs one file through the pipeline. Utterances already
// written stay written when a later one fails.
func transcribeFile(ctx context.Context, file string, det prober, tr utteranceTranscriber, judge wakeJudge, enc *json.Encoder) error {
	// Streamed: memory does not grow with the file (a 2 GB WAV is decoded
	// 100 ms at a time), and each read checks ctx, so SIGTERM stops it.
	src, err := audio.OpenWAVSource(file, 0, time.Now())
	if err != nil {
		if !strings.Contains(err.Error(), file) {
			err = fmt.Errorf("%s: %w", file, err)
		}
		return err
	}
	defer src.Close()
	return transcribeSource(ctx, file, src, det, tr, judge, enc)
}

// transcribeSamples runs 16 kHz mono samples, named file in the output,
// through the pipeline.
func transcribeSamples(ctx context.Context, file string, samples []float32, det prober, tr utteranceTranscriber, judge wakeJudge, enc *json.Encoder) error {
	src := audio.NewSliceSource(samples, 0, time.Now())
	defer src.Close()
	return transcribeSource(ctx, file, src, det, tr, judge, enc)
}

// transcribeSource runs a 16 kHz mono source, named file in the output,
// through the pipeline.
func transcribeSource(ctx context.Context, file string, src audio.Source, det prober, tr utteranceTranscriber, judge wakeJudge, enc *json.Encoder) error {
	det.Reset() // each file is its own stream
	seg, err := segment.New(det, segment.DefaultConfig())
	if err != nil {
		return fmt.Errorf("%s: segmenter: %w", file, err)
	}
	write := func(u segment.Utterance, res transcribe.Result) error {
		out := utteranceJSON{
			File:         file,
			StartMS:      u.SpeechStart * 1000 / audio.SampleRate,
			EndMS:        u.SpeechEnd * 1000 / audio.SampleRate,
			PadStartMS:   u.PadStart * 1000 / audio.SampleRate,
			Text:         res.Text,
			Lang:         res.Lang,
			LangP:        math.Round(res.LangP*1000) / 1000,
			Confidence:   math.Round(res.Confidence*1000) / 1000,
			ProcessingMS: res.ProcessingTime.Milliseconds(),
			Split:        u.Split,
			Rejected:     res.Rejected,
		}
		spotStart := time.Now()
		j, err := judge.match(ctx, u.Samples, res)
		spotMS := time.Since(spotStart).Milliseconds()
		if err != nil {
			return fmt.Errorf("%s: utterance at %s: %w", file, msDuration(u.SpeechStart), err)
		}
		out.Wake = wakeOf(j.m)
		if hit := j.hit; hit != nil {
			out.Spot = &spotJSON{Score: math.Round(hit.Score*1e5) / 1e5, EndMS: hit.End.Milliseconds(), Heard: hit.Heard, MS: spotMS,
				Head: math.Round(hit.Head*1e5) / 1e5, Late: math.Round(hit.Late*1e5) / 1e5}
			if t := j.tail; t != nil {
				from := t.from.Milliseconds()
				out.Spot.TailFromMS, out.Spot.Tail, out.Spot.TailMS = &from, t.text, t.took.Milliseconds()
				if t.err != nil {
					out.Spot.TailError = t.err.Error()
				}
				out.Spot.MS -= out.Spot.TailMS
			}
			out.TextWake = wakeOf(j.text)
			// Every scored utterance's words: the benchmark rescores the
			// fused verdict at other thresholds without whisper.
			if res.Text != "" {
				for _, w := range res.Words {
					out.Words = append(out.Words, wordJSON{Text: w.Text, StartMS: w.Start.Milliseconds(), EndMS: w.End.Milliseconds()})
				}
			}
		}
		if err := enc.Encode(out); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
		return nil
	}
	// With a batch transcriber utterances wait until a whisper window is
	// full (or the file ends) and go through whisper together.
	batch, _ := tr.(batchTranscriber)
	var pending []segment.Utterance
	var pendingLen int // samples, gaps included
	gap, window := int(transcribe.PackGap*audio.SampleRate/time.Second), int(transcribe.PackWindow*audio.SampleRate/time.Second)
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		utts := make([][]float32, len(pending))
		for i, u := range pending {
			utts[i] = u.Samples
		}
		results, err := batch.TranscribeBatch(ctx, utts)
		for i, res := range results {
			if err := write(pending[i], res); err != nil {
				return err
			}
		}
		if err != nil {
			return fmt.Errorf("%s: utterance at %s: %w", file, msDuration(pending[len(results)].SpeechStart), err)
		}
		pending, pendingLen = pending[:0], 0
		return nil
	}
	emit := func(utts []segment.Utterance) error {
		for _, u := range utts {
			if batch != nil {
				if pendingLen > 0 && pendingLen+gap+len(u.Samples) > window {
					if err := flush(); err != nil {
						return err
					}
				}
				if pendingLen > 0 {
					pendingLen += gap
				}
				pending, pendingLen = append(pending, u), pendingLen+len(u.Samples)
				continue
			}
			res, err := tr.Transcribe(ctx, u.Samples)
			if err != nil {
				return fmt.Errorf("%s: utterance at %s: %w", file, msDuration(u.SpeechStart), err)
			}
			if err := write(u, res); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		c, err := src.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !strings.Contains(err.Error(), file) {
				err = fmt.Errorf("%s: read: %w", file, err)
			}
			return err
		}
		utts, err := seg.Push(c)
		if err != nil {
			return fmt.Errorf("%s: segment: %w", file, err)
		}
		if err := emit(utts); err != nil {
			return err
		}
	}
	if err := emit(seg.Flush()); err != nil {
		return err
	}
	if batch != nil {
		return flush()
	}
	return nil
}

func msDuration(offset int64) time.Duration {
	return time.Duration(offset) * time.Second / audio.SampleRate
}
