// Command noise writes the tables of the noise benchmark (issue 25) from
// what bench/noise/run.sh left in -out: per condition the WER of each
// system (the project's WER rules, transcribe/wer) and its CPU seconds; the
// preprocessing candidates against the untreated audio; the noise-only
// files (share of the noise handed to whisper, utterances published per
// hour, CPU); and the wake verdict on bench/wakebench's positives under
// noise.
//
//	go run ./bench/noise -corpus build/noise/corpus -out bench/out/noise -conds "clean pink10" -systems "agorad fw-int8"
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/transcribe/wer"
)

// utterance is what the report reads of a line of `agorad transcribe`.
type utterance struct {
	File     string `json:"file"`
	StartMS  int64  `json:"start_ms"`
	EndMS    int64  `json:"end_ms"`
	Text     string `json:"text"`
	Rejected string `json:"rejected"`
	Wake     *struct {
		Action string `json:"action"`
	} `json:"wake"`
}

// padSeconds is what the segmenter adds around the speech bounds
// (segment.DefaultConfig: 500 ms pre-roll, 250 ms post-pad): whisper gets
// the padded utterance.
const padSeconds = 0.75

func main() {
	corpus := flag.String("corpus", "build/noise/corpus", "corpus dir (mix.py --out)")
	out := flag.String("out", "bench/out/noise", "run.sh's output dir")
	conds := flag.String("conds", "clean", "conditions, in table order")
	pre := flag.String("pre", "", "preprocessed conditions (COND+METHOD)")
	systems := flag.String("systems", "agorad fw-int8", "systems")
	noises := flag.String("noises", "", "noise-only files run (noise kinds)")
	wake := flag.Bool("wake", false, "score the wake positives")
	flag.Parse()
	r := report{corpus: *corpus, out: *out, w: os.Stdout}
	if err := r.run(strings.Fields(*conds), strings.Fields(*pre), strings.Fields(*systems), strings.Fields(*noises), *wake); err != nil {
		fmt.Fprintln(os.Stderr, "noise:", err)
		os.Exit(1)
	}
}

type report struct {
	corpus, out string
	w           io.Writer
	clips       []wer.Clip
}

func (r *report) run(conds, pre, systems, noises []string, wake bool) error {
	clips, err := wer.ReadManifest(filepath.Join(r.corpus, "MANIFEST.tsv"))
	if err != nil {
		return err
	}
	r.clips = clips
	if err := r.werTable(conds, systems); err != nil {
		return err
	}
	if len(pre) > 0 {
		if err := r.preTable(pre); err != nil {
			return err
		}
	}
	if len(noises) > 0 {
		if err := r.noiseTable(noises); err != nil {
			return err
		}
	}
	if wake {
		return r.wakeTable()
	}
	return nil
}

// wers scores a system's hypotheses for cond: over all clips, the shared
// reference clips and our espeak-ng sentences.
func (r *report) wers(cond, sys string) (all, ref, tts wer.Tally, err error) {
	hyp, err := readHyp(filepath.Join(r.out, cond+"."+sys+".tsv"))
	if err != nil {
		return all, ref, tts, err
	}
	for _, c := range r.clips {
		all.Add(c.Transcript, hyp[c.File])
		if strings.HasPrefix(c.File, "espeak_") {
			tts.Add(c.Transcript, hyp[c.File])
		} else {
			ref.Add(c.Transcript, hyp[c.File])
		}
	}
	return all, ref, tts, nil
}

func (r *report) werTable(conds, systems []string) error {
	fmt.Fprintf(r.w, "## WER per condition (%d clips: shared reference clips + espeak-ng sentences)\n\n", len(r.clips))
	head, rule := "| condition |", "|---|"
	for _, s := range systems {
		head += fmt.Sprintf(" %s WER (ref / espeak) |", s)
		rule += "---|"
	}
	for _, s := range systems {
		head += fmt.Sprintf(" %s CPU s |", s)
		rule += "---|"
	}
	head += " agorad CPU / clean |"
	rule += "---|"
	fmt.Fprintln(r.w, head)
	fmt.Fprintln(r.w, rule)
	cleanCPU := 0.0
	for _, c := range conds {
		line := "| " + c + " |"
		for _, s := range systems {
			all, ref, tts, err := r.wers(c, s)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %.1f %% (%.1f / %.1f) |", all.WER(), ref.WER(), tts.WER())
		}
		agoradCPU := 0.0
		for _, s := range systems {
			cpu, err := readCPU(filepath.Join(r.out, c+"."+s+".time"))
			if err != nil {
				return err
			}
			if s == "agorad" {
				agoradCPU = cpu
			}
			line += fmt.Sprintf(" %.1f |", cpu)
		}
		if c == "clean" {
			cleanCPU = agoradCPU
		}
		ratio := "–"
		if cleanCPU > 0 && agoradCPU > 0 {
			ratio = fmt.Sprintf("%.2f", agoradCPU/cleanCPU)
		}
		fmt.Fprintln(r.w, line+" "+ratio+" |")
	}
	fmt.Fprintln(r.w)
	return nil
}

// preTable: agorad's WER with each candidate stage before it, against the
// same condition untreated (the rule: lower at 5 and 10 dB, at most 0.5
// point higher on clean speech).
func (r *report) preTable(pre []string) error {
	fmt.Fprintln(r.w, "## agorad with a preprocessing stage before it")
	fmt.Fprintln(r.w)
	fmt.Fprintln(r.w, "| condition | stage | agorad WER | untreated | change (points) | agorad CPU s (stage not counted) |")
	fmt.Fprintln(r.w, "|---|---|---|---|---|---|")
	for _, p := range pre {
		cond, method, _ := strings.Cut(p, "+")
		got, _, _, err := r.wers(p, "agorad")
		if err != nil {
			return err
		}
		base, _, _, err := r.wers(cond, "agorad")
		if err != nil {
			return err
		}
		cpu, err := readCPU(filepath.Join(r.out, p+".agorad.time"))
		if err != nil {
			return err
		}
		fmt.Fprintf(r.w, "| %s | %s | %.1f %% | %.1f %% | %+.1f | %.1f |\n", cond, method, got.WER(), base.WER(), got.WER()-base.WER(), cpu)
	}
	fmt.Fprintln(r.w)
	return nil
}

func (r *report) noiseTable(noises []string) error {
	fmt.Fprintln(r.w, "## Noise alone through agorad (energy gate + Silero VAD, whisper per utterance)")
	fmt.Fprintln(r.w)
	fmt.Fprintln(r.w, "| noise | seconds | utterances | seconds to whisper | share | published | published / hour | CPU s | % of a core |")
	fmt.Fprintln(r.w, "|---|---|---|---|---|---|---|---|---|")
	for _, n := range noises {
		wav := filepath.Join(r.corpus, "noiseonly", n+".wav")
		secs, err := wavSeconds(wav)
		if err != nil {
			return err
		}
		utts, err := readUtterances(filepath.Join(r.out, "noiseonly-"+n+".agorad.json"))
		if err != nil {
			return err
		}
		handed, published := 0.0, 0
		for _, u := range utts {
			handed += float64(u.EndMS-u.StartMS)/1000 + padSeconds
			if strings.TrimSpace(u.Text) != "" && u.Rejected == "" {
				published++
			}
		}
		handed = min(handed, secs)
		cpu, err := readCPU(filepath.Join(r.out, "noiseonly-"+n+".agorad.time"))
		if err != nil {
			return err
		}
		fmt.Fprintf(r.w, "| %s | %.0f | %d | %.1f | %.1f %% | %d | %.1f | %.1f | %.2f %% |\n",
			n, secs, len(utts), handed, 100*handed/secs, published, float64(published)*3600/secs, cpu, 100*cpu/secs)
	}
	fmt.Fprintln(r.w, "\n(seconds to whisper: each utterance's speech bounds plus the segmenter's 0.75 s padding; published: text the hallucination guard kept. CPU includes loading the model and VAD once.)")
	fmt.Fprintln(r.w)
	return nil
}

// wakeTable scores the daemon's verdict like bench/wakebench/score.py: a
// positive is heard when one of its utterances has the action it asks for
// (listen for the listen words, feedback for the name with a request).
func (r *report) wakeTable() error {
	rows, err := readTSV(filepath.Join(r.corpus, "wake.tsv"))
	if err != nil {
		return err
	}
	utts, err := readUtterances(filepath.Join(r.out, "wake.agorad.json"))
	if err != nil {
		return err
	}
	byFile := map[string][]utterance{}
	for _, u := range utts {
		rel, err := filepath.Rel(r.corpus, u.File)
		if err != nil {
			return err
		}
		byFile[rel] = append(byFile[rel], u)
	}
	type cell struct{ hit, n int }
	var order []string
	cells := map[string]map[string]*cell{}
	positions := []string{"start", "mid", "listen", "all"}
	for _, row := range rows {
		cond, pos := row["kind"], row["position"]
		if cells[cond] == nil {
			cells[cond] = map[string]*cell{}
			for _, p := range positions {
				cells[cond][p] = &cell{}
			}
			order = append(order, cond)
		}
		want := "feedback"
		if pos == "listen" {
			want = "listen"
		}
		ok := false
		for _, u := range byFile[row["file"]] {
			ok = ok || (u.Wake != nil && u.Wake.Action == want)
		}
		for _, p := range []string{pos, "all"} {
			c := cells[cond][p]
			c.n++
			if ok {
				c.hit++
			}
		}
	}
	fmt.Fprintln(r.w, "## Wake verdict (the daemon's: spotter + fused rules, defaults) on bench/wakebench's English positives")
	fmt.Fprintln(r.w)
	fmt.Fprintln(r.w, "| condition | "+strings.Join(positions, " | ")+" |")
	fmt.Fprintln(r.w, "|---|"+strings.Repeat("---|", len(positions)))
	for _, cond := range order {
		line := "| " + cond + " |"
		for _, p := range positions {
			c := cells[cond][p]
			pct := 0.0
			if c.n > 0 {
				pct = 100 * float64(c.hit) / float64(c.n)
			}
			line += fmt.Sprintf(" %d/%d (%.0f %%) |", c.hit, c.n, pct)
		}
		fmt.Fprintln(r.w, line)
	}
	fmt.Fprintln(r.w)
	return nil
}

// readHyp reads "clip<TAB>text[<TAB>lang]" lines; a clip's lines are joined.
func readHyp(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read hypotheses: %w", err)
	}
	defer f.Close()
	hyp := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		clip, text, _ := strings.Cut(sc.Text(), "\t")
		text, _, _ = strings.Cut(text, "\t")
		hyp[clip] = strings.TrimSpace(hyp[clip] + " " + text)
	}
	return hyp, sc.Err()
}

// readCPU reads /usr/bin/time's "wall user sys maxrss" line: user+sys.
func readCPU(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read process time: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var wall, user, sys float64
	if _, err := fmt.Sscan(lines[len(lines)-1], &wall, &user, &sys); err != nil {
		return 0, fmt.Errorf("%s: %q: %w", path, lines[len(lines)-1], err)
	}
	return user + sys, nil
}

func readUtterances(path string) ([]utterance, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read utterances: %w", err)
	}
	defer f.Close()
	var out []utterance
	dec := json.NewDecoder(f)
	for {
		var u utterance
		if err := dec.Decode(&u); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, u)
	}
}

func readTSV(path string) ([]map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	head := strings.Split(lines[0], "\t")
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, v := range strings.Split(l, "\t") {
			if i < len(head) {
				row[head[i]] = v
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func wavSeconds(path string) (float64, error) {
	w, err := audio.OpenWAV(path)
	if err != nil {
		return 0, fmt.Errorf("read noise file: %w", err)
	}
	defer w.Close()
	f := w.Format()
	if f.DataSize < 0 {
		return 0, fmt.Errorf("%s: no data size in the header", path)
	}
	return float64(f.DataSize) / float64(f.Container*f.Channels*f.SampleRate), nil
}
