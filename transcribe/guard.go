package transcribe

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
)

// Guard thresholds. Whisper invents text on silence and noise; these decide
// when a transcript is more likely invented than heard.
const (
	// DefaultSilenceRMS is the RMS below which audio is not sent to whisper
	// at all (about -56 dBFS: room tone, a muted microphone).
	DefaultSilenceRMS = 0.0015
	// suspectConfidence: a known hallucination with less confidence is dropped.
	suspectConfidence = 0.6
	// suspectDuration: a known hallucination from shorter audio is dropped.
	suspectDuration = 2 * time.Second
)

// alwaysRejectedPrefixes start transcripts that are never speech: non-speech
// annotations and the subtitle credits whisper learned from its training data.
var alwaysRejectedPrefixes = []string{
	"ondertiteld door",
	"ondertiteling door",
	"ondertitels ingediend door",
	"ondertiteling tv gelderland",
	"subtitles by",
	"subtitles made by",
	"sous titrage",
	"sous titres réalisés par",
}

// creditMarks anywhere in a transcript mark a subtitle credit.
var creditMarks = []string{"amara.org"}

// suspects are real phrases that whisper also produces on silence or noise:
// kept when heard confidently on enough audio, dropped otherwise.
var suspects = map[string]bool{
	"you": true, "thank you": true, "thank you very much": true, "thanks": true,
	"thanks for watching": true, "thank you for watching": true, "thanks for listening": true,
	"thank you for listening": true, "please subscribe": true, "subscribe": true,
	"like and subscribe": true, "bye": true, "bye bye": true, "so": true, "the end": true,
	"bedankt": true, "bedankt voor het kijken": true, "bedankt voor het luisteren": true,
	"dank je": true, "dank je wel": true, "dank u wel": true, "dankjewel": true,
	"tot de volgende keer": true, "tot ziens": true, "doei": true,
}

// guard decides whether text is a likely hallucination. It returns the reason
// to drop it, or "" to keep it.
func guard(text string, confidence float64, dur time.Duration) string {
	t := strings.TrimSpace(text)
	if t == "" {
		return ""
	}
	if isAnnotation(t) {
		return fmt.Sprintf("non-speech annotation %q", t)
	}
	norm := normalize(t)
	if norm == "" {
		return fmt.Sprintf("no words in %q", t)
	}
	credit := false
	for _, p := range alwaysRejectedPrefixes {
		credit = credit || strings.HasPrefix(norm, p)
	}
	for _, m := range creditMarks {
		credit = credit || strings.Contains(strings.ToLower(t), m)
	}
	if credit {
		return fmt.Sprintf("subtitle credit %q, a known whisper hallucination", t)
	}
	if suspects[norm] && (confidence < suspectConfidence || dur < suspectDuration) {
		return fmt.Sprintf("%q is a known whisper hallucination on silence/noise (confidence %.2f, audio %s)", t, confidence, dur.Round(10*time.Millisecond))
	}
	if n, reps, ok := repeatedNGram(strings.Fields(norm)); ok {
		return fmt.Sprintf("repetition loop: a %d-word phrase repeated %d times", n, reps)
	}
	return ""
}

// isAnnotation reports whether t is wholly made of bracketed or starred
// annotations and music symbols, like "[BLANK_AUDIO]", "(music)", "*applause*", "♪".
func isAnnotation(t string) bool {
	depth := 0
	inStar := false
	outside, marked := false, false
	for _, r := range t {
		switch {
		case r == '[' || r == '(':
			depth++
			marked = true
		case r == ']' || r == ')':
			if depth > 0 {
				depth--
			}
		case r == '*':
			inStar = !inStar
			marked = true
		case r == '♪' || r == '♫':
			marked = true
		case unicode.IsSpace(r) || unicode.IsPunct(r):
		default:
			if depth == 0 && !inStar {
				outside = true
			}
		}
	}
	return marked && !outside
}

// normalize lowercases, drops punctuation and collapses spaces.
func normalize(s string) string {
	var b strings.Builder
	space := true
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' {
			b.WriteRune(r)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

// repeatedNGram finds a phrase of 1..8 words repeated back to back that
// covers at least half the words, with at least 4 repeats for one word,
// 3 for longer phrases: whisper's decoder loop. Real speech repeats too
// ("nee, nee"), hence the thresholds.
func repeatedNGram(words []string) (n, reps int, ok bool) {
	for n = 1; n <= 8 && 2*n <= len(words); n++ {
		minReps := 3
		if n == 1 {
			minReps = 4
		}
		for start := 0; start+n*minReps <= len(words); start++ {
			reps = 1
			for i := start + n; i+n <= len(words) && equalWords(words[start:start+n], words[i:i+n]); i += n {
				reps++
			}
			if reps >= minReps && reps*n*2 >= len(words) {
				return n, reps, true
			}
		}
	}
	return 0, 0, false
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rms is the root mean square of samples.
func rms(samples []float32) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum float64
	for _, s := range samples {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(len(samples)))
}
