// Command kwsbench runs the keyword spotter alone over the wake benchmark's
// corpus (bench/wakebench) and prints, for a range of thresholds, the
// detection rate per language, position and noise and the false triggers
// per hour of negatives and on the near-misses: the table the head's
// threshold is chosen from (docs/wake.md). The spotter scores each file
// whole, as if it listened continuously (the daemon scores only what the
// VAD passes, one verdict per utterance: fewer chances to trigger), and
// triggers at most once per refractory period. English positives spoken by
// engines the head never trained on (corpus.py --engines) are a column of
// their own.
//
//	go run ./bench/kwsbench -corpus bench/out/wake/corpus [-kws models/kws] [-head FILE] [-late builtin|FILE|off] [-gate auto|builtin|FILE|off]
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/wake/kws"
)

type row struct {
	file, set, lang, position, kind string
	engine                          string    // espeak, or the other engine that spoke it (flite:awb: flite)
	scores                          []float64 // the verdict (with -late: both heads')
	head, late                      []float64 // with -late: each head's part (kws.Spotter.Parts)
	ends                            []int
	seconds                         float64
}

func main() {
	corpus := flag.String("corpus", "bench/out/wake/corpus", "corpus directory (corpus.tsv)")
	dir := flag.String("kws", "models/kws", "the spotter's front end")
	refractory := flag.Duration("refractory", 1500*time.Millisecond, "one trigger per this much audio")
	headFile := flag.String("head", "", "a head file to measure instead of the built-in one")
	lateFile := flag.String("late", "builtin", "the late head (kws.Spotter.SetLate): builtin, a head file, or off (the head alone); with one, the verdict is both heads' (kws.Verdict), and tables of the head alone and of each head over a threshold follow")
	gateFile := flag.String("gate", "auto", "the gate (kws.Spotter.SetGate): builtin, a head file, off (the head on every window), or auto (builtin with the built-in head, else off); it changes the cost, and nothing from 0.5 up: -dump writes the same with it and without")
	dump := flag.String("dump", "", "also write each file's windows scoring 0.5 or more here (file, end in s, score; with -late also the head's and the late head's part, and windows where the head alone scores 0.5): which files to run whisper on (bench/wakefuse)")
	flag.Parse()
	head, err := kws.DefaultHead()
	if *headFile != "" {
		var b []byte
		if b, err = os.ReadFile(*headFile); err == nil {
			head, err = kws.ParseHead(b)
		}
	}
	if err != nil {
		fail(err)
	}
	s, err := kws.Open(*dir, head, 0)
	if err != nil {
		fail(err)
	}
	defer s.Close()
	if *lateFile != "off" {
		late, err := kws.DefaultLate()
		if *lateFile != "builtin" {
			late, err = kws.LoadHead(*lateFile)
		}
		if err == nil {
			err = s.SetLate(late)
		}
		if err != nil {
			fail(err)
		}
	}
	gated := "no gate"
	switch g := *gateFile; {
	case g == "off", g == "auto" && *headFile != "":
	default:
		gate, err := kws.DefaultGate()
		if g != "builtin" && g != "auto" {
			gate, err = kws.LoadHead(g)
		}
		if err == nil {
			err = s.SetGate(gate)
		}
		if err != nil {
			fail(err)
		}
		gated = fmt.Sprintf("gate from %.3g", gate.Threshold)
	}
	rows, err := readCorpus(filepath.Join(*corpus, "corpus.tsv"))
	if err != nil {
		fail(err)
	}
	var audioSec float64
	start := time.Now()
	for i := range rows {
		r := &rows[i]
		samples, err := audio.ReadFile(filepath.Join(*corpus, r.file))
		if err != nil {
			fail(err)
		}
		r.seconds = float64(len(samples)) / audio.SampleRate
		audioSec += r.seconds
		if r.head, r.late, r.ends, err = s.Parts(samples); err != nil {
			fail(fmt.Errorf("%s: %w", r.file, err))
		}
		r.scores = r.head
		if r.late != nil {
			r.scores = make([]float64, len(r.head))
			for i := range r.head {
				r.scores[i] = kws.Verdict(r.head[i], r.late[i])
			}
		}
	}
	took := time.Since(start)
	if *dump != "" {
		if err := dumpWindows(*dump, rows, 0.5); err != nil {
			fail(err)
		}
	}
	fmt.Printf("# kwsbench: %d files, %.2f h of audio scored in %s (%.1f%% of real time, one thread, %s); threshold %.3g (the head's %.3g); %s\n\n",
		len(rows), audioSec/3600, took.Round(time.Second), 100*took.Seconds()/audioSec, gated, s.Threshold(), head.Threshold, head.Trained)
	thresholds := []float64{0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.997, 0.999}
	for _, th := range []float64{s.Threshold(), head.Threshold} {
		if !slices.Contains(thresholds, th) {
			thresholds = append(thresholds, th)
		}
	}
	sort.Float64s(thresholds)
	refr := int(refractory.Seconds() * audio.SampleRate)
	verdict := func(r row) []float64 { return r.scores }
	if *lateFile == "off" {
		table(rows, thresholds, s.Threshold(), "the spotter's", refr, verdict)
		return
	}
	fmt.Println("The verdict: the head's logit weighing twice the late head's after it (kws.Verdict).")
	fmt.Println()
	table(rows, thresholds, s.Threshold(), "the spotter's", refr, verdict)
	fmt.Println()
	fmt.Println("The head alone.")
	fmt.Println()
	table(rows, thresholds, head.Threshold, "the head's", refr, func(r row) []float64 { return r.head })
	for _, lt := range []float64{0.5, 0.8, 0.9, 0.95, 0.98, 0.99} {
		fmt.Printf("\nThe head over the threshold in the first column and the late head after it over %g.\n\n", lt)
		table(rows, []float64{0.95, 0.98, 0.985, 0.99, 0.992, 0.995}, head.Threshold, "the head's", refr, func(r row) []float64 {
			v := make([]float64, len(r.head))
			for i := range v {
				if r.late[i] >= lt {
					v[i] = r.head[i]
				}
			}
			return v
		})
	}
}

// table prints detection and false wakes at each threshold over the
// scores score gives each row.
func table(rows []row, thresholds []float64, marked float64, markLabel string, refr int, score func(row) []float64) {
	var engines []string // other engines' positives by language ("nl by kokoro"), in the corpus's order
	for _, r := range rows {
		if k := r.lang + " by " + r.engine; r.set == "pos" && r.engine != "espeak" && !slices.Contains(engines, k) {
			engines = append(engines, k)
		}
	}
	fmt.Print("| threshold | en start | en mid | en listen | nl start | nl mid | nl listen | noisy (10 dB) |")
	for _, e := range engines {
		fmt.Printf(" %s |", e)
	}
	fmt.Println(" false/h babble | recordings waking | near-miss files (other engines) |")
	fmt.Println("|---|---|---|---|---|---|---|---|" + strings.Repeat("---|", len(engines)) + "---|---|---|")
	for _, th := range thresholds {
		det := map[string][2]int{}
		var falseN, clipN, clips, nearN, nearOther int
		var negSec float64
		for _, r := range rows {
			n := triggers(score(r), r.ends, th, refr)
			if r.set == "pos" {
				key := r.lang + " " + r.position
				switch {
				case r.engine != "espeak" && r.kind == "clean":
					key = r.lang + " by " + r.engine
				case r.engine != "espeak":
					continue // other engines' noisy copies: in "other" clean only
				case strings.HasPrefix(r.kind, "noise"):
					key = "noisy"
				}
				c := det[key]
				c[1]++
				if n > 0 {
					c[0]++
				}
				det[key] = c
				continue
			}
			switch r.kind {
			case "nearmiss":
				if n > 0 && r.engine != "espeak" {
					nearOther++
				}
				if n > 0 {
					nearN++
				}
			case "clip": // the shared real recordings
				clips++
				if n > 0 {
					clipN++
				}
			default:
				negSec += r.seconds
				falseN += n
			}
		}
		cell := func(k string) string {
			c := det[k]
			return fmt.Sprintf("%.0f %% (%d/%d)", 100*float64(c[0])/float64(max(c[1], 1)), c[0], c[1])
		}
		mark := ""
		if th == marked {
			mark = " (" + markLabel + ")"
		}
		fmt.Printf("| %g%s | %s | %s | %s | %s | %s | %s | %s |", th, mark,
			cell("en start"), cell("en mid"), cell("en listen"), cell("nl start"), cell("nl mid"), cell("nl listen"), cell("noisy"))
		for _, e := range engines {
			fmt.Printf(" %s |", cell(e))
		}
		fmt.Printf(" %.2f (%d in %.2f h) | %d of %d | %d (%d) |\n",
			float64(falseN)/max(negSec/3600, 1e-9), falseN, negSec/3600, clipN, clips, nearN, nearOther)
	}
}

// dumpWindows writes the windows of rows scoring at least th, one a line.
func dumpWindows(path string, rows []row, th float64) error {
	var b strings.Builder
	for _, r := range rows {
		for i, sc := range r.scores {
			if sc >= th || (r.late != nil && r.head[i] >= th) {
				fmt.Fprintf(&b, "%s\t%.2f\t%.5f", r.file, float64(r.ends[i])/audio.SampleRate, sc)
				if r.late != nil { // and the two heads' parts
					fmt.Fprintf(&b, "\t%.5f\t%.5f", r.head[i], r.late[i])
				}
				b.WriteByte('\n')
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// triggers counts the windows at or over th, at most one per refractory
// samples.
func triggers(scores []float64, ends []int, th float64, refractory int) int {
	n, last := 0, -1<<31
	for i, sc := range scores {
		if sc >= th && ends[i]-last >= refractory {
			n++
			last = ends[i]
		}
	}
	return n
}

func readCorpus(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.Comma = '\t'
	cr.LazyQuotes = true
	cr.FieldsPerRecord = -1
	var rows []row
	for n := 0; ; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if n == 0 || len(rec) < 5 {
			continue
		}
		engine := "espeak"
		if len(rec) > 5 {
			if e, _, ok := strings.Cut(rec[5], ":"); ok {
				engine = e
			}
		}
		rows = append(rows, row{file: rec[0], set: rec[1], lang: rec[2], position: rec[3], kind: rec[4], engine: engine})
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kwsbench:", err)
	os.Exit(1)
}
