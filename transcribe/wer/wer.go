// Package wer scores transcripts against reference text by word error rate,
// the way the project measures accuracy (issue 15): lowercase, apostrophes
// deleted, every other punctuation mark a space, no number normalisation
// ("50" and "fifty" differ). It also reads the shared clip manifest and
// sorts the English reference clips into the groups reported separately:
// sentences, short commands and wake words. Tests and bench/ use it alike,
// so a figure in a test threshold and one in a benchmark table mean the same.
package wer

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Words normalises s and splits it into words.
func Words(s string) []string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == '\'' || r == '’':
			// deleted: "what's" == "whats"
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		default:
			b.WriteByte(' ')
		}
	}
	return strings.Fields(b.String())
}

// Errors is the word-level edit distance (substitutions + deletions +
// insertions) between ref and hyp, and the number of reference words.
func Errors(ref, hyp string) (errs, words int) {
	r, h := Words(ref), Words(hyp)
	prev := make([]int, len(h)+1)
	cur := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(h)], len(r)
}

// Tally adds up errors and reference words over many clips.
type Tally struct {
	Errs, Words, Clips int
	Exact              int // clips transcribed without an error
}

// Add scores one clip into the tally.
func (t *Tally) Add(ref, hyp string) {
	e, w := Errors(ref, hyp)
	t.Errs += e
	t.Words += w
	t.Clips++
	if e == 0 {
		t.Exact++
	}
}

// WER is the word error rate in percent (0 with no words).
func (t Tally) WER() float64 {
	if t.Words == 0 {
		return 0
	}
	return 100 * float64(t.Errs) / float64(t.Words)
}

func (t Tally) String() string {
	return fmt.Sprintf("%.1f%% (%d/%d words, %d/%d clips exact)", t.WER(), t.Errs, t.Words, t.Exact, t.Clips)
}

// Groups of the English reference clips, in report order.
const (
	Sentences = "sentences"
	Commands  = "short commands"
	WakeWords = "wake words"
)

// GroupNames lists the groups in report order.
var GroupNames = []string{Sentences, Commands, WakeWords}

// Clip is one line of the shared audio manifest.
type Clip struct {
	File       string
	Seconds    float64
	Language   string
	Transcript string
	WakeLike   string // the manifest's contains_wake_like_word column
}

// Group is the report group of an English reference clip: wake-word
// recordings (the manifest names a wake-like word and the transcript is
// just that word), short commands (smart-home phrases), or sentences.
func (c Clip) Group() string {
	switch {
	case c.WakeLike != "" && strings.EqualFold(strings.Join(Words(c.WakeLike), " "), strings.Join(Words(c.Transcript), " ")):
		return WakeWords
	case strings.HasPrefix(c.File, "stp_") || strings.HasPrefix(c.File, "rhasspy_"):
		return Commands
	default:
		return Sentences
	}
}

// ReadManifest reads shared/audio/MANIFEST.tsv (header line, then file,
// seconds, language, transcript, contains_wake_like_word, ...).
func ReadManifest(path string) ([]Clip, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read clip manifest: %w", err)
	}
	defer f.Close()
	var out []Clip
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			continue
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 5 {
			return nil, fmt.Errorf("%s line %d: %d columns, want at least 5", path, n, len(cols))
		}
		secs, err := strconv.ParseFloat(cols[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: seconds %q: %v", path, n, cols[1], err)
		}
		out = append(out, Clip{File: cols[0], Seconds: secs, Language: cols[2], Transcript: cols[3], WakeLike: cols[4]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// English returns the English clips that have a reference transcript,
// sorted by file name.
func English(clips []Clip) []Clip {
	var out []Clip
	for _, c := range clips {
		if c.Language == "en" && strings.TrimSpace(c.Transcript) != "" {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}

// Report scores hypotheses (by clip file) against the clips' transcripts,
// per group and in all. A clip without a hypothesis counts as empty text.
func Report(clips []Clip, hyp map[string]string) (all Tally, groups map[string]*Tally) {
	groups = map[string]*Tally{}
	for _, g := range GroupNames {
		groups[g] = &Tally{}
	}
	for _, c := range clips {
		all.Add(c.Transcript, hyp[c.File])
		groups[c.Group()].Add(c.Transcript, hyp[c.File])
	}
	return all, groups
}
