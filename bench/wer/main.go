// Command wer scores transcripts of the shared English reference clips by
// group (sentences, short commands, wake words) with the project's WER rules
// (package transcribe/wer), or with -joined a transcript of all of them in
// one file against the references joined. Input: one or more TSV files of
// "clip<TAB>text[<TAB>language]" lines, each a system to compare; a clip may
// span several lines (utterances) and they are joined. When the files carry
// a language, the table also counts the clips labelled with the manifest's
// language (every clip in the file, whatever -lang scores).
//
// -lang nl scores the clips of another language instead (one WER over those
// with a reference) and prints every system's text for each clip, since
// most non-English clips have none.
//
//	go run ./bench/wer -manifest ../shared/audio/MANIFEST.tsv agorad=a.tsv whisper-cli=w.tsv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agora/agorad/transcribe/wer"
)

func main() {
	manifest := flag.String("manifest", "../shared/audio/MANIFEST.tsv", "clip manifest")
	perClip := flag.Bool("clips", false, "also print each clip that has errors")
	joined := flag.Bool("joined", false, "each TSV holds the transcript of all clips in one file (manifest order, as bench/speechbench.sh concatenates them): score it against the references joined")
	lang := flag.String("lang", "en", "language of the clips to score: en (by group) or another (all its clips, texts printed)")
	prefix := flag.String("prefix", "", "with -lang other than en: score only the clips whose file name starts with this (bench/werbench.sh's real Dutch utterances: fg_)")
	notPrefix := flag.String("not-prefix", "", "with -lang other than en: leave out the clips whose file name starts with this")
	texts := flag.Bool("texts", true, "with -lang other than en: print every system's text for each clip")
	flag.Parse()
	clips, err := wer.ReadManifest(*manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	byFile := map[string]wer.Clip{}
	for _, c := range clips {
		byFile[c.File] = c
	}
	en := wer.English(clips)
	var other []wer.Clip
	for _, c := range clips {
		if c.Language == *lang && strings.HasPrefix(c.File, *prefix) && (*notPrefix == "" || !strings.HasPrefix(c.File, *notPrefix)) {
			other = append(other, c)
		}
	}
	sort.Slice(other, func(i, j int) bool { return other[i].File < other[j].File })
	type system struct {
		name   string
		hyp    map[string]string
		labels map[string]map[string]bool
	}
	var systems []system
	labelled := false
	for _, arg := range flag.Args() {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			name, path = filepath.Base(arg), arg
		}
		hyp, labels, err := readHyp(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		labelled = labelled || len(labels) > 0
		systems = append(systems, system{name, hyp, labels})
	}
	// labelsRight: clips of the file whose every utterance carries the
	// manifest's language, of the clips the file has text for.
	labelsRight := func(s system) string {
		right, n := 0, 0
		for file, ls := range s.labels {
			c, ok := byFile[file]
			if !ok || !strings.HasPrefix(file, *prefix) || (*notPrefix != "" && strings.HasPrefix(file, *notPrefix)) {
				continue
			}
			n++
			if len(ls) == 1 && ls[c.Language] {
				right++
			}
		}
		return fmt.Sprintf("%d/%d", right, n)
	}
	switch {
	case *joined:
		fmt.Printf("| system | WER (all clips in one file) |\n|---|---|\n")
		for _, s := range systems {
			var ref, text []string
			for _, c := range en {
				ref = append(ref, c.Transcript)
			}
			for _, c := range en {
				if t := s.hyp[c.File]; t != "" {
					text = append(text, t)
				}
			}
			// one file: the hypothesis is keyed by the joined file's name
			if len(text) == 0 {
				for _, t := range s.hyp {
					text = append(text, t)
				}
			}
			var tl wer.Tally
			tl.Add(strings.Join(ref, " "), strings.Join(text, " "))
			fmt.Printf("| %s | %.1f %% |\n", s.name, tl.WER())
		}
	case *lang != "en":
		fmt.Printf("| system | WER (%s clips with a reference) | language right |\n|---|---|---|\n", *lang)
		for _, s := range systems {
			var tl wer.Tally
			for _, c := range other {
				if strings.TrimSpace(c.Transcript) != "" {
					tl.Add(c.Transcript, s.hyp[c.File])
				}
			}
			fmt.Printf("| %s | %s | %s |\n", s.name, tl, labelsRight(s))
		}
		for _, c := range other {
			if !*texts {
				break
			}
			fmt.Printf("\n%s (reference: %q)\n", c.File, c.Transcript)
			for _, s := range systems {
				var ls []string
				for l := range s.labels[c.File] {
					ls = append(ls, l)
				}
				sort.Strings(ls)
				fmt.Printf("- %s [%s]: %q\n", s.name, strings.Join(ls, ","), s.hyp[c.File])
			}
		}
	default:
		head := "| system | WER all | " + strings.Join(wer.GroupNames, " | ") + " |"
		rule := "|---|---|" + strings.Repeat("---|", len(wer.GroupNames))
		if labelled {
			head += " language right |"
			rule += "---|"
		}
		fmt.Printf("%s\n%s\n", head, rule)
		for _, s := range systems {
			all, groups := wer.Report(en, s.hyp)
			row := []string{s.name, fmt.Sprintf("%.1f %%", all.WER())}
			for _, g := range wer.GroupNames {
				row = append(row, fmt.Sprintf("%.1f %%", groups[g].WER()))
			}
			if labelled {
				row = append(row, labelsRight(s))
			}
			fmt.Printf("| %s |\n", strings.Join(row, " | "))
		}
		if *perClip {
			for _, s := range systems {
				fmt.Printf("\n%s:\n", s.name)
				for _, c := range en {
					if e, n := wer.Errors(c.Transcript, s.hyp[c.File]); e > 0 {
						fmt.Printf("    %s %d/%d: %q -> %q\n", c.File, e, n, c.Transcript, s.hyp[c.File])
					}
				}
			}
		}
	}
}

// readHyp reads "clip<TAB>text[<TAB>language]" lines: the text of each clip
// (utterances joined) and the languages its lines were labelled with.
func readHyp(path string) (map[string]string, map[string]map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	hyp := map[string]string{}
	labels := map[string]map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 {
			continue
		}
		file := filepath.Base(cols[0])
		hyp[file] = strings.TrimSpace(hyp[file] + " " + cols[1])
		if len(cols) > 2 && strings.TrimSpace(cols[2]) != "" {
			if labels[file] == nil {
				labels[file] = map[string]bool{}
			}
			labels[file][strings.TrimSpace(cols[2])] = true
		}
	}
	return hyp, labels, sc.Err()
}
