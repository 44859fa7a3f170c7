// Command wer scores transcripts of the shared English reference clips by
// group (sentences, short commands, wake words) with the project's WER rules
// (package transcribe/wer), or with -joined a transcript of all of them in
// one file against the references joined. Input: one or more TSV files of "clip<TAB>text"
// lines (extra columns ignored), each a system to compare; a clip may span
// several lines (utterances) and they are joined.
//
//	go run ./bench/wer -manifest ../shared/audio/MANIFEST.tsv agorad=a.tsv whisper-cli=w.tsv
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agora/agorad/transcribe/wer"
)

func main() {
	manifest := flag.String("manifest", "../shared/audio/MANIFEST.tsv", "clip manifest")
	perClip := flag.Bool("clips", false, "also print each clip that has errors")
	joined := flag.Bool("joined", false, "each TSV holds the transcript of all clips in one file (manifest order, as bench/speechbench.sh concatenates them): score it against the references joined")
	flag.Parse()
	clips, err := wer.ReadManifest(*manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	en := wer.English(clips)
	if *joined {
		fmt.Printf("| system | WER (all clips in one file) |\n|---|---|\n")
	} else {
		fmt.Printf("| system | WER all | %s |\n|---|---|%s\n", strings.Join(wer.GroupNames, " | "), strings.Repeat("---|", len(wer.GroupNames)))
	}
	for _, arg := range flag.Args() {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			name, path = filepath.Base(arg), arg
		}
		hyp, err := readHyp(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if *joined {
			var ref, text []string
			for _, c := range en {
				ref = append(ref, c.Transcript)
			}
			for _, t := range hyp {
				text = append(text, t)
			}
			var tl wer.Tally
			tl.Add(strings.Join(ref, " "), strings.Join(text, " "))
			fmt.Printf("| %s | %.1f %% |\n", name, tl.WER())
			continue
		}
		all, groups := wer.Report(en, hyp)
		row := []string{name, fmt.Sprintf("%.1f %%", all.WER())}
		for _, g := range wer.GroupNames {
			row = append(row, fmt.Sprintf("%.1f %%", groups[g].WER()))
		}
		fmt.Printf("| %s |\n", strings.Join(row, " | "))
		if *perClip {
			for _, c := range en {
				if e, n := wer.Errors(c.Transcript, hyp[c.File]); e > 0 {
					fmt.Printf("    %s %d/%d: %q -> %q\n", c.File, e, n, c.Transcript, hyp[c.File])
				}
			}
		}
	}
}

func readHyp(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hyp := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 {
			continue
		}
		file := filepath.Base(cols[0])
		hyp[file] = strings.TrimSpace(hyp[file] + " " + cols[1])
	}
	return hyp, sc.Err()
}
