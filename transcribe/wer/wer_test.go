package wer

import (
	"path/filepath"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		ref, hyp    string
		errs, words int
	}{
		{"And so my fellow Americans, ask not", "and so my fellow Americans... Ask not!", 0, 7},
		{"what's the date", "whats the date", 0, 3},
		{"what's the date", "what is the date", 2, 3}, // whats->what, +is
		{"set Bed Light brightness to 50 percent", "Set bedlight brightness to 50%.", 3, 7},
		{"fifty", "50", 1, 1}, // no number normalisation
		{"a b c", "", 3, 3},
		{"", "hallucinated words", 2, 0},
		{"the cat sat", "the cat sat on the mat", 3, 3},
		{"forty-two line Bible", "42-line Bible", 2, 4}, // forty->42, two deleted
	} {
		e, w := Errors(tc.ref, tc.hyp)
		if e != tc.errs || w != tc.words {
			t.Errorf("Errors(%q, %q) = %d/%d, want %d/%d", tc.ref, tc.hyp, e, w, tc.errs, tc.words)
		}
	}
}

func TestManifestGroups(t *testing.T) {
	clips, err := ReadManifest(filepath.Join(testaudio.SharedDir(t), "audio", "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	en := English(clips)
	count := map[string]int{}
	var words int
	for _, c := range en {
		count[c.Group()]++
		words += len(Words(c.Transcript))
	}
	// The measurement: 68 English reference clips, 430 words.
	if len(en) != 68 || words != 430 {
		t.Errorf("%d English reference clips with %d words, want 68 and 430", len(en), words)
	}
	want := map[string]int{Sentences: 17, Commands: 33, WakeWords: 18}
	for g, n := range want {
		if count[g] != n {
			t.Errorf("group %s: %d clips, want %d", g, count[g], n)
		}
	}
	perfect := map[string]string{}
	for _, c := range en {
		perfect[c.File] = c.Transcript
	}
	if all, _ := Report(en, perfect); all.Errs != 0 || all.Exact != 68 {
		t.Errorf("references scored against themselves: %v", all)
	}
	if all, _ := Report(en, nil); all.WER() != 100 {
		t.Errorf("no hypotheses: WER %v, want 100", all.WER())
	}
}
