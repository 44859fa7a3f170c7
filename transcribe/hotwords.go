package transcribe

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ggerganov/whisper.cpp/bindings/go"
)

// hotwordCont is the continuation bias as a multiple of the first-token
// bias: once whisper has written the start of a hotword split into several
// tokens (tiny.en's " Ago"+"ra"), finishing it should win over a word that
// merely starts the same.
const hotwordCont = 2

// hotSeq is one spelling of a hotword in a model's tokens.
type hotSeq struct {
	tokens []whisper.Token
	// startOnly: the spelling without a leading space, biased only as a
	// segment's first text token; elsewhere it glues the name to the word
	// before ("askAgora").
	startOnly bool
}

// hotwordTokens returns the token sequences of the spellings whisper may
// write a hotword in: after a space and at the start of the text,
// capitalised and lower case. A lower-case spelling that whisper splits
// into several tokens is left out: its first token is usually a word of its
// own (tiny.en writes "agora" as " ago"+"ra"), and biasing " ago" would
// turn "two years ago" into the name. Duplicates are dropped.
func hotwordTokens(ctx *whisper.Context, words []string) []hotSeq {
	var out []hotSeq
	seen := map[string]bool{}
	buf := make([]whisper.Token, maxHotLen+1)
	for _, w := range words {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		lower := strings.ToLower(w)
		for _, s := range []string{" " + capitalise(lower), " " + lower, capitalise(lower)} {
			n, err := ctx.Whisper_tokenize(s, buf)
			if err != nil || n == 0 || n > maxHotLen {
				continue
			}
			if n > 1 && !startsUpper(strings.TrimSpace(s)) {
				continue
			}
			key := s
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, hotSeq{tokens: append([]whisper.Token(nil), buf[:n]...), startOnly: !strings.HasPrefix(s, " ")})
		}
	}
	return out
}

func capitalise(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func startsUpper(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}
