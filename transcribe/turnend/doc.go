// Package turnend decides from a speculative transcript whether an
// utterance is complete, so the daemon can end the turn after a short
// silence instead of the long hangover (issue 47).
//
// Invariants: Complete is a pure function of the text (no state, no
// language detection: the English and Dutch word lists are one list, since
// a word of one language ending a sentence of the other is rare); it errs
// towards "incomplete", which only costs the long wait, never a question
// cut in two.
package turnend
