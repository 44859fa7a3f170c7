// Command realwords measures spotters trained from synthetic speech alone
// (make kws-head) on real people: recall on recordings of people saying
// each name, clean and mixed with noise, and false accepts per hour of
// real speech without the name. It scores with the spotter's verdict as
// the daemon computes it (kws.Spotter: the head, with the late head when
// the directory has one, against the threshold the recipe chose on its
// development speakers); nothing here is tuned.
//
//	go run ./bench/realwords -heads alexa=DIR,computer=DIR,jarvis=DIR -real REALWORDS_WAV \
//	    -speech LIBRISPEECH_WAV -speech SHARED_AUDIO -noise site=FILE.wav -noise pink=FILE.wav [-snr 10]
//
// REALWORDS_WAV holds one folder of WAV files per name; a name's own
// folder is its positives, the other folders are negatives. A -speech
// folder's files are negatives, except those its MANIFEST.tsv says hold a
// word like the name (column contains_wake_like_word). A recording counts
// as heard when its best window reaches the threshold; on negatives every
// window from the threshold up is a false accept, at most one per
// -refractory of audio (the daemon asks once per utterance: fewer chances).
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/wake/kws"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

type noise struct {
	name    string
	samples []float32
}

func main() {
	heads := flag.String("heads", "", "name=head directory,... (make kws-head's OUT)")
	real := flag.String("real", "", "directory of one folder of WAV recordings per name")
	dir := flag.String("kws", "models/kws", "the spotter's front end")
	snr := flag.Float64("snr", 10, "signal-to-noise ratio of the noisy copies, dB (speech power over its voiced samples)")
	refractory := flag.Duration("refractory", 1500*time.Millisecond, "one false accept per this much audio")
	workers := flag.Int("workers", 2, "files scored at once (one spotter each)")
	sweep := flag.String("sweep", "0.95,0.98,0.99,0.995,0.999", "other thresholds to print recall and false accepts at, below the table: how the trade-off runs on real people (a threshold picked from these would be chosen on the test)")
	var speech, noises multi
	flag.Var(&speech, "speech", "a folder of real speech without the names (repeatable)")
	flag.Var(&noises, "noise", "name=file.wav: a noise mixed under the positives (repeatable)")
	flag.Parse()
	if *heads == "" || *real == "" {
		fail(fmt.Errorf("-heads and -real are required"))
	}
	var ns []noise
	for _, n := range noises {
		name, path, ok := strings.Cut(n, "=")
		if !ok {
			fail(fmt.Errorf("-noise %q: want name=file.wav", n))
		}
		x, err := audio.ReadFile(path)
		if err != nil {
			fail(err)
		}
		ns = append(ns, noise{name, x})
	}
	names := map[string]string{}
	var order []string
	for _, h := range strings.Split(*heads, ",") {
		name, d, ok := strings.Cut(h, "=")
		if !ok {
			fail(fmt.Errorf("-heads %q: want name=dir", h))
		}
		names[name] = d
		order = append(order, name)
	}
	folders, err := os.ReadDir(*real)
	if err != nil {
		fail(err)
	}
	fmt.Printf("# realwords: real people, spotters trained on synthetic speech only; noise at %g dB SNR; false accepts at most one per %s; front end %s\n\n", *snr, *refractory, *dir)
	head := "| name | threshold | recall clean |"
	sep := "|---|---|---|"
	for _, n := range ns {
		head += fmt.Sprintf(" recall %s %g dB |", n.name, *snr)
		sep += "---|"
	}
	head += " FA/h other names | FA/h "
	for i, s := range speech {
		if i > 0 {
			head += ", "
		}
		head += filepath.Base(filepath.Clean(s))
	}
	head += " | FA/h all real speech (hours) | trained |"
	sep += "---|---|---|---|"
	var lines, sweepLines []string
	for _, name := range order {
		hd := names[name]
		var pos, negNames []string
		for _, f := range folders {
			if !f.IsDir() {
				continue
			}
			files, err := wavs(filepath.Join(*real, f.Name()), "")
			if err != nil {
				fail(err)
			}
			if f.Name() == name {
				pos = files
			} else {
				negNames = append(negNames, files...)
			}
		}
		if len(pos) == 0 {
			fail(fmt.Errorf("no recordings of %q in %s", name, *real))
		}
		var negSpeech [][]string
		for _, s := range speech {
			files, err := wavs(s, name)
			if err != nil {
				fail(err)
			}
			negSpeech = append(negSpeech, files)
		}
		thr, trained := 0.0, ""
		score := func(files []string, mix *noise) []result {
			return scoreAll(*dir, hd, files, mix, *snr, *workers, &thr, &trained)
		}
		clean := score(pos, nil)
		row := fmt.Sprintf("| %s | %.6g | %s |", name, thr, recall(clean, thr))
		noisy := make([][]result, len(ns))
		for i := range ns {
			noisy[i] = score(pos, &ns[i])
			row += fmt.Sprintf(" %s |", recall(noisy[i], thr))
		}
		refr := int(refractory.Seconds() * audio.SampleRate)
		negAll := score(negNames, nil)
		fa, h := falseAccepts(negAll, thr, refr)
		allFA, allH := fa, h
		row += fmt.Sprintf(" %.2f (%d in %.2f h) |", float64(fa)/h, fa, h)
		var parts []string
		for _, files := range negSpeech {
			rs := score(files, nil)
			negAll = append(negAll, rs...)
			fa, h := falseAccepts(rs, thr, refr)
			allFA += fa
			allH += h
			parts = append(parts, fmt.Sprintf("%.2f (%d in %.2f h)", float64(fa)/h, fa, h))
		}
		row += " " + strings.Join(parts, ", ") + fmt.Sprintf(" | %.2f (%d in %.2f h) | %s |", float64(allFA)/allH, allFA, allH, trained)
		lines = append(lines, row)
		fmt.Fprintln(os.Stderr, row)
		for _, v := range strings.Split(*sweep, ",") {
			var t float64
			if _, err := fmt.Sscan(v, &t); err != nil || v == "" {
				continue
			}
			sw := fmt.Sprintf("| %s | %.6g (sweep) | %s |", name, t, recall(clean, t))
			for i := range ns {
				sw += fmt.Sprintf(" %s |", recall(noisy[i], t))
			}
			fa, h := falseAccepts(negAll, t, refr)
			sw += fmt.Sprintf(" - | - | %.2f (%d in %.2f h) | - |", float64(fa)/h, fa, h)
			sweepLines = append(sweepLines, sw)
			fmt.Fprintln(os.Stderr, sw)
		}
	}
	fmt.Println(head)
	fmt.Println(sep)
	for _, l := range lines {
		fmt.Println(l)
	}
	if len(sweepLines) > 0 {
		fmt.Println()
		fmt.Println("Other thresholds (not the recipe's; choosing one of these would be tuning on the test):")
		fmt.Println()
		fmt.Println(head)
		fmt.Println(sep)
		for _, l := range sweepLines {
			fmt.Println(l)
		}
	}
}

type result struct {
	best    float64
	scores  []float64
	seconds float64
}

func recall(rs []result, thr float64) string {
	n := 0
	for _, r := range rs {
		if r.best >= thr {
			n++
		}
	}
	return fmt.Sprintf("%.1f %% (%d/%d)", 100*float64(n)/float64(len(rs)), n, len(rs))
}

// falseAccepts counts windows from thr up, at most one per refr samples
// (the spotter's windows are 1280 samples apart).
func falseAccepts(rs []result, thr float64, refr int) (n int, hours float64) {
	const hop = 1280
	for _, r := range rs {
		hours += r.seconds / 3600
		next := -1
		for i, s := range r.scores {
			if s >= thr && i*hop >= next {
				n++
				next = i*hop + refr
			}
		}
	}
	return n, hours
}

// scoreAll scores files with the heads of headDir, mixed with mix when
// set, on workers spotters at once; thr and trained get the spotter's.
func scoreAll(front, headDir string, files []string, mix *noise, snr float64, workers int, thr *float64, trained *string) []result {
	out := make([]result, len(files))
	var wg sync.WaitGroup
	var once sync.Once
	errs := make(chan error, workers)
	for k := range workers {
		s, err := kws.OpenHeadDir(front, headDir, 0)
		if err != nil {
			fail(err)
		}
		once.Do(func() {
			*thr = s.Threshold()
			if h, _, _, err := kws.LoadHeadDir(headDir); err == nil {
				*trained = h.Trained
				if i := strings.Index(*trained, ":"); i > 0 {
					*trained = (*trained)[:i]
				}
			}
		})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			for i := k; i < len(files); i += workers {
				x, err := audio.ReadFile(files[i])
				if err != nil {
					errs <- err
					return
				}
				if mix != nil {
					x = addNoise(x, mix.samples, snr, i)
				}
				sc, _, err := s.Scores(x)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", files[i], err)
					return
				}
				r := result{scores: sc, seconds: float64(len(x)) / audio.SampleRate}
				for _, v := range sc {
					r.best = math.Max(r.best, v)
				}
				out[i] = r
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		fail(err)
	default:
	}
	return out
}

// addNoise mixes nz (looped, from an offset that depends on seed) under x
// at snr dB below x's power over its voiced samples (|x| > 0.01).
func addNoise(x, nz []float32, snr float64, seed int) []float32 {
	var ps, pn float64
	var voiced int
	for _, v := range x {
		if math.Abs(float64(v)) > 0.01 {
			ps += float64(v) * float64(v)
			voiced++
		}
	}
	if voiced == 0 {
		return x
	}
	ps /= float64(voiced)
	off := (seed * 7919 * 16) % len(nz)
	seg := make([]float32, len(x))
	for i := range seg {
		seg[i] = nz[(off+i)%len(nz)]
		pn += float64(seg[i]) * float64(seg[i])
	}
	pn /= float64(len(seg))
	if pn == 0 {
		return x
	}
	g := float32(math.Sqrt(ps / (pn * math.Pow(10, snr/10))))
	out := make([]float32, len(x))
	for i := range x {
		out[i] = max(-1, min(1, x[i]+g*seg[i]))
	}
	return out
}

// wavs lists a folder's WAV files, without those its MANIFEST.tsv marks
// as holding a word like name.
func wavs(dir, name string) ([]string, error) {
	skip := map[string]bool{}
	if f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv")); err == nil {
		r := csv.NewReader(f)
		r.Comma, r.LazyQuotes, r.FieldsPerRecord = '\t', true, -1
		var col = -1
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", f.Name(), err)
			}
			if col < 0 {
				for i, c := range rec {
					if c == "contains_wake_like_word" {
						col = i
					}
				}
				if col < 0 {
					break
				}
				continue
			}
			if name != "" && col < len(rec) && strings.Contains(strings.ToLower(rec[col]), strings.ToLower(name)) {
				skip[rec[0]] = true
			}
		}
		f.Close()
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wav") && !skip[e.Name()] {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "realwords:", err)
	os.Exit(1)
}
