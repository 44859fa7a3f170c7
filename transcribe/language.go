package transcribe

import "fmt"

// Language "auto" on a multilingual model chooses, per utterance, among the
// wearer's languages (Options.Languages, default DefaultLanguages) only:
// whisper's language probabilities renormalised over them. An inspector
// does not switch language every sentence, so the choice has hysteresis:
// the device stays in the language it heard last (at first the wearer's
// first language) unless whisper gives another language at least
// Options.SwitchP; the first language itself only needs to be the
// likeliest. One ambiguous utterance (measured on the development half of
// a real Dutch speaker: 5 of 40 utterances whisper base gives 51-97 %
// English) then mostly does not flip the device into English; English
// clips get 97 % and more, but for one of 68 (80 %).

// DefaultLanguages are the wearer's languages when none are configured:
// the product's, Dutch first (the language assumed before any is heard).
var DefaultLanguages = []string{"nl", "en"}

// DefaultSwitchP is the probability another of the wearer's languages needs
// to take over from the one heard last: chosen on the development half of
// the real Dutch speaker and the English reference clips (bench/werbench.sh
// REALNL=dev; docs/architecture.md "Language").
const DefaultSwitchP = 0.9

// decide returns the index of the language an utterance is taken to be in:
// the likeliest of probs (over the wearer's languages), unless it would
// take the device away from last (the language heard last, -1 for none) to
// another than the wearer's first language (index 0) with a probability
// below switchP. The first language is the prior: the device returns to
// it whenever it is the likeliest, so one utterance wrongly taken for
// English does not keep the next Dutch ones in English (measured on the
// test half: the symmetric rule did), while leaving it needs switchP.
func decide(last int, probs []float64, switchP float64) int {
	best := 0
	for i, p := range probs {
		if p > probs[best] {
			best = i
		}
	}
	if last < 0 || last >= len(probs) || best == last || best == 0 || probs[best] >= switchP {
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
