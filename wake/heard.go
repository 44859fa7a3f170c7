package wake

import (
	"slices"
	"strings"
	"time"
)

// Word is one word of a transcript and where the utterance says it (from
// its start); Start and End are negative when not known.
type Word struct {
	Text       string
	Start, End time.Duration
}

// Placing a spotted name among whisper's words. The spotter's end is that
// of its best 80 ms window, typically 0.1 to 0.3 s after the name. With the
// transcriber's own word times (transcribe/wordtimes.go) the first word of
// the question started a median 0.28 s before the spotter's end on the
// wake benchmark (quartiles 0 and 0.56 s; a pause after the name puts it
// later); with whisper.cpp's, which ran early, 0.53 s (issue 24 note).
// A spotLag of 150 to 300 ms gave the question 35.9 to 37.1 % WER there,
// the former 500 ms 44.5 %; 250 ms is about that median.
const (
	spotLag     = 250 * time.Millisecond // the name's end on the word clock: the spotter's end minus this
	spotSlack   = 100 * time.Millisecond // a word starting this much before that is still after the name
	spotNameLen = 700 * time.Millisecond // a word ending this long before it is before the name
)

// MatchHeard is Match for an utterance in which the keyword spotter heard
// the name, ending at nameEnd. Whisper's own text decides when it has the
// wake phrase; otherwise the words whisper wrote where the name was said
// ("I've got a", "$1") are the name: the words before stay notes, the words
// after are the request, and listen words right after switch back, as if
// whisper had written the name. Without word times the whole text is the
// request. Where whisper wrote a rejected word longer than the name
// (Config.Reject: "angora", "agoraphobia") at the name's place, or anywhere
// when there are no times, the name was heard inside that word: no wake.
func (r *Rules) MatchHeard(text string, words []Word, nameEnd time.Duration) Match {
	if m := r.Match(text); m.Action != None {
		return m
	}
	end := nameEnd - spotLag
	var before, name, after []string
	for _, w := range words {
		switch {
		case w.Start < 0 || w.End < 0:
			if r.vetoes(text) {
				return Match{}
			}
			return r.Match(r.name + " " + text)
		case w.Start >= end-spotSlack:
			after = append(after, w.Text)
		case w.End <= end-spotNameLen && len(name) == 0 && len(after) == 0:
			before = append(before, w.Text)
		default:
			name = append(name, w.Text)
		}
	}
	if r.vetoes(strings.Join(name, " ")) || r.tailOfRejected(words, end) {
		return Match{}
	}
	// The composed text has the name where it was said, and no other (the
	// transcript matched none): Match then handles greetings before it and
	// listen words after it as for a written name.
	compose := func(after []string) Match {
		return r.Match(strings.TrimSpace(strings.Join(before, " ") + " " + r.name + " " + strings.Join(after, " ")))
	}
	m := compose(after)
	// Word times are rough: when the last of the misheard name was put
	// after it ("Gorbeth, listen."), listen words that end the utterance
	// still switch back.
	if m.Action != Listen && len(after) >= 2 {
		if alt := compose(after[1:]); alt.Action == Listen && alt.Remainder == "" {
			m, name = alt, append(name, after[0])
		}
	}
	// And when the listen words that end the utterance were put inside the
	// name's place ("Agra Listen." said fast), they still switch back; the
	// name keeps at least its first word.
	for k := len(name) - 1; m.Action != Listen && k >= 1; k-- {
		if alt := compose(append(slices.Clone(name[k:]), after...)); alt.Action == Listen && alt.Remainder == "" {
			m, name = alt, name[:k]
		}
	}
	m.Phrase = strings.Join(name, " ")
	return m
}

// tailOfRejected reports whether a word at the name's place, or starting
// up to tailReach after it, is within one edit the rest of a rejected word
// that begins with the name: "phobia" of "agoraphobia", "fobie" of
// "agorafobie". Whisper writes the name's part of such a word as anything
// ("I've got a", "all a") and the rest as a word of its own; the spotter,
// which heard the name's part, often fires before the rest is said.
func (r *Rules) tailOfRejected(words []Word, end time.Duration) bool {
	for _, w := range words {
		if w.End <= end-spotNameLen || w.Start >= end+tailReach {
			continue
		}
		if nearAny(soundKey(tokens(w.Text)), r.rejectTails) {
			return true
		}
	}
	return false
}

// tailReach is how long after the name's end on the word clock a word may
// start and still be the rest of a word that began with the name: on the
// wake benchmark's "agoraphobia" sentences (tiny.en), whisper's "phobia"
// started up to 0.23 s after it.
const tailReach = 400 * time.Millisecond

// vetoes reports whether text holds a rejected word or phrase longer than
// the name: the name heard inside another word ("angora", "agorafobie").
// Shorter ones ("Agra", "ahora") are how whisper writes the name itself.
// Rejected words that sound as the name written apart ("ago ra") veto too:
// whisper heard two words where the name's sound was.
func (r *Rules) vetoes(text string) bool {
	toks := tokens(text)
	for i := range toks {
		if matchAt(toks, i, r.rejectSplit) > 0 {
			return true
		}
		for n := 1; n <= maxReject && i+n <= len(toks); n++ {
			if k := soundKey(toks[i : i+n]); r.rejected(k) && len(k) > len(r.nameSound) {
				return true
			}
		}
	}
	return false
}
