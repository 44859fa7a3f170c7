// Package textlang guesses whether typed text (agoractl say, other apps'
// dictation) is Dutch or English, the two languages the device speaks.
// Transcribed speech carries whisper's language; typed text carries none,
// and without a guess a reply to it fell back to replies.language.
//
// Invariants:
//   - Guess returns "nl", "en" or "" (no evidence either way, or a tie): it
//     never claims a language on no evidence, so the caller's fallback
//     stays in charge when the text does not say.
//   - Only function words count (articles, pronouns, prepositions,
//     auxiliaries); words spelt the same in both languages ("in", "is",
//     "we", "door") count for neither.
package textlang
