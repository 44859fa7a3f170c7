package model

import "math"

// MelFilters computes the mel filter bank whisper's log-mel spectrogram
// uses: librosa.filters.mel(sr, n_fft, n_mels) with its defaults (Slaney
// mel scale, Slaney area normalisation, 0 Hz to sr/2), which is what
// OpenAI's mel_filters.npz holds. The result is n_mels rows of n_fft/2+1
// float32 weights, row-major. The arithmetic follows librosa step by step
// (float64, then float32 where librosa stores float32) so the values match
// its output bit for bit, not just closely.
func MelFilters(sampleRate, nFFT, nMels int) []float32 {
	nFreq := nFFT/2 + 1
	fft := make([]float64, nFreq) // np.fft.rfftfreq
	for i := range fft {
		fft[i] = float64(i) * float64(sampleRate) / float64(nFFT)
	}
	// mel_frequencies: n_mels+2 points equally spaced on the mel scale.
	lo, hi := hzToMel(0), hzToMel(float64(sampleRate)/2)
	n := nMels + 2
	step := (hi - lo) / float64(n-1)
	melF := make([]float64, n)
	for i := range melF {
		m := float64(i)*step + lo // np.linspace
		if i == n-1 {
			m = hi
		}
		melF[i] = melToHz(m)
	}
	w := make([]float32, nMels*nFreq)
	for i := 0; i < nMels; i++ {
		lowerDiff := melF[i+1] - melF[i]
		upperDiff := melF[i+2] - melF[i+1]
		enorm := 2.0 / (melF[i+2] - melF[i])
		for j, f := range fft {
			lower := -(melF[i] - f) / lowerDiff
			upper := (melF[i+2] - f) / upperDiff
			tri := float32(math.Max(0, math.Min(lower, upper)))
			w[i*nFreq+j] = float32(float64(tri) * enorm)
		}
	}
	return w
}

// The Slaney mel scale: linear below 1 kHz (200/3 Hz per mel), logarithmic
// above (a factor 6.4 over 27 mels).
// Variables, not constants: computed in float64 at run time as librosa
// does, so the rounding of 1000/(200/3) matches.
var (
	melFSp       = 200.0 / 3
	melMinLogHz  = 1000.0
	melMinLogMel = melMinLogHz / melFSp
	melLogStep   = math.Log(6.4) / 27.0
)

func hzToMel(f float64) float64 {
	if f >= melMinLogHz {
		return melMinLogMel + math.Log(f/melMinLogHz)/melLogStep
	}
	return f / melFSp
}

func melToHz(m float64) float64 {
	if m >= melMinLogMel {
		return melMinLogHz * math.Exp(melLogStep*(m-melMinLogMel))
	}
	return melFSp * m
}
