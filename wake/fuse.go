package wake

import (
	"regexp"
	"strings"
	"time"
)

// Spot is the keyword spotter's verdict on one utterance (wake/kws): its
// best score, where that window ended, and whether the score reached the
// spotter's own threshold (the name counts on the audio alone).
type Spot struct {
	Score float64
	End   time.Duration
	Heard bool
	// Late is the late head's part of Score (kws.Hit.Late), the spotter's
	// hearing of the words after the name; 0 when not known (a spotter
	// without a late head), and the band then does not ask it.
	Late float64
	// Tail is whisper's text for the audio after the name alone, when it
	// was transcribed again (Rules.TailFrom): listen words at its start
	// are the switch back, whatever whisper wrote after the name in the
	// whole utterance.
	Tail string
}

// MatchSpot is the fused verdict on an utterance the keyword spotter
// scored: whisper's own text decides when it has the wake phrase; a spot
// the spotter is sure of (Heard) is the name, placed by MatchHeard; a score
// in the fuse band (from Config.Fuse up) is the name only where whisper
// wrote something that sounds like it at the spotter's place ("I've got
// a", "a dollar", "Agor": NameLike at least Config.FuseLike) and the late
// head, which hears what follows, agrees (s.Late at least bandLate). Below the
// band, or where whisper wrote nothing like the name, the text alone
// decides. Rejected words at the place veto as in MatchHeard. A name taken
// as a question is the switch back when s.Tail starts with listen words.
//
// Where whisper wrote nothing (its guard dropped a repetition loop or a
// "[Music]" it wrote for speech with a word it does not know in it), a
// spot the spotter is sure of is still the name: the question is s.Tail,
// the speech after the name transcribed on its own (TailFrom), or none
// when that too gave nothing; listen words at its start switch back.
func (r *Rules) MatchSpot(text string, words []Word, s Spot) Match {
	if strings.TrimSpace(text) == "" {
		if !s.Heard {
			return Match{} // whisper heard no words, the spotter no name: nothing to ask
		}
		if m := r.Match(s.Tail); m.Action != None && m.Before == "" {
			return m // the tail starts with the name: the spotter placed it early
		}
		return r.heardTail(Match{Action: Feedback, Remainder: strings.TrimSpace(s.Tail)}, s.Tail)
	}
	if m := r.Match(text); m.Action != None {
		return r.heardTail(m, s.Tail)
	}
	switch {
	case s.Heard:
	case r.fuse > 0 && s.Score >= r.fuse && (s.Late == 0 || s.Late >= bandLate) && r.NameLike(words, s.End) >= r.fuseLike:
	default:
		return Match{}
	}
	return r.heardTail(r.MatchHeard(text, words, s.End), s.Tail)
}

// bandLate is the least late head's part a score in the fuse band needs:
// there whisper's word sounds like the name and may be another word that
// does ("We flew to Agra to see"), and the late head hears what follows.
// On the wake benchmark every name the band took had a late part of 0.98
// or more; "Agra" by festival 0.90 (docs/wake.md, issue 21's eighth round).
const bandLate = 0.95

// The place NameLike looks at, around the name's end on whisper's clock
// (the spotter's end minus spotLag): words that overlap from
// spotNameLen+likeSlack before it to likeSlack after it. Wider than
// MatchHeard's split: word times are off by a few tenths of a second.
const likeSlack = 300 * time.Millisecond

// NameLike is how much the words whisper wrote where the spotter heard the
// name, ending at nameEnd, sound like the name: 1 minus the edit distance
// between their phonetic key (phoneKey) and the name's, over the longer
// key; the best run of one to maxJoin consecutive words in that place.
// Whisper writes a word it does not know as the words that sound nearest
// ("I've got a", "a dollar", "Agor", "how to learn"); speech without the
// name has, at the same place, words that sound like something else.
// Without word times the whole text is the place. 0 when no word is there.
func (r *Rules) NameLike(words []Word, nameEnd time.Duration) float64 {
	end := nameEnd - spotLag
	from, to := end-spotNameLen-likeSlack, end+likeSlack
	var place []string
	for _, w := range words {
		if w.Start < 0 || w.End < 0 || (w.End > from && w.Start < to) {
			place = append(place, w.Text)
		}
	}
	best := 0.0
	for i := range place {
		for n := 1; n <= maxJoin && i+n <= len(place); n++ {
			if s := keySimilarity(phoneKey(strings.Join(place[i:i+n], " ")), r.nameKey); s > best {
				best = s
			}
		}
	}
	return best
}

// keySimilarity is 1 minus the edit distance of a and b over the longer.
func keySimilarity(a, b string) float64 {
	n := max(len([]rune(a)), len([]rune(b)))
	if n == 0 {
		return 0
	}
	return 1 - float64(editDistance(a, b))/float64(n)
}

// phoneKey is a coarse sound of text, the way a listener who does not know
// the word would confuse it: every vowel (and y) is one vowel 'a'; voiced
// and voiceless pairs are one consonant (g k c q x ch → k, d t → t, b p →
// p, f v → f, s z → s), l and r are one liquid, m and n one nasal; h and w
// are dropped, and repeats collapse. Digits are read as English numbers and
// amounts as said ("$1": "a dollar"): whisper writes the name "$1".
func phoneKey(text string) string {
	var spoken []string
	for _, t := range tokens(dollars.ReplaceAllStringFunc(text, sayDollars)) {
		if len(t.norm) == 1 && t.norm[0] >= '0' && t.norm[0] <= '9' {
			t.norm = numberWords[t.norm[0]-'0']
		}
		spoken = append(spoken, t.norm)
	}
	rs := []rune(strings.Join(spoken, " "))
	var b strings.Builder
	var last rune
	for i := 0; i < len(rs); i++ {
		k, ok := phoneClass[rs[i]]
		if !ok {
			continue // h, w, apostrophes, spaces: no sound of their own here
		}
		if rs[i] == 'c' && i+1 < len(rs) && rs[i+1] == 'h' {
			i++ // "ch" as in Dutch "ach": one sound
		}
		if k != last {
			b.WriteRune(k)
		}
		last = k
	}
	return b.String()
}

// phoneClass is each letter's class in phoneKey.
var phoneClass = func() map[rune]rune {
	m := map[rune]rune{}
	for class, letters := range map[rune]string{'a': "aeiouy", 'k': "gkqxjc", 't': "dt", 'p': "bp", 'f': "fv", 's': "sz", 'r': "lr", 'n': "mn"} {
		for _, c := range letters {
			m[c] = class
		}
	}
	return m
}()

var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// dollars is an amount whisper wrote with a dollar sign.
var dollars = regexp.MustCompile(`\$\d+`)

// sayDollars reads an amount as said: "$1" is "a dollar" (what whisper
// heard when it wrote it), "$5" "5 dollar".
func sayDollars(amount string) string {
	if amount == "$1" {
		return " a dollar "
	}
	return " " + amount[1:] + " dollar "
}
