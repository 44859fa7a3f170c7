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
	Score float64       // the verdict at its best window: the head's probability, or both heads' (Verdict)
	End   time.Duration // where that window ends, from the utterance's start
	Heard bool          // Score reached the threshold
	// With a late head (SetLate), the two parts of Score: the head's
	// probability on the window and the late head's best after it.
	Head, Late float64
}

// Spotter scores utterances. Safe for concurrent use (calls take turns).
type Spotter struct {
	mu        sync.Mutex
	fe        *frontEnd
	head      *Head
	late      *Head // nil: the head's score alone is the verdict
	gate      *Head // nil: the head runs on every window (SetGate)
	threshold float64
	own       bool // threshold is the head's own (Open's 0): SetLate takes the late head's
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
	own := threshold == 0
	if own {
		threshold = head.Threshold
	}
	return &Spotter{fe: fe, head: head, threshold: threshold, own: own}, nil
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
	head, late, ends, err := s.Parts(samples)
	if err != nil {
		return Hit{}, err
	}
	var best Hit
	for i, sc := range head {
		h := Hit{Score: sc}
		if late != nil {
			h = Hit{Score: Verdict(sc, late[i]), Head: sc, Late: late[i]}
		}
		if h.Score > best.Score {
			end := min(max(ends[i], 0), len(samples)) // never past the utterance
			h.End = time.Duration(end) * time.Second / sampleRate
			best = h
		}
	}
	best.Heard = best.Score >= s.threshold
	return best, nil
}

// Scores returns the verdict for each window that reaches into the
// utterance, with the sample where each window ends: the head's score, or
// with a late head (SetLate) the two heads' together (Verdict).
func (s *Spotter) Scores(samples []float32) (scores []float64, ends []int, err error) {
	scores, late, ends, err := s.Parts(samples)
	if err != nil || late == nil {
		return scores, ends, err
	}
	for i := range scores {
		scores[i] = Verdict(scores[i], late[i])
	}
	return scores, ends, nil
}

// Parts returns, for each window that reaches into the utterance, the
// head's score (with a gate, SetGate, the gate's where it turns the window
// away: under lateFrom either way) and the late head's best score over the
// windows that end from there to its After[1] later (nil without a late
// head; the head's own score where that is under lateFrom), and the sample
// where each window ends.
func (s *Spotter) Parts(samples []float32) (scores, late []float64, ends []int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fe == nil {
		return nil, nil, nil, fmt.Errorf("keyword spotter closed")
	}
	// The VAD may cut an utterance right after the name ("Agora," then a
	// pause): the windows that end after it, where the head answers, come
	// from silence added here, as the training clips have it.
	embs, first, err := s.embeddings(samples, tailPad)
	if err != nil {
		return nil, nil, nil, err
	}
	w := s.head.Windows
	x := make([]float32, w*embFeatures)
	window := func(last int) []float32 {
		for i, e := range embs[last-w+1 : last+1] {
			copy(x[i*embFeatures:], e)
		}
		return x
	}
	from := max(first, w-1) // window i's last embedding is from+i
	for last := from; last < len(embs); last++ {
		scores = append(scores, s.headScore(window(last)))
		ends = append(ends, s.fe.embeddingEnd(last))
	}
	if s.late == nil {
		return scores, nil, ends, nil
	}
	// The late head runs only after windows the head scores lateFrom or
	// more; elsewhere it counts as agreeing, so the verdict is the head's
	// score (under any threshold or fuse band). It answers later than the
	// head: where it must look past the silence added, the embeddings are
	// made again with more (the same ones up to there, and more after),
	// only for an utterance that needs it, most of all one that ends with
	// the name.
	span := int(s.late.After[1] * sampleRate)
	need := 0
	for i, sc := range scores {
		if sc >= lateFrom {
			need = max(need, ends[i]+span)
		}
	}
	if len(embs) > 0 && need > s.fe.embeddingEnd(len(embs)-1) {
		if embs, _, err = s.embeddings(samples, tailPad+span); err != nil {
			return nil, nil, nil, err
		}
	}
	late = make([]float64, len(scores))
	lateAt := map[int]float64{}
	for i, sc := range scores {
		if sc < lateFrom {
			late[i] = sc
			continue
		}
		for last := from + i; last < len(embs) && s.fe.embeddingEnd(last) <= ends[i]+span; last++ {
			v, ok := lateAt[last]
			if !ok {
				v = s.late.score(window(last))
				lateAt[last] = v
			}
			late[i] = max(late[i], v)
		}
	}
	return scores, late, ends, nil
}

// embeddings is the front end's embeddings of samples with pad samples of
// silence after them.
func (s *Spotter) embeddings(samples []float32, pad int) ([][]float32, int, error) {
	padded := make([]float32, len(samples)+pad)
	copy(padded, samples)
	embs, first, err := s.fe.embeddings(padded)
	if err != nil {
		return nil, 0, fmt.Errorf("spot the name: %w", err)
	}
	return embs, first, nil
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
