package segment

import (
	"time"

	"github.com/agora/agorad/audio"
)

// Tentative previews the utterance in progress once the silence after its
// speech has lasted after (at least PostPad, so the padding is all there):
// exactly the Utterance Push will return if the silence goes on to
// MinSilence, so work on it (a speculative whisper run) can start before the
// turn ends. ok is false while speech goes on, outside an utterance, before
// that much silence, and for speech too short to be emitted. It changes
// nothing: Push decides as before. The key of an utterance, to match a
// preview with what Push returns, is (PadStart, SpeechStart, SpeechEnd).
func (s *Segmenter) Tentative(after time.Duration) (u Utterance, ok bool) {
	if !s.tentative(after) {
		return Utterance{}, false
	}
	return s.build(s.utt, s.padStart, s.lastSpeech, s.lastSpeech+s.postPad, s.split), true
}

// TentativeKey is Tentative's key without copying the audio: a caller
// polling every chunk builds the preview only when the key is new.
func (s *Segmenter) TentativeKey(after time.Duration) (padStart, speechStart, speechEnd int64, ok bool) {
	if !s.tentative(after) {
		return 0, 0, 0, false
	}
	return s.padStart, s.speechStart, s.lastSpeech, true
}

func (s *Segmenter) tentative(after time.Duration) bool {
	if !s.inSpeech || len(s.utt) == 0 {
		return false
	}
	silence := s.utt[len(s.utt)-1].end() - s.lastSpeech
	need := max(int64(after)*audio.SampleRate/int64(time.Second), s.postPad)
	return silence >= need && silence < s.minSilence && s.lastSpeech-s.speechStart >= s.minSpeech
}

// EndNow ends the utterance previewed under key (padStart, speechStart,
// speechEnd) after `after` of silence, before MinSilence: the caller knows
// from the preview's text that the turn is over (issue 47: a complete
// sentence ends after a short wait). It returns exactly the utterance
// Tentative previewed, as Push would have after MinSilence, and the
// segmenter goes on from there as after any utterance. ok is false (and
// nothing changes) when that preview is no longer current: the speaker
// went on, or it was already returned.
func (s *Segmenter) EndNow(padStart, speechStart, speechEnd int64, after time.Duration) (u Utterance, ok bool) {
	if !s.tentative(after) || s.padStart != padStart || s.speechStart != speechStart || s.lastSpeech != speechEnd {
		return Utterance{}, false
	}
	us := s.finish()
	if len(us) != 1 {
		return Utterance{}, false // cannot happen: tentative checked MinSpeech
	}
	return us[0], true
}
