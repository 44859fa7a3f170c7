package wake

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The transcript's words as the rules see them: tokens with their byte
// offsets, folded to lower case without accents, and the sound key and edit
// distance the fuzzy matches compare.

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

// soundKey is the spelling-independent form of words joined: letters only,
// 'h' dropped inside a word (silent in "Agorah", "Ah gora"; kept at its start,
// so "Agora, he ..." is not "agorae"), doubled letters inside a word
// collapsed ("Aggora", "Agorra"; across words they stay, so "a year ago or
// a month" is not "agora"). Apostrophes are dropped with the other
// non-letters, so "agora's" keys as "agoras".
func soundKey(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		var last rune
		for i, c := range t.norm {
			if !unicode.IsLetter(c) || (c == 'h' && i > 0) || c == last {
				continue
			}
			b.WriteRune(c)
			last = c
		}
	}
	return b.String()
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
