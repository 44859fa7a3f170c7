package transcribe

import (
	"context"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// Asking whisper about a word at a place of the utterance (issue 21's
// lever 2), on real weights: a word whisper wrote there scores as its own
// best guess (margin 0), the name, which jfk does not say, far below it,
// and the same word a place too early is no longer whisper's guess.
func TestTranscribeAskRealWeights(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights: slow")
	}
	tr := newTranscriber(t, Options{ModelPath: testaudio.RealModel(t, "tiny.en"), Language: "en", Threads: 2})
	samples := readWAV16(t, testaudio.Clip(t, "fw_jfk.wav"))
	type place struct {
		before   string
		min, max float64 // the margin's range
	}
	cases := []struct {
		word   string
		places []place
	}{
		{"Americans", []place{{"And so my fellow", -0.5, 0}, {"And so my", -100, -3}}},
		{"country", []place{{"And so my fellow Americans, ask not what your", -0.5, 0}}},
		{"Agora", []place{{"And so my fellow Americans,", -100, -3}, {"", -100, -3}}},
	}
	for _, tc := range cases {
		var befores []string
		for _, p := range tc.places {
			befores = append(befores, p.before)
		}
		res, scores, err := tr.TranscribeAsk(context.Background(), samples, tc.word, func(Result) []string { return befores })
		if err != nil {
			t.Fatal(err)
		}
		if !sameWords(res.Text, "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.") {
			t.Fatalf("jfk: %q: asking must not change the transcript", res.Text)
		}
		if len(scores) != len(tc.places) {
			t.Fatalf("%q: %d scores, want %d", tc.word, len(scores), len(tc.places))
		}
		for i, p := range tc.places {
			s := scores[i]
			t.Logf("%q after %q: margin %.2f (%+v)", tc.word, p.before, s.Margin(), s)
			if m := s.Margin(); m < p.min || m > p.max || s.Before != p.before {
				t.Errorf("%q after %q: margin %.2f, want in [%g, %g]", tc.word, p.before, m, p.min, p.max)
			}
		}
	}
	// No candidates, nothing asked.
	if _, scores, err := tr.TranscribeAsk(context.Background(), samples, "Agora", func(Result) []string { return nil }); err != nil || scores != nil {
		t.Errorf("no candidates: %v, %v; want no scores", scores, err)
	}
}
