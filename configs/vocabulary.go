package configs

import (
	_ "embed"
	"fmt"
	"os"
	"slices"
	"strings"
)

// The vocabulary lists agorad ships (transcribe.vocabulary names them):
// written from the domain, never from test recordings.
var (
	//go:embed vocabulary-nl.txt
	vocabularyInspectionNL string
	builtinVocabulary      = map[string]string{"inspection-nl": vocabularyInspectionNL}
)

// Vocabulary limits: whisper keeps at most 223 prompt tokens, and a term is
// a few words.
const (
	maxVocabularyTerms   = 64
	maxVocabularyTermLen = 64
	maxVocabularyBytes   = 16 << 10
)

// VocabularyTerms reads transcribe.vocabulary: per language, the terms of a
// built-in list or of a file (one term a line, '#' starts a comment).
// Errors name the field.
func (t Transcribe) VocabularyTerms() (map[string][]string, error) {
	out := map[string][]string{}
	for lang, src := range t.Vocabulary {
		field := "transcribe.vocabulary." + lang
		if !slices.Contains(whisperLanguages, lang) {
			return nil, fmt.Errorf("%s: %s is not a language whisper knows (a code such as nl, en)", field, quote(lang))
		}
		text, ok := builtinVocabulary[src]
		if !ok {
			b, err := readBounded(src, maxVocabularyBytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w (a file of terms, or one of the built-in lists: inspection-nl)", field, err)
			}
			text = string(b)
		}
		terms, err := parseVocabulary(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", field, src, err)
		}
		out[lang] = terms
	}
	return out, nil
}

func readBounded(path string, limit int) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", path, len(b), limit)
	}
	return b, nil
}

// parseVocabulary is the terms of a list: one a line, blank lines and
// '#' comments skipped.
func parseVocabulary(text string) ([]string, error) {
	var terms []string
	for i, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if len(line) > maxVocabularyTermLen {
			return nil, fmt.Errorf("line %d: a term of %d bytes, more than %d", i+1, len(line), maxVocabularyTermLen)
		}
		terms = append(terms, line)
	}
	if len(terms) > maxVocabularyTerms {
		return nil, fmt.Errorf("%d terms, more than %d (whisper keeps at most 223 prompt tokens)", len(terms), maxVocabularyTerms)
	}
	return terms, nil
}
