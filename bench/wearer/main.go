// Command wearer measures the wearer gate (audio/wearer) on babble: the
// English reference clips spoken by "the wearer" with four other speakers
// of the set talking all the time BelowDB under the wearer, through the
// real Silero VAD, the segmenter, the gate and whisper, as the daemon runs
// them. It prints, per babble level, with the gate off and on: the share of
// notes holding words of the other speakers, the wearer's WER, whisper
// calls; then the utterances published from babble alone.
//
//	go run ./bench/wearer -model models/ggml-tiny.en-q8_0.bin
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/wer"
)

// wearerDBFS is the wearer's active level at the headset
// (testaudio.ActiveDB over activeRange: pauses left out, independent of the
// gate's own measure); each clip is set to it ± jitterDB.
const (
	wearerDBFS  = -26.0
	activeRange = 35.0
	jitterDB    = 2.0
	talkers     = 4
)

type placed struct {
	start, end int // samples in the stream
	clip       int
}

type stream struct {
	s      []float32
	wearer []placed // the wearer's clips
	babble []placed // the other speakers' clips
}

func main() {
	manifest := flag.String("manifest", "../shared/audio/MANIFEST.tsv", "clip manifest (its folder holds the clips)")
	vadPath := flag.String("vad", "../shared/models/for-tests-silero-v6.2.0-ggml.bin", "Silero VAD (ggml)")
	model := flag.String("model", "models/ggml-tiny.en-q8_0.bin", "whisper model")
	threads := flag.Int("threads", 2, "whisper threads")
	levels := flag.String("below", "10,15,20", "babble levels under the wearer (dB)")
	every := flag.Int("every", 3, "every n-th English clip is the wearer's; the others make the babble")
	aloneMin := flag.Float64("alone", 10, "minutes of babble alone (at 15 dB under the wearer) through the gate")
	aloneOff := flag.Float64("alone-off", 3, "minutes of that babble with the gate off (whisper on all of it: slow)")
	expected := flag.Float64("expected", wearer.DefaultConfig().ExpectedDBFS, "wearer.expected_dbfs")
	below := flag.Float64("below-db", wearer.DefaultConfig().BelowDB, "wearer.below_db")
	frameBelow := flag.Float64("frame-below-db", wearer.DefaultConfig().FrameBelowDB, "wearer.frame_below_db")
	wordBelow := flag.Float64("word-below-db", wearer.DefaultConfig().WordBelowDB, "wearer.word_below_db")
	words := flag.Bool("words", true, "the word check after whisper (false: every word of a kept utterance is kept)")
	withOff := flag.Bool("off", true, "also run with the gate off (the before)")
	flag.Parse()

	clips, err := wer.ReadManifest(*manifest)
	if err != nil {
		fail("%v", err)
	}
	clips = wer.English(clips)
	dir := filepath.Dir(*manifest)
	audios := make([][]float32, len(clips))
	for i, c := range clips {
		if audios[i], err = audio.ReadFile(filepath.Join(dir, c.File)); err != nil {
			fail("%v", err)
		}
	}
	texts = map[int]string{}
	for i, c := range clips {
		texts[i] = c.Transcript
	}
	var own, pool []int
	for i := range clips {
		if i%*every == 0 {
			own = append(own, i)
		} else {
			pool = append(pool, i)
		}
	}
	det, err := vad.Open(*vadPath, vad.Options{Threads: 1})
	if err != nil {
		fail("%v", err)
	}
	defer det.Close()
	w, err := transcribe.New(transcribe.Options{ModelPath: *model, Language: "en", Threads: *threads, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fail("%v", err)
	}
	defer w.Close()

	on := wearer.DefaultConfig()
	on.ExpectedDBFS, on.BelowDB, on.WordBelowDB, on.FrameBelowDB = *expected, *below, *wordBelow, *frameBelow
	off := on
	off.Enabled = false
	checkWords = *words
	cfgs := []wearer.Config{on}
	if *withOff {
		cfgs = []wearer.Config{off, on}
	}
	var ownSec float64
	var gateLevels []float64
	for _, i := range own {
		ownSec += float64(len(audios[i])) / audio.SampleRate
		gateLevels = append(gateLevels, wearer.Level(testaudio.AtActiveDB(audios[i], wearerDBFS, activeRange)))
	}
	slices.Sort(gateLevels)
	fmt.Printf("the wearer's clips at %.0f dBFS active level measure %.1f dBFS by the gate's Level (median; %.1f..%.1f)\n",
		wearerDBFS, gateLevels[len(gateLevels)/2], gateLevels[0], gateLevels[len(gateLevels)-1])
	fmt.Printf("wearer: %d English clips (%.1f min, each at %.0f±%.0f dB active level), babble: %d other speakers from the other %d clips; Silero VAD, segment defaults, %s, %d threads\n\n",
		len(own), ownSec/60, wearerDBFS, jitterDB, talkers, len(pool), filepath.Base(*model), *threads)
	fmt.Println("| babble under the wearer | gate | notes | notes with others' words | wearer WER | whisper calls | whisper wall s |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, f := range strings.Split(*levels, ",") {
		db, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			fail("-below %q: %v", f, err)
		}
		st := build(audios, own, pool, db, 0, 1)
		for _, cfg := range cfgs {
			r := run(det, w, cfg, st)
			hyp := map[string]string{}
			var sel []wer.Clip
			for k, p := range st.wearer {
				sel = append(sel, clips[p.clip])
				hyp[clips[p.clip].File] = r.perClip[k]
			}
			all, _ := wer.Report(sel, hyp)
			fmt.Printf("| %g dB | %s | %d | %d (%.1f %%) | %.1f %% | %d | %.1f |\n", db, gateName(cfg), r.notes, r.leaky, pct(r.leaky, r.notes),
				100*float64(all.Errs)/float64(max(all.Words, 1)), r.calls, r.whisperSec)
			if os.Getenv("WEARER_DEBUG") != "" {
				for _, l := range r.log {
					fmt.Println("   ", l)
				}
			}
		}
	}
	if *aloneMin > 0 {
		fmt.Printf("\nbabble alone at 15 dB under the wearer's level (%.0f dBFS active):\n\n", wearerDBFS-15)
		fmt.Println("| gate | minutes | utterances to whisper | published (text kept) | published per hour | whisper wall s |")
		fmt.Println("|---|---|---|---|---|---|")
		for _, cfg := range cfgs {
			mins := *aloneMin
			if !cfg.Enabled {
				mins = *aloneOff
			}
			if mins <= 0 {
				continue
			}
			st := build(audios, nil, pool, 15, int(mins*60*audio.SampleRate), 2)
			r := run(det, w, cfg, st)
			fmt.Printf("| %s | %.0f | %d | %d | %.1f | %.1f |\n", gateName(cfg), mins, r.calls, r.notes, float64(r.notes)/(mins/60), r.whisperSec)
			if os.Getenv("WEARER_DEBUG") != "" {
				for _, l := range r.log {
					fmt.Println("   ", l)
				}
			}
		}
	}
}

func gateName(c wearer.Config) string {
	if c.Enabled {
		if !checkWords {
			return fmt.Sprintf("on (frames %g, utterances %g, no word check)", c.FrameBelowDB, c.BelowDB)
		}
		return fmt.Sprintf("on (frames %g, utterances %g, words %g)", c.FrameBelowDB, c.BelowDB, c.WordBelowDB)
	}
	return "off"
}

func pct(a, b int) float64 { return 100 * float64(a) / float64(max(b, 1)) }

// build lays the wearer's clips out with 3 s between them (babble only)
// and fills the whole stream with talkers of the pool, belowDB under the
// wearer. With no wearer clips the stream is n samples of babble.
func build(audios [][]float32, own, pool []int, belowDB float64, n int, seed uint64) stream {
	rng := rand.New(rand.NewPCG(seed, 25))
	gap := 3 * audio.SampleRate
	var st stream
	pos := gap
	var speech []float32
	for _, i := range own {
		c := testaudio.AtActiveDB(audios[i], wearerDBFS+(rng.Float64()*2-1)*jitterDB, activeRange)
		st.wearer = append(st.wearer, placed{pos, pos + len(c), i})
		speech = append(speech, make([]float32, pos-len(speech))...)
		speech = append(speech, c...)
		pos += len(c) + gap
	}
	total := max(pos, n)
	speech = append(speech, make([]float32, total-len(speech))...)
	bab := make([]float32, total)
	for k := 0; k < talkers; k++ {
		at := -rng.IntN(3 * audio.SampleRate)
		for at < total {
			i := pool[rng.IntN(len(pool))]
			c := testaudio.AtActiveDB(audios[i], -30, activeRange)
			for j, v := range c {
				if at+j >= 0 && at+j < total {
					bab[at+j] += v
				}
			}
			st.babble = append(st.babble, placed{max(at, 0), min(at+len(c), total), i})
			at += len(c) + rng.IntN(audio.SampleRate/2)
		}
	}
	bab = testaudio.AtActiveDB(bab, wearerDBFS-belowDB, activeRange)
	st.s = make([]float32, total)
	for i := range st.s {
		st.s[i] = speech[i] + bab[i]
	}
	return st
}

type result struct {
	notes, leaky, calls int
	whisperSec          float64
	perClip             []string // the wearer clip's text: the kept notes over it, in order
	log                 []string
}

// run segments the stream as the daemon's capture loop does, gates,
// transcribes and keeps the words the gate keeps.
func run(det *vad.Detector, w *transcribe.Transcriber, cfg wearer.Config, st stream) result {
	det.Reset()
	seg, err := segment.New(det, segment.DefaultConfig())
	if err != nil {
		fail("%v", err)
	}
	tr, err := wearer.NewTracker(cfg)
	if err != nil {
		fail("%v", err)
	}
	r := result{perClip: make([]string, len(st.wearer))}
	t0 := time.Now()
	handle := func(us []segment.Utterance) {
		for _, u := range us {
			sp := u.Samples[u.SpeechStart-u.PadStart : u.SpeechEnd-u.PadStart]
			d := tr.Decide(sp, u.Start)
			if !d.Keep {
				continue
			}
			r.calls++
			began := time.Now()
			res, err := w.Transcribe(context.Background(), u.Samples)
			r.whisperSec += time.Since(began).Seconds()
			if err != nil {
				fail("%v", err)
			}
			text := KeptText(cfg, u.Samples, res, d.Ref)
			if len(wer.Words(text)) == 0 {
				continue
			}
			r.notes++
			a, b := int(u.SpeechStart), int(u.SpeechEnd)
			own := map[string]bool{}
			var theirs map[string]bool
			for k, p := range st.wearer {
				if p.start < b && a < p.end {
					r.perClip[k] = strings.TrimSpace(r.perClip[k] + " " + text)
					for _, x := range wer.Words(clipText(p.clip)) {
						own[x] = true
					}
				}
			}
			theirs = map[string]bool{}
			for _, p := range st.babble {
				if p.start < b && a < p.end {
					for _, x := range wer.Words(clipText(p.clip)) {
						theirs[x] = true
					}
				}
			}
			leak := []string{}
			for _, x := range wer.Words(text) {
				if len(x) >= 4 && theirs[x] && !own[x] {
					leak = append(leak, x)
				}
			}
			if len(leak) > 0 {
				r.leaky++
			}
			r.log = append(r.log, fmt.Sprintf("level %.1f wearer %.1f floor %.1f leak %v: %q (whisper %q)", d.Level, d.Wearer, d.Floor, leak, text, res.Text))
		}
	}
	const chunk = 320
	for i := 0; i < len(st.s); i += chunk {
		end := min(i+chunk, len(st.s))
		c := audio.Chunk{Samples: st.s[i:end], Offset: int64(i), Time: t0.Add(time.Duration(i) * time.Second / audio.SampleRate)}
		for _, g := range tr.Push(c) {
			us, err := seg.Push(g)
			if err != nil {
				fail("%v", err)
			}
			handle(us)
		}
	}
	for _, g := range tr.Flush() {
		us, err := seg.Push(g)
		if err != nil {
			fail("%v", err)
		}
		handle(us)
	}
	handle(seg.Flush())
	return r
}

var (
	texts      map[int]string
	checkWords bool
)

func clipText(i int) string { return texts[i] }

// KeptText is what the daemon keeps of whisper's result: the words the
// gate's word check keeps (the whole text when whisper gave no words).
func KeptText(cfg wearer.Config, samples []float32, res transcribe.Result, ref float64) string {
	if len(res.Words) == 0 || !checkWords {
		return res.Text
	}
	spans := make([]wearer.Span, len(res.Words))
	for i, x := range res.Words {
		spans[i] = wearer.Span{Start: x.Start, End: x.End}
	}
	frames := wearer.FrameLevels(samples)
	keep := cfg.KeepWords(frames, spans, ref)
	var out []string
	for i, x := range res.Words {
		if keep[i] {
			out = append(out, x.Text)
		} else if os.Getenv("WEARER_DEBUG") != "" {
			a, b := int(x.Start/(20*time.Millisecond)), min(int(x.End/(20*time.Millisecond))+25, len(frames))
			fmt.Printf("    dropped %q %s..%s ref %.1f frames %.0f\n", x.Text, x.Start, x.End, ref, frames[max(a-10, 0):b])
		}
	}
	return strings.Join(out, " ")
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "wearer: "+format+"\n", a...)
	os.Exit(1)
}
