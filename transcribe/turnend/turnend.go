package turnend

import (
	"strings"
	"unicode"
)

// unfinished are words a complete sentence does not end on: articles,
// prepositions, conjunctions, possessives and auxiliaries, English and
// Dutch. Whisper puts a full stop after "the crack runs from the" as
// readily as after a whole sentence; these words give it away.
var unfinished = wordSet(
	// English: not the particles of phrasal verbs ("turn the lights on",
	// "check it out") nor demonstratives ("what is this?").
	"a", "an", "the", "and", "or", "but", "nor", "because", "if", "when", "while", "than", "to", "of", "at",
	"by", "from", "with", "into", "onto", "between", "under", "through", "my", "your", "his", "her", "its",
	"our", "their", "is", "are", "was", "were", "be", "been", "has", "have", "had", "can", "could", "will",
	"would", "should", "must", "might", "shall", "um", "uh", "erm", "very", "every", "each",
	// Dutch: not the verbs, which end Dutch clauses ("of het veilig is"),
	// nor the particles of separable verbs ("zet het licht aan").
	"de", "het", "een", "en", "of", "maar", "want", "omdat", "als", "dan", "te", "van", "naar", "met", "tot",
	"tussen", "tegen", "zonder", "mijn", "jouw", "onze", "hun", "ehm", "eh", "uhm", "welke", "geen", "heel",
)

func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// Complete reports whether text reads as a finished utterance: it ends
// with sentence punctuation (. ? !, not an ellipsis: whisper's "…" or
// "..." marks speech trailing off) and its last word is not one a sentence
// goes on after.
func Complete(text string) bool {
	t := strings.TrimRightFunc(text, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '\'' || r == ')' })
	if t == "" {
		return false
	}
	if strings.HasSuffix(t, "...") || strings.HasSuffix(t, "…") {
		return false
	}
	switch t[len(t)-1] {
	case '.', '?', '!':
	default:
		return false
	}
	fields := strings.Fields(t)
	last := strings.ToLower(strings.TrimFunc(fields[len(fields)-1], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
	return last != "" && !unfinished[last]
}

// Question reports whether text is a complete question: Complete and
// ending with a question mark. Narrower than Complete: a pause after a
// phrase whisper closes with a full stop ("And so my fellow Americans.",
// "Niet super.") does not end the turn.
func Question(text string) bool {
	return Complete(text) && strings.HasSuffix(strings.TrimSpace(text), "?")
}

// Rule returns the test of a rule name (configs' segment.complete_rule):
// "question" or "sentence"; nil for any other name.
func Rule(name string) func(string) bool {
	switch name {
	case "question":
		return Question
	case "sentence":
		return Complete
	}
	return nil
}
