// Command specwait measures, on real speech, the two waits of a spoken turn's
// end (issue 22): the hangover that ends a turn (segment.hangover: how often
// one clip, a question with its natural pauses, is cut in two or more) and
// how soon into the silence whisper starts on the utterance speculatively
// (segment.speculate_after: how many of those runs are dropped because the
// speaker went on, and the whisper time they cost per hour of speech).
//
// Each clip (the English reference clips of shared/audio/MANIFEST.tsv, jfk
// among them) is segmented alone by the real Silero VAD and the daemon's
// segmenter, with 1 s of silence before and 3 s after. A preview
// (segment.Tentative) is a speculative run; one whose utterance Push never
// returns was dropped. With -model, each dropped preview is transcribed to
// time what it costs: run out (whisper.cpp sees the daemon's abort only
// after its encoder, so a dropped run costs about a whole call), and up to
// where the speech that dropped it resumed (what an abortable encoder would
// cost). Whisper times are wall times of
// -threads threads on whatever else the machine runs: state the load.
//
//	go run ./bench/specwait -model models/ggml-tiny.en-q8_0.bin
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/wer"
)

func durations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

type key struct{ pad, start, end int64 }

// result of one clip under one (hangover, after).
type result struct {
	utterances int
	previews   int
	dropped    [][]float32     // audio of the dropped previews
	windows    []time.Duration // per dropped preview: from its start to the speech that dropped it (the daemon aborts whisper there)
}

func segmentClip(det *vad.Detector, cfg segment.Config, after time.Duration, samples []float32) (result, error) {
	det.Reset()
	seg, err := segment.New(det, cfg)
	if err != nil {
		return result{}, err
	}
	var r result
	previews := map[key][]float32{}
	var order []key
	emitted := map[key]bool{}
	seenAt := map[key]int{}
	window := map[key]time.Duration{}
	var cur *key      // the preview outstanding
	const chunk = 320 // 20 ms, as the microphone delivers
	t0 := time.Now()
	for i := 0; i < len(samples); i += chunk {
		end := min(i+chunk, len(samples))
		us, err := seg.Push(audio.Chunk{Samples: samples[i:end], Offset: int64(i), Time: t0.Add(time.Duration(i) * time.Second / audio.SampleRate)})
		if err != nil {
			return r, err
		}
		for _, u := range us {
			emitted[key{u.PadStart, u.SpeechStart, u.SpeechEnd}] = true
			r.utterances++
		}
		p, ok := seg.Tentative(after)
		k := key{p.PadStart, p.SpeechStart, p.SpeechEnd}
		if cur != nil && (!ok || *cur != k) {
			if !emitted[*cur] {
				window[*cur] = time.Duration(end-seenAt[*cur]) * time.Second / audio.SampleRate
			}
			cur = nil
		}
		if ok {
			if _, seen := previews[k]; !seen {
				previews[k] = p.Samples
				order = append(order, k)
				seenAt[k] = end
				cur = &k
			}
		}
	}
	for _, u := range seg.Flush() {
		emitted[key{u.PadStart, u.SpeechStart, u.SpeechEnd}] = true
		r.utterances++
	}
	r.previews = len(order)
	for _, k := range order {
		if !emitted[k] {
			r.dropped = append(r.dropped, previews[k])
			r.windows = append(r.windows, window[k])
		}
	}
	return r, nil
}

func main() {
	manifest := flag.String("manifest", "../shared/audio/MANIFEST.tsv", "clip manifest (its folder holds the clips)")
	vadPath := flag.String("vad", "../shared/models/for-tests-silero-v6.2.0-ggml.bin", "Silero VAD (ggml)")
	model := flag.String("model", "", "whisper model to time the dropped runs with (empty: count only)")
	threads := flag.Int("threads", 2, "whisper threads")
	hangovers := flag.String("hangover", "0.6s,0.8s,1s,1.2s", "turn-ending silences to try")
	afters := flag.String("after", "250ms,400ms,600ms,800ms", "silences after which the speculative run starts")
	early := flag.String("early", "", "short waits to try for the early end of a complete turn (issue 47), e.g. 300ms,400ms; needs -model")
	dutch := flag.String("dutch", "", "with -early: a folder of real Dutch, metadata.psv (id|transcript) and id.wav")
	flag.BoolVar(&verbose, "v", false, "with -early: log each preview's text and decision")
	ruleNames := flag.String("rules", "", "with -early: the rules to try, comma-separated (punctuation, turnend.Complete, complete question; empty: all)")
	only := flag.String("only", "", "with -early: only these clips (comma-separated names without extension)")
	dutchOnly := flag.Bool("dutch-only", false, "with -early -dutch: skip the English clips")
	dutchModel := flag.String("dutch-model", "models/ggml-base-q8_0.bin", "with -dutch: the multilingual whisper model")
	flag.Parse()
	hs, err := durations(*hangovers)
	if err != nil {
		fail("-hangover: %v", err)
	}
	as, err := durations(*afters)
	if err != nil {
		fail("-after: %v", err)
	}
	clips, err := wer.ReadManifest(*manifest)
	if err != nil {
		fail("%v", err)
	}
	clips = wer.English(clips)
	det, err := vad.Open(*vadPath, vad.Options{Threads: 1})
	if err != nil {
		fail("%v", err)
	}
	defer det.Close()
	var w *transcribe.Transcriber
	if *model != "" {
		if w, err = transcribe.New(transcribe.Options{ModelPath: *model, Language: "en", Threads: *threads, Window: transcribe.WindowSteps,
			Logger: slog.New(slog.DiscardHandler)}); err != nil {
			fail("%v", err)
		}
		defer w.Close()
	}
	dir := filepath.Dir(*manifest)
	audios := make([][]float32, len(clips))
	var speech float64
	for i, c := range clips {
		s, err := audio.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			fail("%v", err)
		}
		audios[i] = append(append(make([]float32, audio.SampleRate), s...), make([]float32, 3*audio.SampleRate)...)
		speech += float64(len(s)) / audio.SampleRate
	}
	fmt.Printf("%d English clips, %.1f min of audio; Silero VAD, segment defaults but for the hangover\n\n", len(clips), speech/60)
	if *early != "" {
		shorts, err := durations(*early)
		if err != nil {
			fail("-early: %v", err)
		}
		if w == nil {
			fail("-early needs -model (the preview's text decides)")
		}
		sets := map[string][2][]clip{}
		var en [2][]clip
		for i, c := range clips {
			en[i%2] = append(en[i%2], clip{name: c.File, samples: audios[i], w: w})
		}
		sets["English (tiny.en)"] = en
		order := []string{"English (tiny.en)"}
		if *dutchOnly {
			order = nil
		}
		if *dutch != "" {
			nl, err := transcribe.New(transcribe.Options{ModelPath: *dutchModel, Language: "nl", Threads: *threads, Window: transcribe.WindowSteps,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				fail("%v", err)
			}
			defer nl.Close()
			ids, err := readPSV(filepath.Join(*dutch, "metadata.psv"))
			if err != nil {
				fail("%v", err)
			}
			var halves [2][]clip
			for i, id := range ids {
				s, err := audio.ReadFile(filepath.Join(*dutch, id+".wav"))
				if err != nil {
					fail("%v", err)
				}
				halves[i%2] = append(halves[i%2], padClip(id, s, nl))
			}
			name := "Dutch (" + filepath.Base(*dutchModel) + ")"
			sets[name] = halves
			order = append(order, name)
		}
		if *only != "" {
			keep := map[string]bool{}
			for _, n := range strings.Split(*only, ",") {
				keep[strings.TrimSpace(n)] = true
			}
			for name, halves := range sets {
				for i := range halves {
					var kept []clip
					for _, c := range halves[i] {
						if keep[strings.TrimSuffix(filepath.Base(c.name), ".wav")] {
							kept = append(kept, c)
						}
					}
					halves[i] = kept
				}
				sets[name] = halves
			}
		}
		earlyTables(det, sets, order, shorts, pickRules(*ruleNames))
		return
	}

	fmt.Println("| hangover | clips cut in two or more | jfk (fw_jfk.wav) utterances | clips cut |")
	fmt.Println("|---|---|---|---|")
	for _, h := range hs {
		cfg := segment.DefaultConfig()
		cfg.MinSilence = h
		cut, jfk := 0, 0
		var names []string
		for i, c := range clips {
			r, err := segmentClip(det, cfg, cfg.PostPad, audios[i])
			if err != nil {
				fail("%s: %v", c.File, err)
			}
			if r.utterances > 1 {
				cut++
				names = append(names, strings.TrimSuffix(c.File, ".wav"))
			}
			if c.File == "fw_jfk.wav" {
				jfk = r.utterances
			}
		}
		fmt.Printf("| %v | %d of %d | %d | %s |\n", h, cut, len(clips), jfk, strings.Join(names, " "))
	}

	cfg := segment.DefaultConfig()
	fmt.Printf("\nspeculative runs at hangover %v (the default):\n\n", cfg.MinSilence)
	// whisper.cpp checks the abort only after its encoder (the 30 s
	// window, most of a call): a dropped run costs about a whole call. The
	// "until speech resumed" column is the bound a fully abortable whisper
	// would reach.
	fmt.Println("| speculate after | whisper hidden per turn | runs | dropped (speech went on) | dropped audio s | whisper s of dropped runs | per hour of speech | if aborted where speech resumed |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, a := range as {
		runs, dropped := 0, 0
		var droppedAudio float64
		var cost, aborted time.Duration
		for i, c := range clips {
			r, err := segmentClip(det, cfg, a, audios[i])
			if err != nil {
				fail("%s: %v", c.File, err)
			}
			runs += r.previews
			dropped += len(r.dropped)
			for i, d := range r.dropped {
				droppedAudio += float64(len(d)) / audio.SampleRate
				if w != nil {
					began := time.Now()
					if _, err := w.Transcribe(context.Background(), d); err != nil {
						fail("%s: transcribe: %v", c.File, err)
					}
					took := time.Since(began)
					cost += took
					aborted += min(took, r.windows[i])
				}
			}
		}
		costS, perHour, abortS := "-", "-", "-"
		if w != nil {
			costS = strconv.FormatFloat(cost.Seconds(), 'f', 2, 64)
			perHour = fmt.Sprintf("%.0f s of whisper (%.1f %% of the time)", cost.Seconds()*3600/speech, 100*cost.Seconds()/speech)
			abortS = fmt.Sprintf("%.2f s (%.0f s per hour)", aborted.Seconds(), aborted.Seconds()*3600/speech)
		}
		fmt.Printf("| %v | %v | %d | %d | %.1f | %s | %s | %s |\n", a, cfg.MinSilence-max(a, cfg.PostPad), runs, dropped, droppedAudio, costS, perHour, abortS)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "specwait: "+format+"\n", a...)
	os.Exit(1)
}
