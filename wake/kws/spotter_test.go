package kws

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
)

func TestFind(t *testing.T) {
	empty := t.TempDir()
	full := t.TempDir()
	if err := os.MkdirAll(filepath.Join(full, "kws"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{LibFile, MelFile, EmbeddingFile} {
		if err := os.WriteFile(filepath.Join(full, "kws", f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Find(empty, full); err != nil || got != filepath.Join(full, "kws") {
		t.Errorf("Find = %q, %v; want %s/kws", got, err, full)
	}
	_, err := Find(empty)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(empty, "kws")) || !strings.Contains(err.Error(), "make models") {
		t.Errorf("Find in an empty place: %v; want the place looked and how to get the files", err)
	}
}

func TestOpenBadFrontEnd(t *testing.T) {
	dir := testaudio.SpotterDir(t)
	head, err := DefaultHead()
	if err != nil {
		t.Fatal(err)
	}
	bad := t.TempDir()
	for _, f := range []string{LibFile, EmbeddingFile} {
		if err := os.Symlink(filepath.Join(dir, f), filepath.Join(bad, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bad, MelFile), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(bad, head, 0)
	if err == nil || !strings.Contains(err.Error(), MelFile) {
		t.Fatalf("Open with a damaged mel model: %v; want an error naming it", err)
	}
}

// TestSpotterHearsTheName: the built-in heads on the real front end hear
// "Agora" in sentences it was not trained on, at the start and in the
// middle, and places its end; sentences without the name and near-misses
// stay under the threshold. (The voices are espeak-ng's, which it trained
// on; bench/kwsbench measures other engines' voices. Names inside longer
// words, "agorafobie", are the wake rules' to reject: the spotter hears
// the name in them.) The floor is one under the measured detection at the
// verdict's threshold: 8 of 8 with the third head and the late head (the
// second head alone: 7, missing "Kun je Agora even vragen ..." at 0.974;
// docs/wake.md has the gap).
func TestSpotterHearsTheName(t *testing.T) {
	const minHeard = 7
	dir := testaudio.SpotterDir(t)
	s, err := OpenDefault(0, filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Kernels(); got != KernelsXNNPACK {
		t.Errorf("spotter runs on %s kernels, want %s (the pinned library has it)", got, KernelsXNNPACK)
	}
	tests := []struct {
		voice, text string
		heard       bool
	}{
		{"en-us", "Agora, what is the maximum span for this beam?", true},
		{"en-gb-x-rp+f2", "Agora, is the railing on the landing high enough?", true},
		{"en-gb-x-rp+f2", "I think we should ask Agora about the insulation.", true},
		{"en-us+m3", "Could you check with Agora whether the joists are notched too deep?", true},
		{"nl", "Agora, hoe breed moet deze gang zijn?", true},
		{"nl+f2", "Agora, klopt de hoogte van de borstwering?", true},
		{"nl+m3", "Kun je Agora even vragen of de balk veilig is?", true},
		{"nl", "Ik wil dat Agora de dikte van de isolatie nagaat.", true},
		{"en-us", "The insulation in the attic is made of angora wool.", false},
		{"en-gb", "I've got a question about the gutter.", false},
		{"nl", "De trui van de huurder is van angorawol.", false},
		{"en-us+m2", "The beam at grid C is deflected by ten millimetres.", false},
		{"nl+f2", "De leuning van de trap zit los en moet vervangen worden.", false},
	}
	var heard, want int
	for _, tt := range tests {
		speech := testaudio.Concat(testaudio.Silence(600), testaudio.SpeakArgs(t, tt.text, "-v", tt.voice, "-s", "150"), testaudio.Silence(800))
		hit, err := s.Spot(speech)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-14s heard %-5v score %.3f at %s: %s", tt.voice, hit.Heard, hit.Score, hit.End, tt.text)
		if tt.heard {
			want++
			if hit.Heard {
				heard++
			}
		} else if hit.Heard {
			t.Errorf("%s %q: heard the name (score %.3f, threshold %.3f)", tt.voice, tt.text, hit.Score, s.Threshold())
		}
		if hit.Heard && (hit.End <= 0 || hit.End > time.Duration(len(speech))*time.Second/sampleRate) {
			t.Errorf("%q: name ends at %s, outside the %s utterance", tt.text, hit.End, time.Duration(len(speech))*time.Second/sampleRate)
		}
	}
	if heard < minHeard {
		t.Errorf("heard the name in %d of %d sentences, want at least %d", heard, want, minHeard)
	}
}

// BenchmarkSpot is the spotter on a 5.4 s sentence, on XNNPACK (the
// default) and on the interpreter's built-in kernels, with the embedding
// model called on blocks of windows (the default) and on each window, one
// thread: "ms/s" is the milliseconds it takes per second of speech
// (docs/wake.md, "Cost").
func BenchmarkSpot(b *testing.B) {
	dir := testaudio.SpotterDir(b)
	head, err := DefaultHead()
	if err != nil {
		b.Fatal(err)
	}
	speech := testaudio.Concat(testaudio.Silence(300),
		testaudio.SpeakArgs(b, "I think we should ask Agora about the insulation in the attic above the bedroom.", "-v", "en-us", "-s", "150"),
		testaudio.Silence(300))
	secs := float64(len(speech)) / sampleRate
	for _, tc := range []struct {
		kernels string
		xnn     bool
		block   int
	}{
		{KernelsXNNPACK, true, embBlock},
		{KernelsXNNPACK, true, 1},
		{KernelsBuiltin, false, embBlock},
		{KernelsBuiltin, false, 1},
	} {
		b.Run(fmt.Sprintf("%s/block=%d", tc.kernels, tc.block), func(b *testing.B) {
			s, err := open(dir, head, 0, tc.xnn)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.fe.setSteps(tc.block); err != nil {
				b.Fatal(err)
			}
			if got := s.Kernels(); got != tc.kernels || s.fe.embSteps != tc.block {
				b.Fatalf("runs on %s, %d windows a call; want %s, %d", got, s.fe.embSteps, tc.kernels, tc.block)
			}
			for b.Loop() {
				if _, err := s.Spot(speech); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/secs, "ms/s")
		})
	}
}

// TestLateVerdictReal: the built-in late head on the real front end. The
// embeddings made again with more silence after the utterance (Parts, for
// a name near its end) are the same as the first ones up to where those
// end, so the head's scores do not depend on whether the late head looked
// further; the name said last is confirmed from that silence, and the
// verdict of a sentence with the name wakes where the same sentence with
// another name does not.
func TestLateVerdictReal(t *testing.T) {
	dir := testaudio.SpotterDir(t)
	s, err := OpenDefault(0, filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	last := testaudio.Concat(testaudio.Silence(600), testaudio.SpeakArgs(t, "I think we should ask Agora", "-v", "en-us", "-s", "150"))
	short, _, err := s.embeddings(last, tailPad)
	if err != nil {
		t.Fatal(err)
	}
	long, _, err := s.embeddings(last, tailPad+int(s.late.After[1]*sampleRate))
	if err != nil {
		t.Fatal(err)
	}
	if len(long) <= len(short) {
		t.Fatalf("%d embeddings with more silence after, %d without", len(long), len(short))
	}
	for i := range short {
		if !slices.Equal(short[i], long[i]) {
			t.Fatalf("embedding %d of %d differs with more silence after the utterance", i, len(short))
		}
	}
	tests := []struct {
		text  string
		heard bool
	}{
		{"I think we should ask Agora", true},
		{"I think we should ask Agora about the insulation.", true},
		{"I think we should ask Laura about the insulation.", false},
	}
	for _, tt := range tests {
		speech := testaudio.Concat(testaudio.Silence(600), testaudio.SpeakArgs(t, tt.text, "-v", "en-us", "-s", "150"), testaudio.Silence(300))
		hit, err := s.Spot(speech)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("heard %-5v verdict %.6f (head %.6f, late %.6f) at %s: %s", hit.Heard, hit.Score, hit.Head, hit.Late, hit.End, tt.text)
		if hit.Heard != tt.heard {
			t.Errorf("%q: heard %v (verdict %.4f: head %.4f, late %.4f; threshold %.3f), want %v",
				tt.text, hit.Heard, hit.Score, hit.Head, hit.Late, s.Threshold(), tt.heard)
		}
		if hit.Heard && math.Abs(hit.Score-Verdict(hit.Head, hit.Late)) > 1e-12 {
			t.Errorf("%q: score %v is not the verdict of its parts %v, %v", tt.text, hit.Score, hit.Head, hit.Late)
		}
	}
}
