// Package wake finds wake phrases in transcripts: "agora" switches the
// device to feedback mode and the rest of the utterance is the request;
// "agora luister" / "agora listen" switches back to listening. Matching is
// on whole words, ignoring case, accents and punctuation, and tolerates the
// spellings whisper produces for "agora"; the text handed back keeps its
// original casing and punctuation.
package wake

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Action is what a transcript asks the device to do.
type Action string

// Actions.
const (
	None     Action = ""
	Feedback Action = "feedback"
	Listen   Action = "listen"
)

// Config lists the words that make up wake phrases. Entries may be several
// words ("a gora", "luister maar").
type Config struct {
	// Words are "agora" and the spellings whisper writes for it. Each
	// alias must be safe: not a word an inspector says for something else
	// ("angora", "ahora" and "aurora" are real words, so not defaults).
	Words []string `yaml:"words"`
	// ListenWords, right after a wake word, switch back to listen mode.
	ListenWords []string `yaml:"listen_words"`
}

// DefaultConfig is Dutch and English. Accented spellings ("agorà",
// "ágora") need no entry: matching ignores accents.
func DefaultConfig() Config {
	return Config{
		// adora, argoer: what real Whisper base and tiny.en wrote for a
		// spoken "Agora" (issue 15's espeak-ng sentences); neither is a word
		// an inspector says.
		Words:       []string{"agora", "a gora", "aggora", "agorra", "agorah", "adora", "argoer"},
		ListenWords: []string{"luister", "luister maar", "luisteren", "listen", "listen up", "listening"},
	}
}

// Validate reports the first bad entry, naming its field and index.
func (c Config) Validate() error {
	if len(c.Words) == 0 {
		return errors.New("wake.words: empty: at least one wake word (\"agora\") is needed")
	}
	seen := map[string]string{}
	check := func(field string, list []string) error {
		for i, w := range list {
			toks := tokens(w)
			if len(toks) == 0 {
				return fmt.Errorf("wake.%s[%d]: %q has no letters or digits", field, i, w)
			}
			key := joinNorm(toks)
			if prev, dup := seen[key]; dup {
				return fmt.Errorf("wake.%s[%d]: %q is the same as %s once case, accents and punctuation are ignored", field, i, w, prev)
			}
			seen[key] = fmt.Sprintf("wake.%s[%d]", field, i)
		}
		return nil
	}
	if err := check("words", c.Words); err != nil {
		return err
	}
	return check("listen_words", c.ListenWords)
}

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
	words  [][]string // normalised token sequences, longest first
	listen [][]string
}

// New validates cfg and prepares the rules.
func New(cfg Config) (*Rules, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Rules{words: phrases(cfg.Words), listen: phrases(cfg.ListenWords)}, nil
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

// Match finds the first wake phrase in text.
func (r *Rules) Match(text string) Match {
	toks := tokens(text)
	for i := range toks {
		n := matchAt(toks, i, r.words)
		if n == 0 {
			continue
		}
		m := Match{Action: Feedback, Before: trimBefore(text[:toks[i].start])}
		end := toks[i+n-1].end
		if k := matchAt(toks, i+n, r.listen); k > 0 {
			m.Action = Listen
			end = toks[i+n+k-1].end
		}
		m.Phrase = text[toks[i].start:end]
		m.Remainder = trimRemainder(text[end:])
		return m
	}
	return Match{Action: None}
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

// token is one word of a text: its byte span and normalised form.
type token struct {
	start, end int
	norm       string
}

// tokens splits s into words: runs of letters and digits, with apostrophes
// inside a word kept ("agora's" is not "agora"). norm is lowercase without
// accents.
func tokens(s string) []token {
	var out []token
	var b strings.Builder
	start := -1
	flush := func(end int) {
		if start >= 0 {
			out = append(out, token{start: start, end: end, norm: b.String()})
			b.Reset()
			start = -1
		}
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
			if f := fold(r); f != 0 {
				b.WriteRune(f)
			}
		case (r == '\'' || r == '’') && start >= 0 && nextIsLetter(s[i+utf8.RuneLen(r):]):
			b.WriteByte('\'')
		case unicode.Is(unicode.Mn, r) && start >= 0: // combining accent: dropped
		default:
			flush(i)
		}
	}
	flush(len(s))
	return out
}

func nextIsLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}

func joinNorm(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.norm
	}
	return strings.Join(parts, " ")
}

// fold lowercases r and strips the accent of Latin letters.
func fold(r rune) rune {
	r = unicode.ToLower(r)
	if f, ok := accents[r]; ok {
		return f
	}
	return r
}

var accents = func() map[rune]rune {
	m := map[rune]rune{}
	for base, list := range map[rune]string{
		'a': "àáâãäåāăą", 'c': "çćĉċč", 'd': "ďđ", 'e': "èéêëēĕėęě", 'g': "ĝğġģ", 'h': "ĥħ",
		'i': "ìíîïĩīĭįı", 'j': "ĵ", 'k': "ķ", 'l': "ĺļľŀł", 'n': "ñńņňŉ", 'o': "òóôõöøōŏő",
		'r': "ŕŗř", 's': "śŝşšș", 't': "ţťŧț", 'u': "ùúûüũūŭůűų", 'w': "ŵ", 'y': "ýÿŷ", 'z': "źżž",
	} {
		for _, r := range list {
			m[r] = base
		}
	}
	return m
}()

// trimBefore drops trailing spaces and the commas/dashes that lead into the
// wake word, keeping sentence-ending punctuation.
func trimBefore(s string) string {
	return strings.TrimRightFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(",;:-–—", r)
	})
}

// trimRemainder drops the spaces and punctuation between the wake phrase
// and the request ("AGORA, what ..." -> "what ..."), but not an opening
// quote or bracket that belongs to the request.
func trimRemainder(s string) string {
	return strings.TrimLeftFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (unicode.IsPunct(r) && !unicode.Is(unicode.Ps, r) && !unicode.Is(unicode.Pi, r) && r != '"' && r != '\'')
	})
}
