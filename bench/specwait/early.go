package main

// The early end of a turn (issue 47): after a short silence the speculative
// transcript of the preview decides. A complete utterance
// (transcribe/turnend) ends the turn there; anything else waits for the
// hangover. Measured per split (dev: the 1st, 3rd, ... clip; test: the 2nd,
// 4th, ...; English clips in file-name order, Dutch in metadata order), on
// two things: clips cut in two or more (a pause inside a question taken for
// its end), against the hangover alone on the same clips; and clips whose
// last utterance ended early (the wait saved: hangover - short wait, plus
// whatever whisper needs beyond the short wait in the daemon).
//
// The text of a preview is the real whisper's on exactly the audio the
// daemon would transcribe. The bench assumes it is there at the short
// wait; in the daemon a run still going when speech resumes is dropped, so
// the cuts counted here are an upper bound.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/turnend"
)

// verbose logs every preview's text and decision (-v).
var verbose bool

// clip is one padded recording of a split.
type clip struct {
	name    string
	samples []float32
	w       *transcribe.Transcriber
}

type rule struct {
	name string
	done func(string) bool
}

// punctOnly is the first rule one thinks of: sentence punctuation at the end.
func punctOnly(text string) bool {
	t := strings.TrimSpace(text)
	return t != "" && !strings.HasSuffix(t, "...") && !strings.HasSuffix(t, "…") && strings.ContainsAny(t[len(t)-1:], ".?!")
}

var rules = []rule{{"punctuation", punctOnly}, {"turnend.Complete", turnend.Complete}, {"complete question", turnend.Question}}

// ruleNames selects rules (-rules).
func pickRules(names string) []rule {
	if names == "" {
		return rules
	}
	var out []rule
	for _, r := range rules {
		if strings.Contains(","+names+",", ","+r.name+",") {
			out = append(out, r)
		}
	}
	return out
}

// texts caches whisper's text per clip and preview: the same preview
// recurs under every rule and short wait.
type texts map[string]string

func (tx texts) of(c clip, p segment.Utterance) string {
	k := fmt.Sprintf("%s/%d/%d/%d", c.name, p.PadStart, p.SpeechStart, p.SpeechEnd)
	if t, ok := tx[k]; ok {
		return t
	}
	res, err := c.w.Transcribe(context.Background(), p.Samples)
	if err != nil {
		fail("%s: transcribe preview: %v", c.name, err)
	}
	tx[k] = res.Text
	return res.Text
}

// earlyClip segments one clip, ending a turn early when done says the
// preview after short of silence is complete. It returns the utterances
// and whether the last one ended early.
func earlyClip(det *vad.Detector, cfg segment.Config, short time.Duration, c clip, done func(string) bool, tx texts) (utts int, lastEarly bool) {
	det.Reset()
	seg, err := segment.New(det, cfg)
	if err != nil {
		fail("%v", err)
	}
	asked := map[key]bool{}
	const chunk = 320
	t0 := time.Now()
	for i := 0; i < len(c.samples); i += chunk {
		end := min(i+chunk, len(c.samples))
		us, err := seg.Push(audio.Chunk{Samples: c.samples[i:end], Offset: int64(i), Time: t0.Add(time.Duration(i) * time.Second / audio.SampleRate)})
		if err != nil {
			fail("%s: %v", c.name, err)
		}
		if len(us) > 0 {
			utts, lastEarly = utts+len(us), false
		}
		if done == nil {
			continue
		}
		p, ok := seg.Tentative(short)
		k := key{p.PadStart, p.SpeechStart, p.SpeechEnd}
		if !ok || asked[k] {
			continue
		}
		asked[k] = true
		text := tx.of(c, p)
		if done(text) {
			if _, ok := seg.EndNow(k.pad, k.start, k.end, short); ok {
				utts, lastEarly = utts+1, true
			}
		}
		if verbose {
			fmt.Fprintf(os.Stderr, "%s %v preview %.2f-%.2f s: %q ended %v\n", c.name, short,
				float64(k.start)/audio.SampleRate, float64(k.end)/audio.SampleRate, text, done(text))
		}
	}
	if us := seg.Flush(); len(us) > 0 {
		utts, lastEarly = utts+len(us), false
	}
	return utts, lastEarly
}

// readPSV reads a metadata.psv (id|transcript) and its id.wav files.
func readPSV(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read Dutch metadata: %w", err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		id, _, ok := strings.Cut(sc.Text(), "|")
		if !ok || id == "" {
			return nil, fmt.Errorf("%s line %d: want id|transcript", path, n)
		}
		ids = append(ids, id)
	}
	return ids, sc.Err()
}

func padClip(name string, s []float32, w *transcribe.Transcriber) clip {
	return clip{name: name, w: w, samples: append(append(make([]float32, audio.SampleRate), s...), make([]float32, 3*audio.SampleRate)...)}
}

// earlyTables prints, per language and split, the hangover alone against
// each rule at each short wait.
func earlyTables(det *vad.Detector, sets map[string][2][]clip, order []string, shorts []time.Duration, rules []rule) {
	cfg := segment.DefaultConfig()
	tx := texts{}
	fmt.Printf("\nearly end of a turn (issue 47): hangover %v, short waits %v; dev = odd clips, test = even clips\n", cfg.MinSilence, shorts)
	for _, lang := range order {
		for si, split := range []string{"dev", "test"} {
			clips := sets[lang][si]
			fmt.Printf("\n%s, %s half (%d clips)\n\n", lang, split, len(clips))
			fmt.Println("| rule | short wait | clips cut in two or more | last turn ended early | clips cut |")
			fmt.Println("|---|---|---|---|---|")
			row := func(name string, short time.Duration, done func(string) bool) {
				cut, early := 0, 0
				var names []string
				for _, c := range clips {
					u, e := earlyClip(det, cfg, short, c, done, tx)
					if u > 1 {
						cut++
						names = append(names, strings.TrimSuffix(filepath.Base(c.name), ".wav"))
					}
					if e {
						early++
					}
				}
				wait := "-"
				if done != nil {
					wait = short.String()
				}
				fmt.Printf("| %s | %s | %d of %d | %d of %d (%.0f %%) | %s |\n", name, wait, cut, len(clips), early, len(clips),
					100*float64(early)/float64(max(1, len(clips))), strings.Join(names, " "))
			}
			row("hangover only (today)", 0, nil)
			for _, r := range rules {
				for _, s := range shorts {
					row(r.name, s, r.done)
				}
			}
		}
	}
}
