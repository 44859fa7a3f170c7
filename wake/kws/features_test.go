package kws

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// TestEmbeddingsMatchPython: the Go front end gives pyopen-wakeword's
// embeddings (testdata/tone-embeddings.json, written by its Python
// OpenWakeWordFeatures for the same tone after 0.5 s of silence), so a
// head trained on either scores the same, on XNNPACK (the default) as on
// the interpreter's built-in kernels.
func TestEmbeddingsMatchPython(t *testing.T) {
	dir := testaudio.SpotterDir(t)
	if err := loadTFLite(filepath.Join(dir, LibFile)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		xnn  bool
		want string
	}{
		{true, KernelsXNNPACK},
		{false, KernelsBuiltin},
	} {
		t.Run(tc.want, func(t *testing.T) {
			fe, err := newFrontEnd(filepath.Join(dir, MelFile), filepath.Join(dir, EmbeddingFile), tc.xnn)
			if err != nil {
				t.Fatal(err)
			}
			defer fe.close()
			if got := fe.kernels(); got != tc.want {
				t.Fatalf("front end runs on %s, want %s (the pinned library has XNNPACK)", got, tc.want)
			}
			matchPython(t, fe)
		})
	}
}

func matchPython(t *testing.T, fe *frontEnd) {
	t.Helper()
	raw, err := os.ReadFile("testdata/tone-embeddings.json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct{ Embeddings [][]float32 }
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	// The tone, quantised to 16 bits as the Python side read it.
	x := make([]float32, 24000)
	for n := range x {
		sec := float64(n) / sampleRate
		v := 0.3*math.Sin(2*math.Pi*440*sec)*math.Min(1, float64(n)/4000) + 0.1*math.Sin(2*math.Pi*1234*sec) + 0.05*math.Sin(2*math.Pi*97*sec)
		x[n] = float32(math.RoundToEven(v*32767)) / 32768
	}
	got, first, err := fe.embeddings(x)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(want.Embeddings) || first <= 0 {
		t.Fatalf("%d embeddings (first in the tone %d), want at least Python's %d", len(got), first, len(want.Embeddings))
	}
	got = got[len(got)-len(want.Embeddings):]
	var worst float64
	for i, w := range want.Embeddings {
		for j, v := range w {
			worst = max(worst, math.Abs(float64(got[i][j]-v)))
		}
	}
	t.Logf("%d embeddings, largest difference from Python %.2g", len(got), worst)
	if worst > 1e-3 {
		t.Errorf("largest difference from Python's embeddings %.3g, want < 1e-3", worst)
	}
}

// TestEmbeddingBlocks: the embedding model's calls on blocks of windows
// give the embeddings its calls on each window give (it is convolutional
// in time), for an utterance shorter than a block and one longer, on both
// kernels.
func TestEmbeddingBlocks(t *testing.T) {
	dir := testaudio.SpotterDir(t)
	if err := loadTFLite(filepath.Join(dir, LibFile)); err != nil {
		t.Fatal(err)
	}
	speech := testaudio.SpeakArgs(t, "I think we should ask Agora about the insulation in the attic above the bedroom.", "-v", "en-us", "-s", "150")
	for _, xnn := range []bool{true, false} {
		blocks, err := newFrontEnd(filepath.Join(dir, MelFile), filepath.Join(dir, EmbeddingFile), xnn)
		if err != nil {
			t.Fatal(err)
		}
		defer blocks.close()
		steps, err := newFrontEnd(filepath.Join(dir, MelFile), filepath.Join(dir, EmbeddingFile), xnn)
		if err != nil {
			t.Fatal(err)
		}
		defer steps.close()
		if blocks.embSteps != embBlock {
			t.Fatalf("xnn %v: %d embeddings a call, want %d", xnn, blocks.embSteps, embBlock)
		}
		if err := steps.setSteps(1); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{sampleRate * 3 / 2, len(speech)} {
			got, gotFirst, err := blocks.embeddings(speech[:n])
			if err != nil {
				t.Fatal(err)
			}
			want, wantFirst, err := steps.embeddings(speech[:n])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || gotFirst != wantFirst {
				t.Fatalf("xnn %v, %d samples: %d embeddings from %d, want %d from %d", xnn, n, len(got), gotFirst, len(want), wantFirst)
			}
			var worst float64
			for i := range want {
				for j := range want[i] {
					worst = max(worst, math.Abs(float64(got[i][j]-want[i][j])))
				}
			}
			t.Logf("xnn %v, %d samples: %d embeddings, largest difference %.2g", xnn, n, len(got), worst)
			if worst > 1e-4 {
				t.Errorf("xnn %v, %d samples: blocks differ from steps by %.3g, want < 1e-4", xnn, n, worst)
			}
		}
	}
}
