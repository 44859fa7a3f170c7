package wake

import (
	"slices"
	"sort"
	"strings"
)

// Action is what a transcript asks the device to do.
type Action string

// Actions.
const (
	None     Action = ""
	Feedback Action = "feedback"
	Listen   Action = "listen"
)

// Match is the outcome for one transcript.
type Match struct {
	Action    Action
	Before    string // text before the wake phrase (trailing spaces and commas trimmed)
	Remainder string // text after the wake phrase (leading spaces and punctuation trimmed)
	Phrase    string // the wake phrase as written in the transcript, "" when none
}

// Rules match transcripts against a Config. They are read-only after New
// and safe for concurrent use.
type Rules struct {
	words        [][]string // normalised token sequences, longest first
	listen       [][]string
	fuzzy        []string        // sound keys of the one-word wake words matched fuzzily
	fuzzyListen  []string        // sound keys of the one-word listen words, for a lone last word
	listenSounds []string        // their phoneKeys, in the same order
	reject       map[string]bool // sound keys of Config.Reject
	rejectLong   []string        // those of them much longer than the name ("agoraphobia"), matched within one edit
	rejectTails  []string        // of those that begin with the name, the rest ("pobia" of "agoraphobia")
	rejectSplit  [][]string      // Config.Reject entries of several words that sound as a wake word ("ago ra"), as written
	name         string          // the first wake word, as configured: what MatchHeard writes for a spotted name
	nameKey      string          // phoneKey of name: what NameLike compares with
	nameSound    string          // soundKey of name: rejected words longer than it veto a spotted name
	fuse         float64         // Config.Fuse
	fuseLike     float64         // Config.FuseLike
}

// Fuzzy matching limits. A sound key shorter than minFuzzy letters is
// matched exactly: one edit in a short word reaches too many real words.
const (
	minFuzzy  = 5
	maxJoin   = 3 // tokens joined into one candidate ("a go ra")
	maxEdits  = 1 // edits allowed between one written word and a wake word
	maxReject = 3 // tokens a reject entry may span
)

// New validates cfg and prepares the rules.
func New(cfg Config) (*Rules, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Rules{words: phrases(cfg.Words), listen: phrases(cfg.ListenWords), reject: map[string]bool{}, name: strings.TrimSpace(cfg.Words[0]),
		fuse: cfg.Fuse, fuseLike: cfg.FuseLike}
	r.nameKey, r.nameSound = phoneKey(r.name), soundKey(tokens(r.name))
	for _, w := range cfg.Words {
		if toks := tokens(w); len(toks) == 1 {
			if k := soundKey(toks); len(k) >= minFuzzy {
				r.fuzzy = append(r.fuzzy, k)
			}
		}
	}
	for _, w := range cfg.ListenWords {
		if toks := tokens(w); len(toks) == 1 {
			if k := soundKey(toks); len(k) >= minFuzzy {
				r.fuzzyListen = append(r.fuzzyListen, k)
				r.listenSounds = append(r.listenSounds, phoneKey(w))
			}
		}
	}
	wakeSounds := make([]string, len(cfg.Words))
	for i, w := range cfg.Words {
		wakeSounds[i] = soundKey(tokens(w))
	}
	for _, w := range cfg.Reject {
		toks := tokens(w)
		k := soundKey(toks)
		if len(toks) > 1 && slices.Contains(wakeSounds, k) {
			// By its sound this is a wake word itself: it is rejected only
			// written so, word for word (as Validate compares it).
			r.rejectSplit = append(r.rejectSplit, phrases([]string{w})[0])
			continue
		}
		r.reject[k] = true
	}
	for k := range r.reject {
		if len([]rune(k)) >= len([]rune(r.nameSound))+minLonger {
			r.rejectLong = append(r.rejectLong, k)
			if tail, ok := strings.CutPrefix(k, r.nameSound); ok && len([]rune(tail)) >= minTail {
				r.rejectTails = append(r.rejectTails, tail)
			}
		}
	}
	slices.Sort(r.rejectLong)
	slices.Sort(r.rejectTails)
	return r, nil
}

// minLonger is how many letters longer than the name a rejected word must
// be to be rejected within one edit too: whisper writes "agoraphobia" as
// "Gora phobia" or "Agor phobia" as readily as the name itself
// misspelt, and a word that long is never the name one edit away. Shorter
// ones ("angora", one letter longer) stay exact: one edit from them is
// "an agora".
const minLonger = 3

// minTail is the least letters the rest of a rejected word after the name
// must have to veto a spotted name as a word of its own: "phobia" does,
// "s" of "agoras" does not.
const minTail = 4

// rejected reports whether k, the sound key of a run of words, is a
// rejected word's: exactly, or within one edit of a long one.
func (r *Rules) rejected(k string) bool {
	if r.reject[k] {
		return true
	}
	return nearAny(k, r.rejectLong)
}

// nearAny reports whether k is within maxEdits of one of keys (the length
// first: most are too long or short to be).
func nearAny(k string, keys []string) bool {
	n := len([]rune(k))
	for _, l := range keys {
		if d := n - len([]rune(l)); d >= -maxEdits && d <= maxEdits && editDistance(k, l) <= maxEdits {
			return true
		}
	}
	return false
}

func phrases(list []string) [][]string {
	out := make([][]string, 0, len(list))
	for _, w := range list {
		var seq []string
		for _, t := range tokens(w) {
			seq = append(seq, t.norm)
		}
		out = append(out, seq)
	}
	// Longest first, so "luister maar" wins over "luister".
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// Match finds the first wake phrase in text. A wake word is found where
//   - the words are a configured entry as written, or
//   - one written word is within one edit of a wake word's sound key
//     ("Adora", "Agorav", "Nagora"), or holds it with up to maxGlue
//     letters of its neighbours run into it ("Heagora", "agorade"), or
//   - two or three written words joined spell its sound key exactly
//     ("a gora", "Ah, gora"; "a gore a" is not one),
//
// and none of those words is part of a rejected word or phrase ("angora",
// "agora fobie"). Listen words must follow as written, except that a lone
// last word misspelt by one letter from a one-word listen word ("Agora,
// lisen.", "lissen", "luistr") switches back too: tiny.en writes "listen"
// so after "Agora" (issue 15). A real word one letter away ("listed",
// "lijsten", "lusten") is not the listen word misspelt, and words that only
// sound like it ("lesson", "Lee Sin", "later") are a question here: the
// audio must confirm them (TailFrom, heardTail; issue 45).
func (r *Rules) Match(text string) Match {
	toks := tokens(text)
	blocked := r.blocked(toks)
	for i := range toks {
		if blocked[i] && r.greeted(text, toks, i) {
			blocked[i] = false // "Hey Agra": whisper's spelling of the name, addressed
		}
		n := r.wakeAt(toks, i, blocked)
		if n == 0 {
			continue
		}
		start := i
		if i > 0 && greetings[toks[i-1].norm] && !strings.ContainsAny(text[toks[i-1].end:toks[i].start], ".!?") {
			start = i - 1 // "Hey Agora": the greeting is part of the phrase, not a note
		}
		m := Match{Action: Feedback, Before: trimBefore(text[:toks[start].start])}
		end := toks[i+n-1].end
		if k := matchAt(toks, i+n, r.listen); k > 0 {
			m.Action = Listen
			end = toks[i+n+k-1].end
		} else if rest := toks[i+n:]; len(rest) == 1 && r.listenSpelt(rest[0]) {
			m.Action = Listen // "ahh gora lisen": the switch back, misspelt
			end = toks[len(toks)-1].end
		}
		m.Phrase = text[toks[start].start:end]
		m.Remainder = trimRemainder(text[end:])
		return m
	}
	return Match{Action: None}
}

// greeted reports whether toks[i] is a rejected word no longer than the
// name ("Agra", "ahora": how whisper writes the name itself) right after a
// greeting in the same sentence: "Hey Agra, listen." is said to the device
// (tiny.en wrote "Agra" right after the greeting for 5 of the 14 greeted
// positives of the wake benchmark's every-fourth run, 4 of flite's 5);
// "We flew to Agra" has no greeting.
func (r *Rules) greeted(text string, toks []token, i int) bool {
	if i == 0 || !greetings[toks[i-1].norm] || strings.ContainsAny(text[toks[i-1].end:toks[i].start], ".!?") {
		return false
	}
	k := soundKey(toks[i : i+1])
	return r.reject[k] && len(k) <= len(r.nameSound)
}

// greetings right before a wake word, in the same sentence, belong to the
// wake phrase ("Hey Agora", "Oké, Agora"): they are no note for the listen
// buffer. "Okay. Agora, ..." keeps its "Okay.". Whisper
// writes the wake word after a greeting far more reliably than at the
// start of an utterance (issue 15's note), so people are told to say it.
var greetings = map[string]bool{"hello": true, "hallo": true, "hey": true, "hi": true, "hoi": true, "he": true,
	"hee": true, "hai": true, "goedemorgen": true, "goedemiddag": true, "goedenavond": true,
	"okay": true, "ok": true, "oke": true}

// wakeAt returns how many tokens from i make a wake word, or 0.
func (r *Rules) wakeAt(toks []token, i int, blocked []bool) int {
	if n := matchAt(toks, i, r.words); n > 0 && !anyBlocked(blocked, i, n) {
		return n
	}
	one := soundKey(toks[i : i+1])
	for _, want := range r.fuzzy {
		// One edit off ("Adora"), or run into its neighbours ("Heagora").
		if !blocked[i] && (editDistance(one, want) <= maxEdits || r.glued(one, want)) {
			return 1
		}
		for n := 2; n <= maxJoin && i+n <= len(toks); n++ {
			if !anyBlocked(blocked, i, n) && soundKey(toks[i:i+n]) == want {
				return n
			}
		}
	}
	return 0
}

// blocked marks the tokens that are part of a rejected word or phrase, as
// written or split ("agora fobie" is "agorafobie").
func (r *Rules) blocked(toks []token) []bool {
	out := make([]bool, len(toks))
	for i := range toks {
		for n := 1; n <= maxReject && i+n <= len(toks); n++ {
			if r.rejected(soundKey(toks[i : i+n])) {
				for k := i; k < i+n; k++ {
					out[k] = true
				}
			}
		}
		for k := i; k < i+matchAt(toks, i, r.rejectSplit); k++ {
			out[k] = true
		}
	}
	return out
}

func anyBlocked(blocked []bool, i, n int) bool {
	for _, b := range blocked[i : i+n] {
		if b {
			return true
		}
	}
	return false
}

// matchAt returns how many tokens of one of seqs match toks at i, or 0.
func matchAt(toks []token, i int, seqs [][]string) int {
next:
	for _, seq := range seqs {
		if i+len(seq) > len(toks) {
			continue
		}
		for k, w := range seq {
			if toks[i+k].norm != w {
				continue next
			}
		}
		return len(seq)
	}
	return 0
}
