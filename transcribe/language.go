package transcribe

import "fmt"

// Language "auto" on a multilingual model chooses, per utterance, among the
// wearer's languages (Options.Languages, default DefaultLanguages) only:
// whisper's language probabilities renormalised over them. An inspector
// does not switch language every sentence, so the choice has hysteresis:
// the device stays in the language it heard last (at first the wearer's
// first language) unless whisper gives another language at least
// Options.SwitchP. One ambiguous utterance (measured: read Dutch of a
// native speaker that whisper base gives 55-80 % English) then does not
// flip the device into English; a real change of language (whisper gives
// English clips 95 % and more) still does.

// DefaultLanguages are the wearer's languages when none are configured:
// the product's, Dutch first (the language assumed before any is heard).
var DefaultLanguages = []string{"nl", "en"}

// DefaultSwitchP is the probability another of the wearer's languages needs
// to take over from the one heard last: chosen on the development half of
// the real Dutch speaker and the English reference clips (bench/werbench.sh
// REALNL=dev; docs/architecture.md "Language").
const DefaultSwitchP = 0.9

// decide returns the index of the language an utterance is taken to be in:
// the likeliest of probs (over the wearer's languages), unless that is not
// last (the language heard last, -1 for none) and its probability is below
// switchP.
func decide(last int, probs []float64, switchP float64) int {
	best := 0
	for i, p := range probs {
		if p > probs[best] {
			best = i
		}
	}
	if last < 0 || last >= len(probs) || best == last || probs[best] >= switchP {
		return best
	}
	return last
}

// checkLanguages is the wearer's languages as whisper ids: each a language
// whisper knows, none twice. lookup is whisper's id of a code (-1: unknown).
func checkLanguages(langs []string, lookup func(string) int) ([]int, error) {
	if len(langs) == 0 {
		return nil, fmt.Errorf("no languages given (want e.g. nl, en)")
	}
	ids := make([]int, len(langs))
	for i, l := range langs {
		id := lookup(l)
		if id < 0 {
			return nil, fmt.Errorf("language %q is not one whisper knows (a code such as nl, en, de, fr)", l)
		}
		for _, prev := range langs[:i] {
			if prev == l {
				return nil, fmt.Errorf("language %q given twice", l)
			}
		}
		ids[i] = id
	}
	return ids, nil
}
