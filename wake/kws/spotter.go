package kws

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Files of the front end in a spotter's directory (make models unpacks them
// from the pinned pyopen-wakeword wheel).
const (
	LibFile       = "libtensorflowlite_c.so"
	MelFile       = "melspectrogram.tflite"
	EmbeddingFile = "embedding_model.tflite"
)

// tailPad is the silence put after an utterance before it is scored.
const tailPad = 4 * chunk // 320 ms: the head answers up to that long after the name

// Hit is where in an utterance the name was heard best.
type Hit struct {
	Score float64       // the head's probability at its best window
	End   time.Duration // where that window ends, from the utterance's start
	Heard bool          // Score reached the threshold
}

// Spotter scores utterances. Safe for concurrent use (calls take turns).
type Spotter struct {
	mu        sync.Mutex
	fe        *frontEnd
	head      *Head
	threshold float64
}

// Open loads the front end from dir and uses head; threshold 0 means the
// head's own. The models run on XNNPACK where the library has it.
func Open(dir string, head *Head, threshold float64) (*Spotter, error) {
	return open(dir, head, threshold, true)
}

// open is Open with the choice of kernels (xnn false: the interpreter's
// built-in ones), for the benchmark that compares them.
func open(dir string, head *Head, threshold float64, xnn bool) (*Spotter, error) {
	if err := loadTFLite(filepath.Join(dir, LibFile)); err != nil {
		return nil, err
	}
	fe, err := newFrontEnd(filepath.Join(dir, MelFile), filepath.Join(dir, EmbeddingFile), xnn)
	if err != nil {
		return nil, err
	}
	if threshold == 0 {
		threshold = head.Threshold
	}
	return &Spotter{fe: fe, head: head, threshold: threshold}, nil
}

// Threshold is the score from which a window counts as the name.
func (s *Spotter) Threshold() float64 { return s.threshold }

// Kernels names what runs the front end: KernelsXNNPACK or KernelsBuiltin
// (a TensorFlow Lite library without XNNPACK, or one that refused it).
func (s *Spotter) Kernels() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fe == nil {
		return ""
	}
	return s.fe.kernels()
}

// Spot scores every window of the utterance (16 kHz mono, [-1, 1]) and
// returns the best.
func (s *Spotter) Spot(samples []float32) (Hit, error) {
	scores, ends, err := s.Scores(samples)
	if err != nil {
		return Hit{}, err
	}
	var best Hit
	for i, sc := range scores {
		if sc > best.Score {
			end := min(max(ends[i], 0), len(samples)) // never past the utterance
			best = Hit{Score: sc, End: time.Duration(end) * time.Second / sampleRate}
		}
	}
	best.Heard = best.Score >= s.threshold
	return best, nil
}

// Scores returns the head's score for each window that reaches into the
// utterance, with the sample where each window ends.
func (s *Spotter) Scores(samples []float32) (scores []float64, ends []int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fe == nil {
		return nil, nil, fmt.Errorf("keyword spotter closed")
	}
	// The VAD may cut an utterance right after the name ("Agora," then a
	// pause): the windows that end after it, where the head answers, come
	// from silence added here, as the training clips have it.
	padded := make([]float32, len(samples)+tailPad)
	copy(padded, samples)
	embs, first, err := s.fe.embeddings(padded)
	if err != nil {
		return nil, nil, fmt.Errorf("spot the name: %w", err)
	}
	w := s.head.Windows
	x := make([]float32, w*embFeatures)
	for last := max(first, w-1); last < len(embs); last++ {
		for i, e := range embs[last-w+1 : last+1] {
			copy(x[i*embFeatures:], e)
		}
		scores = append(scores, s.head.score(x))
		ends = append(ends, s.fe.embeddingEnd(last))
	}
	return scores, ends, nil
}

// Close frees the models.
func (s *Spotter) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fe != nil {
		s.fe.close()
		s.fe = nil
	}
	return nil
}

// Find returns the first directory dirs[i]/kws holding the front end's
// three files. The error names every place looked and how to get them.
func Find(dirs ...string) (string, error) {
	var looked []string
	for _, d := range dirs {
		dir := filepath.Join(d, "kws")
		ok := true
		for _, f := range []string{LibFile, MelFile, EmbeddingFile} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || !st.Mode().IsRegular() {
				ok = false
			}
		}
		if ok {
			return dir, nil
		}
		looked = append(looked, dir)
	}
	return "", fmt.Errorf("keyword spotter front end (%s, %s, %s) not found; looked in %s; get it with `make models` (the pinned pyopen-wakeword wheel)",
		LibFile, MelFile, EmbeddingFile, strings.Join(looked, ", "))
}

// Embeddings returns what the head sees of an utterance: its embeddings
// from the Windows-1 before the first one that reaches into it, and where
// each ends in the utterance (samples; negative before its start). For
// training a head (wake/kws/train) on exactly what Spot scores.
func (s *Spotter) Embeddings(samples []float32) (embs [][]float32, ends []int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fe == nil {
		return nil, nil, fmt.Errorf("keyword spotter closed")
	}
	all, first, err := s.fe.embeddings(samples)
	if err != nil {
		return nil, nil, err
	}
	from := max(first-(s.head.Windows-1), 0)
	for i := from; i < len(all); i++ {
		ends = append(ends, s.fe.embeddingEnd(i))
	}
	return all[from:], ends, nil
}
