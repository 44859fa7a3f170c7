// Package turns times a spoken turn from the end of the inspector's speech
// to the first sample of the answer, stage by stage, so a fleet operator sees
// the same numbers as the conversation benchmark (bench/), and plays the
// "thinking" cue when the backend is slow to answer.
//
// The stages, each measured from the end of speech (the last speech sample
// of the utterance, by the capture clock): turn_end (the segmenter decided
// the turn is over), transcribed (whisper's text is ready), published (the
// broker PUBACKed the question), reply (the answer command arrived) and
// first_audio (the answer's first sample went to the audio device).
//
// Invariants:
//   - Events may come in any order for one turn (the uplink can PUBACK the
//     question before the speech path reports it): each stage is observed
//     once, as soon as both its time and the end of speech are known.
//   - Memory is bounded: at most MaxOpen turns are kept (the oldest is
//     dropped) and a turn is forgotten at first_audio.
//   - The thinking cue plays at most once per turn, only while the answer
//     has not arrived, and never in listen mode; its timers are stopped by
//     Close.
package turns
