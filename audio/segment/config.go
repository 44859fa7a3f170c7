package segment

import (
	"fmt"
	"time"
)

// Config tunes the segmenter. Durations are rounded to whole VAD windows
// (32 ms at 16 kHz).
type Config struct {
	// OnsetThreshold is the speech probability that starts an utterance.
	OnsetThreshold float64
	// OffsetThreshold is the probability below which a window counts as
	// silence once speech has started (hysteresis: below OnsetThreshold).
	OffsetThreshold float64
	// MinSpeech drops utterances whose speech is shorter (clicks, coughs).
	MinSpeech time.Duration
	// MinSilence (hangover) is the silence that ends an utterance, the end
	// of a turn; shorter pauses inside a sentence do not split it. Measured
	// on real speech (issue 15): at 600 ms jfk's ~1.05 s pauses cut it in
	// three ("And so my fellow Americans." / "Ask not!" / ...), so a feedback
	// question with a pause became two backend runs and every piece paid a
	// whole whisper call; at 1.2 s none of the 68 English reference clips is
	// split (only a multi-speaker clip, at 1.7 s and 2.5 s gaps), for 0.6 s
	// more latency before a question is sent.
	MinSilence time.Duration
	// PreRoll is audio kept before the detected onset (soft first consonants).
	// 500 ms, measured on real tiny.en (issue 15): at 300 ms Silero's onset
	// clipped the start of short commands ("turn off lights in the office"
	// became "our flight to New Rapids") and the 68 English reference clips
	// scored 13.3 % WER against whisper-cli's 11.6 % on whole clips; at
	// 500 ms agorad scores 11.2 %.
	PreRoll time.Duration
	// PostPad is audio kept after the detected end of speech.
	PostPad time.Duration
	// MaxUtterance caps an utterance's length (samples including padding):
	// whisper sees at most 30 s at a time. Longer speech is split.
	MaxUtterance time.Duration
	// SplitSearch is how far back from the cap the split looks for the
	// quietest window, so it cuts in a pause rather than mid-word.
	SplitSearch time.Duration
	// GateFloorDBFS is the absolute energy gate: windows quieter than this
	// are silence without asking the VAD.
	GateFloorDBFS float64
	// GateMarginDB is how far above the adaptive noise floor a window must be
	// to reach the VAD.
	GateMarginDB float64
	// GateResetAfter resets the VAD's state after this long a gated stretch,
	// so stale context does not bias the next onset.
	GateResetAfter time.Duration
	// Warmup is how much audio before a gate opening is also scored, so the
	// VAD has context and an onset is placed where it really begins.
	Warmup time.Duration
}

// DefaultConfig is tuned for a handheld or headset microphone.
func DefaultConfig() Config {
	return Config{
		OnsetThreshold:  0.5,
		OffsetThreshold: 0.35,
		MinSpeech:       250 * time.Millisecond,
		MinSilence:      1200 * time.Millisecond,
		PreRoll:         500 * time.Millisecond,
		PostPad:         250 * time.Millisecond,
		MaxUtterance:    30 * time.Second,
		SplitSearch:     3 * time.Second,
		GateFloorDBFS:   -55,
		GateMarginDB:    8,
		GateResetAfter:  time.Second,
		Warmup:          128 * time.Millisecond,
	}
}

// Validate reports the first field that makes no sense, by name.
func (c Config) Validate() error {
	bad := func(field string, format string, a ...any) error {
		return fmt.Errorf("segment config: %s %s", field, fmt.Sprintf(format, a...))
	}
	switch {
	case !(c.OnsetThreshold > 0 && c.OnsetThreshold < 1):
		return bad("OnsetThreshold", "%v is not between 0 and 1", c.OnsetThreshold)
	case !(c.OffsetThreshold > 0 && c.OffsetThreshold < 1):
		return bad("OffsetThreshold", "%v is not between 0 and 1", c.OffsetThreshold)
	case c.OffsetThreshold > c.OnsetThreshold:
		return bad("OffsetThreshold", "%v is above OnsetThreshold %v", c.OffsetThreshold, c.OnsetThreshold)
	case c.MinSpeech < 0:
		return bad("MinSpeech", "%v is negative", c.MinSpeech)
	case c.MinSilence <= 0:
		return bad("MinSilence", "%v must be positive", c.MinSilence)
	case c.PreRoll < 0:
		return bad("PreRoll", "%v is negative", c.PreRoll)
	case c.PostPad < 0:
		return bad("PostPad", "%v is negative", c.PostPad)
	case c.PostPad > c.MinSilence:
		return bad("PostPad", "%v is longer than MinSilence %v (the padding would run into the next utterance)", c.PostPad, c.MinSilence)
	case c.MaxUtterance < time.Second:
		return bad("MaxUtterance", "%v is under 1s", c.MaxUtterance)
	case c.PreRoll+c.PostPad+c.SplitSearch >= c.MaxUtterance:
		return bad("MaxUtterance", "%v leaves no room for PreRoll %v + PostPad %v + SplitSearch %v", c.MaxUtterance, c.PreRoll, c.PostPad, c.SplitSearch)
	case c.SplitSearch <= 0:
		return bad("SplitSearch", "%v must be positive", c.SplitSearch)
	case c.GateFloorDBFS > 0 || c.GateFloorDBFS < -140:
		return bad("GateFloorDBFS", "%v is not between -140 and 0 dBFS", c.GateFloorDBFS)
	case c.GateMarginDB < 0:
		return bad("GateMarginDB", "%v is negative", c.GateMarginDB)
	case c.GateResetAfter < 0:
		return bad("GateResetAfter", "%v is negative", c.GateResetAfter)
	case c.Warmup < 0:
		return bad("Warmup", "%v is negative", c.Warmup)
	}
	return nil
}
