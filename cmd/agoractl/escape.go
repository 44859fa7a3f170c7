package main

import (
	"strconv"
	"strings"
	"unicode"
)

// shown returns untrusted text (a backend's reply, a transcribed or typed
// note) safe to print on the operator's terminal: control characters (ANSI
// and OSC escapes, CR and LF that would forge table lines, tabs that would
// shift columns, C1 controls) and Unicode line/paragraph separators and
// bidi overrides are shown as Go escapes (\x1b, \r, \n, \u202e); everything
// else, accents included, is printed as is.
func shown(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == unicode.ReplacementChar || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) ||
		unicode.Is(unicode.Bidi_Control, r)
}
