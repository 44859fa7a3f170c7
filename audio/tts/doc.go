// Package tts turns reply text into speech samples for the player: a small
// Engine interface (so a neural voice can be added later) and its first
// implementation, espeak-ng, the only engine Debian ships with a Dutch voice
// (../shared/tts-options.md has the comparison).
//
// Invariants:
//   - espeak-ng is GPL-3: it always runs as its own process (one per reply,
//     started ahead of time so its start-up is not on the reply's path) and
//     is never linked into agorad.
//   - Text is spoken as plain text: it reaches the engine on standard input
//     (never as an argument, so it cannot become an option), control
//     characters are replaced, SSML is not enabled and espeak-ng's "[[...]]"
//     phoneme input is broken up (Prepare).
//   - Streams deliver 16 kHz mono float32 (audio.SampleRate) as the engine
//     produces it, so playback starts after the first chunk, not after the
//     whole reply.
//   - A voice that cannot load is an error of New, at start, naming the voice.
package tts
