package textlang

import "testing"

func TestGuess(t *testing.T) {
	// The lists must not share a word: it would count for both.
	for w := range nl {
		if en[w] {
			t.Errorf("%q is in both lists", w)
		}
	}
	for _, tc := range []struct{ text, want string }{
		{"The crack in the north wall is 2 mm wide.", "en"},
		{"AGORA what is next", "en"},
		{"Check the fire door on level three, please.", "en"},
		{"De scheur in de noordmuur is 2 mm breed.", "nl"},
		{"AGORA wat is de volgende stap", "nl"},
		{"Brandwerende deur op de derde verdieping controleren.", "nl"},
		{"", ""},
		{"AGORA", ""},
		{"12 mm", ""},
		{"in is we", ""}, // shared spellings count for neither
	} {
		if got := Guess(tc.text); got != tc.want {
			t.Errorf("Guess(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}
