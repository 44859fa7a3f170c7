package bridge

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// sentenceCutter cuts an answer streamed in deltas into sentence-sized
// pieces as it comes: a piece ends after a sentence end (., ?, !, … or a
// line break) once the text after it shows that a new sentence starts,
// never after a number's point ("3.5"), a common abbreviation ("e.g.",
// "bijv.") or an initial ("J."), nor before a lowercase word. Text that
// runs on without a sentence end is cut at limit bytes (at a space in its
// second half, else at a rune boundary), so it holds at most limit bytes
// plus the delta being read, and no piece exceeds limit.
type sentenceCutter struct {
	buf   string
	limit int
}

// Write adds delta and returns the pieces now complete, sentences that
// came together joined while they fit in limit.
func (c *sentenceCutter) Write(delta string) []string {
	c.buf += delta
	var out []string
	for {
		cut := sentenceEnd(c.buf, c.limit)
		if cut < 0 && len(c.buf) > c.limit {
			cut = boundCut(c.buf, c.limit)
		}
		if cut < 0 {
			break
		}
		if cut > c.limit { // a sentence longer than a part
			cut = boundCut(c.buf, c.limit)
		}
		piece := strings.TrimSpace(c.buf[:cut])
		c.buf = c.buf[cut:]
		if piece == "" {
			continue
		}
		if n := len(out); n > 0 && len(out[n-1])+1+len(piece) <= c.limit {
			out[n-1] += " " + piece
		} else {
			out = append(out, piece)
		}
	}
	return out
}

// Flush returns what is left (the answer's last piece), "" when nothing.
func (c *sentenceCutter) Flush() string {
	rest := strings.TrimSpace(c.buf)
	c.buf = ""
	return rest
}

// abbreviations end with a point without ending a sentence (English and
// Dutch, as an inspector's answer writes them; lowercase, without the
// final point).
var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "etc": true, "approx": true, "incl": true, "excl": true, "min": true, "max": true,
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true, "vs": true, "fig": true, "no": true,
	"nr": true, "art": true, "ca": true, "bijv": true, "o.a": true, "m.a.w": true, "d.w.z": true, "dhr": true,
	"mevr": true, "mw": true, "ir": true, "ing": true, "zgn": true, "resp": true, "evt": true, "i.p.v": true,
	"t.o.v": true, "z.s.m": true, "jl": true, "a.s": true, "blz": true, "hfst": true,
}

// sentenceEnd returns where the first complete sentence of s ends (the
// index of the next sentence's first character), -1 when none is known yet.
// It looks at about 2*limit bytes at most (a sentence longer than limit is
// cut at the bound anyway), so a huge delta is cut in linear time.
func sentenceEnd(s string, limit int) int {
	if len(s) > 2*limit {
		s = s[:2*limit]
	}
	for i := 0; i < len(s) && i <= limit; {
		r, size := utf8.DecodeRuneInString(s[i:])
		j := i + size
		switch r {
		case '\n':
			if k := nextWord(s, j); k > 0 {
				return k
			}
			return -1 // the next line has not begun
		case '.', '?', '!', '…':
			for j < len(s) && strings.ContainsRune(`"')]»”’`, rune(s[j])) {
				j++
			}
			if j >= len(s) {
				return -1 // what follows is not written yet
			}
			if s[j] != ' ' && s[j] != '\n' && s[j] != '\t' {
				break // "3.5", "a.b": not an end
			}
			k := nextWord(s, j)
			if k < 0 {
				return -1
			}
			next, _ := utf8.DecodeRuneInString(s[k:])
			if unicode.IsLower(next) || (r == '.' && abbreviated(s[:i])) {
				break
			}
			return k
		}
		i = j
	}
	return -1
}

// nextWord returns the index of the first non-space character at or after
// j, -1 when the text ends in spaces.
func nextWord(s string, j int) int {
	for k := j; k < len(s); k++ {
		if s[k] != ' ' && s[k] != '\n' && s[k] != '\t' && s[k] != '\r' {
			return k
		}
	}
	return -1
}

// abbreviated reports whether the word before a point (the end of head) is
// an abbreviation or a single letter (an initial).
func abbreviated(head string) bool {
	w := head[strings.LastIndexAny(head, " \n\t(\"'")+1:]
	if utf8.RuneCountInString(w) == 1 && unicode.IsLetter([]rune(w)[0]) {
		return true
	}
	return abbreviations[strings.ToLower(w)]
}

// boundCut is where text without a sentence end is cut: after the last
// space in s[:limit] when it lies in the second half, else at the last
// rune boundary at or before limit.
func boundCut(s string, limit int) int {
	if i := strings.LastIndexAny(s[:limit], " \n\t"); i >= limit/2 {
		return i + 1
	}
	cut := limit
	for cut > 1 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}
