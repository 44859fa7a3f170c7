package wake

import "strings"

// The listen words: said as written (or one letter off), or heard again
// from the audio when whisper wrote only something that sounds like them.

// listenSpelt reports whether t, the lone word that ends the utterance
// after the wake word, is a one-word listen word misspelt by letters: one
// edit from it (doubled letters and an inner 'h' aside: soundKey), the
// same first letter, and not a real word (notListen). Letters, not sound:
// "later", "lastig", "rusted" are a sound or two from "listen" or
// "luister" and are short questions.
func (r *Rules) listenSpelt(t token) bool {
	k := soundKey([]token{t})
	if notListen[k] {
		return false
	}
	for _, want := range r.fuzzyListen {
		if k != "" && k[0] == want[0] && editDistance(k, want) <= maxEdits {
			return true
		}
	}
	return false
}

// notListen are the sound keys of the words of the English (wamerican,
// wbritish) and Dutch (wdutch) dictionaries one letter from the default
// listen words with the same first letter, except forms of the verb itself
// ("listens", "luistert") and words no one asks the device as a question
// that whisper writes for the listen word ("Lister", "lissen", and
// "Luster": base and tiny.en write it for "luister", and a chandelier is
// not what an inspector asks the device about): "Agora, listed?" and
// "Agora, lijsten?" are questions.
var notListen = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{"lasten", "leisten", "lesten", "licten", "lieten", "liften", "ligten", "ligtening",
		"lijsten", "lijten", "liksten", "likten", "linten", "lipten", "lispen", "listed", "liston", "losten",
		"luiste", "lusten"} {
		m[k] = true
	}
	return m
}()

// soundsListen reports whether ts, the last one or two words after the
// wake word, sound like a one-word listen word: within one edit of its
// letters or of its sound (phoneKey: "lesson", "Leason", "Lee Sin",
// "Loster" for "listen" and "luister"; tiny.en and base write it so after a
// name they do not know, issue 21). Such words are no switch back on their
// own ("later", "list them" sound as close): they ask for a second hearing
// of the audio (TailFrom), whose text must have the listen word as
// written.
func (r *Rules) soundsListen(ts []token) bool {
	if len(ts) == 0 || len(ts) > 2 {
		return false
	}
	var spoken []string
	for _, t := range ts {
		spoken = append(spoken, t.norm)
	}
	sound := phoneKey(strings.Join(spoken, " "))
	for i, want := range r.fuzzyListen {
		if len(ts) == 1 && editDistance(soundKey(ts), want) <= maxEdits {
			return true
		}
		if len([]rune(sound)) >= minFuzzy && editDistance(sound, r.listenSounds[i]) <= maxEdits {
			return true
		}
	}
	return false
}
