package tts

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Engine synthesizes speech. Implementations are safe for concurrent use.
type Engine interface {
	// Synthesize starts speaking text (already Prepared) in lang ("nl" or
	// "en"); the Stream delivers the audio. Cancelling ctx ends the stream.
	Synthesize(ctx context.Context, text, lang string) (Stream, error)
	// Name says which engine and voices run, for status and logs.
	Name() string
	Close() error
}

// Stream is one utterance being synthesized.
type Stream interface {
	// Read returns the next 16 kHz mono samples, io.EOF after the last.
	Read() ([]float32, error)
	// Close stops synthesis (if still running) and releases the process.
	Close() error
}

// Config chooses the engine and its voices.
type Config struct {
	Engine string            // "espeak-ng"
	Voices map[string]string // language ("nl", "en") -> engine voice name
	Rate   int               // words per minute; 0 = the engine's default
	Volume float64           // 0..1 scale on the samples
	// Binary overrides the engine's executable (default: found in PATH).
	Binary string
}

// Engines lists the names Config.Engine accepts.
var Engines = []string{"espeak-ng"}

// New starts the configured engine and checks that every voice loads.
func New(cfg Config) (Engine, error) {
	if cfg.Volume < 0 || cfg.Volume > 1 {
		return nil, fmt.Errorf("tts volume %v: want 0..1", cfg.Volume)
	}
	if len(cfg.Voices) == 0 {
		return nil, fmt.Errorf("tts: no voices configured")
	}
	switch cfg.Engine {
	case "espeak-ng":
		e, err := newEspeak(cfg)
		if err != nil {
			return nil, err // not a nil *espeak in a non-nil Engine
		}
		return e, nil
	default:
		return nil, fmt.Errorf("tts engine %q: unknown (have %s)", cfg.Engine, strings.Join(Engines, ", "))
	}
}

// Prepare makes untrusted reply text safe to speak as plain text: control
// characters become spaces, whitespace is collapsed, espeak-ng's phoneme
// brackets "[[" are broken up, and text longer than maxChars runes (0: no
// limit) is cut at the last sentence end within the limit (else the last
// word boundary). cut reports whether anything was dropped.
func Prepare(text string, maxChars int) (out string, cut bool) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	var b strings.Builder
	space := false
	for _, r := range text {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	out = b.String()
	for strings.Contains(out, "[[") {
		out = strings.ReplaceAll(out, "[[", "[ [")
	}
	for strings.Contains(out, "]]") {
		out = strings.ReplaceAll(out, "]]", "] ]")
	}
	if maxChars <= 0 || utf8.RuneCountInString(out) <= maxChars {
		return out, false
	}
	runes := []rune(out)[:maxChars]
	end := -1
	for i := len(runes) - 1; i > 0; i-- {
		if strings.ContainsRune(".!?…", runes[i]) && (i+1 == len(runes) || unicode.IsSpace(runes[i+1])) {
			end = i + 1
			break
		}
	}
	if end < 0 {
		for i := len(runes) - 1; i > 0; i-- {
			if unicode.IsSpace(runes[i]) {
				end = i
				break
			}
		}
	}
	if end < 0 {
		end = len(runes)
	}
	return strings.TrimSpace(string(runes[:end])), true
}
