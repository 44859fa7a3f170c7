// Command wakefuse rescores a wakebench run (the JSON lines `agorad
// transcribe` wrote with the keyword spotter on) with the fused verdict,
// wake.Rules.MatchSpot, at other thresholds, without running whisper or
// the spotter again: each line keeps whisper's text, its word times and
// the spotter's score and place, and gets the verdict ("wake") the daemon
// would reach with
//
//	-sure   the spotter's own threshold: from it the name counts on the audio alone
//	-fuse   the band's floor: from it the name counts where whisper wrote
//	        something that sounds like it (0: off)
//	-like   how much (wake.Rules.NameLike) it must sound like it
//	-tail   the tail after the name the run transcribed again
//	        (wake.Rules.TailFrom) counts; off: whisper's first text alone
//	        (the verdict before issue 21's third round). A setting that
//	        would transcribe a tail the run did not has none.
//
// and "name_like", NameLike at the spotter's place. score.py scores the
// output like a run:
//
//	go run ./bench/wakefuse -sure 0.995 -fuse 0.7 -like 0.6 <RUN.jsonl >RUN.fused.jsonl
//	python3 bench/wakebench/score.py CORPUS RUN.fused.jsonl --label fused --files RUN.jsonl.files
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agora/agorad/wake"
)

// utterance is the part of a line of `agorad transcribe` output the
// verdict reads; the rest of the line is copied as it is.
type utterance struct {
	Text string `json:"text"`
	Spot *struct {
		Score float64 `json:"score"`
		Late  float64 `json:"late"`
		EndMS int64   `json:"end_ms"`
		Tail  string  `json:"tail"`
	} `json:"spot"`
	Words []struct {
		Text    string `json:"text"`
		StartMS int64  `json:"start_ms"`
		EndMS   int64  `json:"end_ms"`
	} `json:"words"`
}

type wakeJSON struct {
	Action    wake.Action `json:"action"`
	Remainder string      `json:"remainder"`
	Before    string      `json:"before,omitempty"`
}

func main() {
	sure := flag.Float64("sure", 0.995, "spotter threshold: the name counts on the audio alone from this score (the built-in verdict's)")
	fuse := flag.Float64("fuse", wake.DefaultFuse, "fuse band floor (wake.fuse; 0: off)")
	like := flag.Float64("like", wake.DefaultFuseLike, "wake.fuse_like")
	tail := flag.Bool("tail", true, "the tails the run transcribed again count")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *sure, *fuse, *like, *tail); err != nil {
		fmt.Fprintln(os.Stderr, "wakefuse:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, sure, fuse, like float64, tail bool) error {
	cfg := wake.DefaultConfig()
	cfg.Fuse, cfg.FuseLike = fuse, like
	rules, err := wake.New(cfg)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	w := bufio.NewWriter(out)
	defer w.Flush()
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var u utterance
		var all map[string]any
		if err := json.Unmarshal(line, &u); err != nil {
			return err
		}
		if err := json.Unmarshal(line, &all); err != nil {
			return err
		}
		words := make([]wake.Word, len(u.Words))
		for i, x := range u.Words {
			words[i] = wake.Word{Text: x.Text, Start: time.Duration(x.StartMS) * time.Millisecond, End: time.Duration(x.EndMS) * time.Millisecond}
		}
		// Without the spotter's score (whisper wrote nothing: the spotter
		// is not asked) the text alone decides.
		m := rules.Match(u.Text)
		if u.Spot != nil {
			end := time.Duration(u.Spot.EndMS) * time.Millisecond
			s := wake.Spot{Score: u.Spot.Score, End: end, Heard: u.Spot.Score >= sure, Late: u.Spot.Late}
			if tail {
				s.Tail = u.Spot.Tail
			}
			m = rules.MatchSpot(u.Text, words, s)
			all["name_like"] = rules.NameLike(words, end)
		}
		all["wake"] = nil
		if m.Action != wake.None {
			all["wake"] = wakeJSON{Action: m.Action, Remainder: m.Remainder, Before: m.Before}
		}
		b, err := json.Marshal(all)
		if err != nil {
			return err
		}
		w.Write(append(b, '\n'))
	}
	return sc.Err()
}
