package kws

import (
	"fmt"
	"slices"
)

// The front end is openWakeWord's, as pyopen-wakeword 1.1.0 runs it
// (OpenWakeWordFeatures): the same windows, steps and scaling, so a head
// trained with that Python class scores the same numbers here.
const (
	sampleRate  = 16000
	chunk       = 1280 // 80 ms: the step of the mel windows
	melSamples  = 1760 // samples per mel model call
	numMels     = 32   // mel bands
	embFrames   = 76   // mel frames per embedding call (775 ms)
	embStep     = 8    // mel frames between embeddings (80 ms)
	embFeatures = 96   // floats per embedding
	autofill    = 8 * sampleRate
	// leadIn is the silence put before every utterance (the trainer's
	// convention): the first embeddings then see quiet, not the start of
	// a word cut off.
	leadIn = sampleRate / 2
)

// embBlock is how many embeddings one call of the embedding model gives.
// The model is convolutional in time: on 76+8(n-1) mel frames it gives
// the n embeddings its calls on each 76-frame window would (to the last
// bit on XNNPACK, within 4e-5 on the built-in kernels: TestEmbeddingBlocks)
// in a fraction of the time, since the overlapping windows share most of
// their work (BenchmarkSpot). The block has a fixed size, so the
// interpreter is planned once; an utterance's last block is padded with
// silent frames and the embeddings they add dropped. The mel model stays
// at one call per 80 ms step, as the Python class calls it: a frame's
// values depend on the rest of its call (a longer call that starts in
// silence moved embeddings at the start of speech by up to 17).
const embBlock = 32

// frontEnd turns audio into embeddings, one per 80 ms. Each utterance is
// scored from the same start state: 8 s of silence (the Python class's
// autofill) and leadIn more, whose mel frames and embeddings are computed
// once and reused.
type frontEnd struct {
	mel, emb *net
	// embSteps is how many embeddings one call gives: embBlock, or 1
	// where the model would not take a longer input.
	embSteps              int
	melOut, embIn, embOut []float32
	// zeroMel is a mel call's output on silence; zeroEmb the embedding
	// of 76 such frames.
	zeroMel       []float32
	zeroEmb       map[int][]float32 // by the first frame's place in its mel call
	framesPerCall int               // mel frames per 80 ms step
}

func newFrontEnd(melPath, embPath string, xnn bool) (*frontEnd, error) {
	mel, err := openNet(melPath, []int{1, melSamples}, xnn)
	if err != nil {
		return nil, err
	}
	emb, err := openNet(embPath, []int{1, embFrames, numMels, 1}, xnn)
	if err != nil {
		mel.close()
		return nil, err
	}
	f := &frontEnd{mel: mel, emb: emb, embSteps: 1, zeroEmb: map[int][]float32{}}
	if mel.out%numMels != 0 || emb.in != embFrames*numMels || emb.out != embFeatures {
		f.close()
		return nil, fmt.Errorf("feature models %s, %s: shapes %d→%d, %d→%d: not openWakeWord's front end", melPath, embPath, mel.in, mel.out, emb.in, emb.out)
	}
	f.framesPerCall = mel.out / numMels
	f.melOut = make([]float32, mel.out)
	if err := f.setSteps(embBlock); err != nil {
		f.close()
		return nil, err
	}
	if f.zeroMel, err = f.melFrames(make([]float32, melSamples)); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// setSteps sizes the embedding model's input for n embeddings a call,
// where the model then gives n; otherwise for one.
func (f *frontEnd) setSteps(n int) error {
	dims := func(n int) []int { return []int{1, embFrames + (n-1)*embStep, numMels, 1} }
	f.embSteps = 1
	if err := f.emb.resize(dims(n)); err == nil && f.emb.out == n*embFeatures {
		f.embSteps = n
	} else if err := f.emb.resize(dims(1)); err != nil {
		return fmt.Errorf("embedding model: %w", err)
	}
	f.embIn, f.embOut = make([]float32, f.emb.in), make([]float32, f.emb.out)
	return nil
}

// melFrames runs the mel model on one call's samples (int16-scaled) and
// returns its frames, scaled as the embedding model expects.
func (f *frontEnd) melFrames(window []float32) ([]float32, error) {
	if err := f.mel.run(window, f.melOut); err != nil {
		return nil, fmt.Errorf("mel spectrogram: %w", err)
	}
	out := make([]float32, len(f.melOut))
	for i, v := range f.melOut {
		out[i] = v/10 + 2
	}
	return out, nil
}

// embedWindows returns the embeddings of the windows starting at frames
// from, from+embStep, ... (n of them), frames past the end read as
// silence, a call for each embSteps windows.
func (f *frontEnd) embedWindows(frames [][]float32, from, n int) ([][]float32, error) {
	embs := make([][]float32, 0, n)
	span := embFrames + (f.embSteps-1)*embStep // frames per call
	for len(embs) < n {
		at := from + len(embs)*embStep
		for i := 0; i < span; i++ {
			fr := f.zeroMel[(i%f.framesPerCall)*numMels:][:numMels]
			if at+i < len(frames) {
				fr = frames[at+i]
			}
			copy(f.embIn[i*numMels:], fr)
		}
		if err := f.emb.run(f.embIn, f.embOut); err != nil {
			return nil, fmt.Errorf("speech embedding: %w", err)
		}
		for w := 0; w < f.embSteps && len(embs) < n; w++ {
			embs = append(embs, slices.Clone(f.embOut[w*embFeatures:(w+1)*embFeatures]))
		}
	}
	return embs, nil
}

// embeddings returns the utterance's embeddings (samples in [-1, 1]), the
// silent start state's included, and the index of the first one whose
// window reaches into the utterance.
func (f *frontEnd) embeddings(samples []float32) (embs [][]float32, first int, err error) {
	// The stream as the Python class sees it: autofill silence, lead-in
	// silence, the utterance; windows on a 1280-sample grid from its start.
	pre := autofill + leadIn
	total := pre + len(samples)
	at := func(i int) float32 { // int16-scaled sample i of the stream
		if i < pre {
			return 0
		}
		return samples[i-pre] * 32768
	}
	var frames [][]float32 // mel frames
	var silent []bool      // frames of a mel call on silence alone
	window := make([]float32, melSamples)
	for start := 0; start+melSamples <= total; start += chunk {
		quiet := start+melSamples <= pre
		for i := 0; quiet && i < f.framesPerCall; i++ {
			frames = append(frames, f.zeroMel[i*numMels:(i+1)*numMels])
			silent = append(silent, true)
		}
		if quiet {
			continue
		}
		for i := range window {
			window[i] = at(start + i)
		}
		out, err := f.melFrames(window)
		if err != nil {
			return nil, 0, err
		}
		for i := 0; i < f.framesPerCall; i++ {
			frames = append(frames, out[i*numMels:(i+1)*numMels])
			silent = append(silent, false)
		}
	}
	first = -1
	windows := 0 // 76-frame windows, a step of 8 frames apart
	if len(frames) >= embFrames {
		windows = (len(frames)-embFrames)/embStep + 1
	}
	for w := 0; w < windows; w++ {
		start := w * embStep
		quiet := !slices.Contains(silent[start:start+embFrames], false)
		if !quiet {
			// Every window from here reaches into the utterance.
			first = len(embs)
			rest, err := f.embedWindows(frames, start, windows-w)
			if err != nil {
				return nil, 0, err
			}
			embs = append(embs, rest...)
			break
		}
		e, ok := f.zeroEmb[start%f.framesPerCall]
		if !ok {
			one, err := f.embedWindows(frames, start, 1)
			if err != nil {
				return nil, 0, err
			}
			e = one[0]
			f.zeroEmb[start%f.framesPerCall] = e
		}
		embs = append(embs, e)
	}
	if first < 0 {
		first = len(embs)
	}
	return embs, first, nil
}

// embeddingEnd is where, in the utterance, embedding i's audio ends
// (samples; negative while it is still in the silent start).
func (f *frontEnd) embeddingEnd(i int) int {
	lastFrame := i*embStep + embFrames - 1
	call := lastFrame / f.framesPerCall
	return call*chunk + melSamples - autofill - leadIn
}

// kernels names what runs the embedding model, most of the front end's
// work.
func (f *frontEnd) kernels() string {
	if f.emb.xnn {
		return KernelsXNNPACK
	}
	return KernelsBuiltin
}

func (f *frontEnd) close() {
	for _, n := range []*net{f.mel, f.emb} {
		if n != nil {
			n.close()
		}
	}
}
