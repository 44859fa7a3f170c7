// Package wearer hears only the person wearing the headset: a level gate
// that keeps utterances (and words inside them) as loud as the wearer's own
// speech and drops quieter speech of the people around, before it costs a
// whisper call and after whisper placed its words.
//
// A headset microphone a few centimetres from the mouth gets the wearer
// 15-25 dB louder than someone a metre or two away. The gate uses that and
// nothing else (no speaker model): it compares levels.
//
// Invariants:
//   - Levels are dBFS of the RMS over 20 ms frames (FrameSamples); an
//     utterance's level is the RMS of its speech after the frame gate, so
//     the few peaks of someone else that opened the gate, in the silence
//     the gate made around them, give a low level.
//   - The noise floor is a low percentile of the frame levels of the last
//     FloorWindow of audio (all of it: speech and silence).
//   - The wearer's level is the median of the levels of the last accepted
//     utterances, seeded with Config.ExpectedDBFS (so the gate works from the
//     first utterance) and clamped to ExpectedDBFS ± MaxDriftDB: a run of
//     other people's speech that slips through cannot drag it down to their
//     level, and only accepted utterances move it at all.
//   - An utterance is dropped when its level is more than BelowDB under the
//     wearer's level, or less than MinSNRDB over the floor. The reference
//     used for the decision is returned with it, so the word check after
//     whisper compares against the same level the utterance was kept by.
//   - A word is dropped when the level (power mean of the frames) of its
//     span (whisper's times, widened by WordBefore and WordAfter because
//     those times are rough and early) is more than WordBelowDB under that
//     reference.
//   - The frame gate (gate.go) delays the stream by Lookahead and never
//     reorders, drops or adds samples: offsets and clock pass unchanged. Words without
//     times are kept: the check only removes what it can place.
//   - Tracker is owned by one goroutine (the capture loop); Snapshot is safe
//     from any goroutine.
package wearer
