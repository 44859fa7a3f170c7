// Command askname measures issue 21's lever 2: asking whisper's decoder
// how likely the name is where the keyword spotter placed it, over the
// encoder output of the utterance's own transcription
// (transcribe.Transcriber.TranscribeAsk), and whether that tells the name
// from the words that sound like it.
//
// Each corpus file (bench/wakebench's corpus.tsv) is one utterance: whisper
// transcribes it, the spotter scores it, and where the spotter's score
// reaches -floor whisper is asked about the name after each candidate
// prefix (the words before the spotter's place, give or take a word, as
// whisper's word times are rough). The table counts, for a grid of spotter
// thresholds and margins, the files that wake: whisper's text alone, or the
// spotter at the threshold and whisper's margin at least the margin.
//
//	go run ./bench/askname -corpus bench/out/wake/corpus -model models/ggml-tiny.en-q8_0.bin -lang en
package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/model"
	"github.com/agora/agorad/wake"
	"github.com/agora/agorad/wake/kws"
)

// The spotter's place on whisper's clock, as wake.MatchHeard takes it.
const (
	spotLag  = 500 * time.Millisecond
	nameLen  = 700 * time.Millisecond
	maxAsked = 4 // candidate prefixes per utterance
)

type row struct {
	File     string  `json:"file"`
	Set      string  `json:"set"`
	Lang     string  `json:"lang"`
	Position string  `json:"position"`
	Kind     string  `json:"kind"`
	Text     string  `json:"text"`
	TextWake bool    `json:"text_wake"`
	Spot     float64 `json:"spot"`
	Margin   float64 `json:"margin"` // best margin over the prefixes asked; -Inf (null) when not asked
	Asked    []ask   `json:"asked,omitempty"`
	WhisperM int64   `json:"whisper_ms"`
	AskMS    int64   `json:"ask_ms"`
}

type ask struct {
	Before   string  `json:"before"`
	Spelling string  `json:"spelling"`
	Name     float64 `json:"name"`
	Best     float64 `json:"best"`
	Margin   float64 `json:"margin"`
}

func main() {
	corpus := flag.String("corpus", "bench/out/wake/corpus", "corpus directory with corpus.tsv")
	modelPath := flag.String("model", "models/ggml-tiny.en-q8_0.bin", "whisper model")
	lang := flag.String("lang", "en", "whisper language (en, nl, auto)")
	langs := flag.String("langs", "en", "positive languages to run (comma-separated)")
	kinds := flag.String("kinds", "clean,nearmiss,clip", "corpus kinds to run")
	every := flag.Int("every", 4, "every Nth positive and clip (near-misses: all)")
	floor := flag.Float64("floor", 0.3, "ask whisper where the spotter's score reaches this")
	threads := flag.Int("threads", 1, "whisper threads")
	out := flag.String("out", "", "JSON lines of every utterance (default: stdout only the table)")
	limit := flag.Int("limit", 0, "stop after this many files (0: all)")
	flag.Parse()
	if err := run(*corpus, *modelPath, *lang, *langs, *kinds, *every, *floor, *threads, *out, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "askname:", err)
		os.Exit(1)
	}
}

func run(corpus, modelPath, lang, langs, kinds string, every int, floor float64, threads int, outPath string, limit int) error {
	files, err := readCorpus(corpus, strings.Split(langs, ","), strings.Split(kinds, ","), every)
	if err != nil {
		return err
	}
	if limit > 0 && len(files) > limit {
		files = files[:limit]
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tr, err := transcribe.New(transcribe.Options{ModelPath: modelPath, Language: lang, Threads: threads, Logger: quiet})
	if err != nil {
		return err
	}
	defer tr.Close()
	sp, err := kws.OpenDefault(floor, model.Dirs()...)
	if err != nil {
		return fmt.Errorf("open keyword spotter: %w", err)
	}
	defer sp.Close()
	rules, err := wake.New(wake.DefaultConfig())
	if err != nil {
		return err
	}
	var w *bufio.Writer
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		w = bufio.NewWriter(f)
		defer w.Flush()
	}
	var rows []row
	var cpu0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
	var whisperTotal, askTotal time.Duration
	for i, f := range files {
		samples, err := audio.ReadFile(filepath.Join(corpus, f.File))
		if err != nil {
			return err
		}
		r := f
		var hit kws.Hit
		var spotTime time.Duration
		start := time.Now()
		res, scores, err := tr.TranscribeAsk(context.Background(), samples, "Agora", func(res transcribe.Result) []string {
			t0 := time.Now()
			defer func() { spotTime = time.Since(t0) }()
			var err error
			hit, err = sp.Spot(samples)
			if err != nil || !hit.Heard {
				return nil
			}
			return candidates(res.Words, hit.End)
		})
		if err != nil {
			return fmt.Errorf("%s: %w", f.File, err)
		}
		total := time.Since(start) - spotTime
		r.Text, r.Spot, r.Margin = res.Text, hit.Score, math.Inf(-1)
		r.TextWake = rules.Match(res.Text).Action != wake.None
		for _, s := range scores {
			a := ask{Before: s.Before, Spelling: s.Spelling, Name: round(s.Name), Best: round(s.Best), Margin: round(s.Margin())}
			r.Asked = append(r.Asked, a)
			r.Margin = math.Max(r.Margin, s.Margin())
		}
		r.WhisperM = res.ProcessingTime.Milliseconds()
		if len(scores) > 0 {
			r.AskMS = (total - res.ProcessingTime).Milliseconds()
			whisperTotal += res.ProcessingTime
			askTotal += total - res.ProcessingTime
		}
		rows = append(rows, r)
		if w != nil {
			jr := r
			if math.IsInf(jr.Margin, -1) {
				jr.Margin = -99
			}
			b, _ := json.Marshal(jr)
			w.Write(append(b, '\n'))
		}
		if (i+1)%25 == 0 {
			fmt.Fprintf(os.Stderr, "askname: %d/%d files\n", i+1, len(files))
		}
	}
	var cpu1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
	report(os.Stdout, rows)
	fmt.Printf("\nasking (spotter excluded) took %s against whisper's %s on the utterances asked (%.1f %%); process CPU %s; %d cores, load %s\n",
		askTotal.Round(time.Millisecond), whisperTotal.Round(time.Millisecond), 100*askTotal.Seconds()/math.Max(whisperTotal.Seconds(), 1e-9),
		(tv(cpu1.Utime) + tv(cpu1.Stime) - tv(cpu0.Utime) - tv(cpu0.Stime)).Round(time.Millisecond), runtime.NumCPU(), loadavg())
	return nil
}

// candidates are the texts before the places the name may start: the word
// boundaries from a word before the spotter's place to its end.
func candidates(words []wake.Word, spotEnd time.Duration) []string {
	end := spotEnd - spotLag
	from, to := end-nameLen-500*time.Millisecond, end-100*time.Millisecond
	type cand struct {
		before string
		dist   time.Duration
	}
	var cs []cand
	for b := 0; b <= len(words); b++ {
		at := time.Duration(0)
		if b > 0 {
			if words[b-1].End < 0 {
				return []string{""}
			}
			at = words[b-1].End
		}
		if at < from && b > 0 || at > to {
			continue
		}
		texts := make([]string, b)
		for i := range b {
			texts[i] = words[i].Text
		}
		d := at - (end - nameLen)
		cs = append(cs, cand{strings.Join(texts, " "), max(d, -d)})
	}
	slices.SortFunc(cs, func(a, b cand) int { return int(a.dist - b.dist) })
	var out []string
	for _, c := range cs {
		if len(out) == maxAsked {
			break
		}
		out = append(out, c.before)
	}
	return out
}

func report(w io.Writer, rows []row) {
	groups := []string{}
	seen := map[string]bool{}
	key := func(r row) string {
		if r.Set == "pos" {
			return r.Lang + " " + r.Position
		}
		return r.Kind
	}
	for _, r := range rows {
		if k := key(r); !seen[k] {
			seen[k] = true
			groups = append(groups, k)
		}
	}
	fmt.Fprintf(w, "| system |")
	for _, g := range groups {
		fmt.Fprintf(w, " %s |", g)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "|---|")
	for range groups {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	line := func(name string, wakes func(row) bool) {
		fmt.Fprintf(w, "| %s |", name)
		for _, g := range groups {
			n, k := 0, 0
			for _, r := range rows {
				if key(r) != g {
					continue
				}
				n++
				if wakes(r) {
					k++
				}
			}
			fmt.Fprintf(w, " %d/%d |", k, n)
		}
		fmt.Fprintln(w)
	}
	line("text alone", func(r row) bool { return r.TextWake })
	for _, th := range []float64{0.5, 0.9, 0.99} {
		line(fmt.Sprintf("text or spotter ≥ %.2f", th), func(r row) bool { return r.TextWake || r.Spot >= th })
		for _, m := range []float64{-1, -2, -3, -4, -6} {
			line(fmt.Sprintf("text or (spotter ≥ %.2f and margin ≥ %g)", th, m), func(r row) bool {
				return r.TextWake || r.Spot >= th && r.Margin >= m
			})
		}
	}
}

func readCorpus(dir string, langs, kinds []string, every int) ([]row, error) {
	f, err := os.Open(filepath.Join(dir, "corpus.tsv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.Comma, cr.LazyQuotes, cr.FieldsPerRecord = '\t', true, -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	var out []row
	n := map[string]int{}
	for _, rec := range recs[1:] {
		if len(rec) < 5 {
			continue
		}
		r := row{File: rec[0], Set: rec[1], Lang: rec[2], Position: rec[3], Kind: rec[4]}
		if !slices.Contains(kinds, r.Kind) || r.Set == "pos" && !slices.Contains(langs, r.Lang) {
			continue
		}
		if r.Kind != "nearmiss" {
			n[r.Kind]++
			if (n[r.Kind]-1)%every != 0 {
				continue
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func round(v float64) float64 { return math.Round(v*100) / 100 }

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
