package audio

import (
	"fmt"
	"math"
)

// Resampler design: a windowed-sinc (Kaiser) low-pass evaluated as a
// polyphase filter at the exact rational ratio out/in. The filter is centred
// (no group delay in the output): output sample n is the signal at input time
// n*in/out, so stream offsets stay aligned with the source.
const (
	// zeroCrossings per side of the sinc; with kaiserBeta 8 this gives a
	// transition band of about 20% of the cutoff and ~80 dB stopband.
	zeroCrossings = 24
	kaiserBeta    = 8.0
	// cutoffFactor places the -6 dB point below the lower Nyquist frequency
	// so the stopband starts at about Nyquist (16 kHz output: 7.25 kHz).
	cutoffFactor = 0.906
	// maxTablePhases bounds the precomputed table; rarer ratios compute
	// coefficients on the fly.
	maxTablePhases = 1024
)

// Converter turns interleaved float32 frames at any rate and channel count
// into 16 kHz mono. It is stateful and streaming: feeding a signal in chunks
// gives exactly the same output as feeding it at once. Not safe for
// concurrent use.
type Converter struct {
	channels int
	rs       *resampler // nil when the input is already 16 kHz
	mono     []float32
}

// NewConverter returns a converter from rate Hz with channels interleaved channels.
func NewConverter(rate, channels int) (*Converter, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("audio converter: sample rate %d Hz must be positive", rate)
	}
	if channels <= 0 {
		return nil, fmt.Errorf("audio converter: channel count %d must be positive", channels)
	}
	c := &Converter{channels: channels}
	if rate != SampleRate {
		c.rs = newResampler(rate, SampleRate)
	}
	return c, nil
}

// Write converts interleaved frames (a trailing partial frame is an error of
// the caller and is dropped) and returns the 16 kHz mono samples now
// available. The returned slice is freshly allocated.
func (c *Converter) Write(interleaved []float32) []float32 {
	frames := len(interleaved) / c.channels
	mono := c.mono[:0]
	if c.channels == 1 {
		mono = append(mono, interleaved[:frames]...)
	} else {
		inv := 1 / float32(c.channels)
		for f := range frames {
			var s float32
			for _, v := range interleaved[f*c.channels : (f+1)*c.channels] {
				s += v
			}
			mono = append(mono, s*inv)
		}
	}
	c.mono = mono
	if c.rs == nil {
		return append([]float32(nil), mono...)
	}
	return c.rs.process(mono, false)
}

// Flush returns the output still held back by the filter at the end of the
// stream. After Flush the total output length is ceil(inputFrames*16000/rate).
func (c *Converter) Flush() []float32 {
	if c.rs == nil {
		return nil
	}
	return c.rs.process(nil, true)
}

// Resample converts a whole mono signal from rate Hz to 16 kHz.
func Resample(samples []float32, rate int) ([]float32, error) {
	c, err := NewConverter(rate, 1)
	if err != nil {
		return nil, err
	}
	out := c.Write(samples)
	return append(out, c.Flush()...), nil
}

type resampler struct {
	l, m  int64   // out/in = l/m, reduced
	k     int     // taps per side (input samples)
	fc    float64 // cutoff in cycles per input sample
	hw    float64 // window half width in input samples
	table [][]float64

	hist      []float64 // input samples from histStart on
	histStart int64
	base      int64 // integer input position of the next output
	phase     int64 // fractional position, in units of 1/l
	inTotal   int64
	outTotal  int64
}

func newResampler(in, out int) *resampler {
	g := gcd(int64(in), int64(out))
	r := &resampler{l: int64(out) / g, m: int64(in) / g}
	ratio := math.Min(1, float64(out)/float64(in))
	r.fc = 0.5 * ratio * cutoffFactor
	r.hw = zeroCrossings / (2 * r.fc)
	r.k = int(math.Ceil(r.hw))
	if r.l <= maxTablePhases {
		r.table = make([][]float64, r.l)
		for p := range r.table {
			r.table[p] = r.taps(int64(p), nil)
		}
	}
	// History starts with k-1 zeros before the first input sample.
	r.hist = make([]float64, r.k-1)
	r.histStart = -int64(r.k - 1)
	return r
}

// taps fills the 2k coefficients for phase p: h(p/l - j), j = -k+1 .. k,
// applied to input samples base+j.
func (r *resampler) taps(p int64, dst []float64) []float64 {
	dst = dst[:0]
	frac := float64(p) / float64(r.l)
	for j := -r.k + 1; j <= r.k; j++ {
		dst = append(dst, r.h(frac-float64(j)))
	}
	return dst
}

// h is the prototype low-pass in input-sample time units, unity DC gain.
func (r *resampler) h(t float64) float64 {
	if math.Abs(t) >= r.hw {
		return 0
	}
	x := 2 * r.fc * t
	s := 1.0
	if x != 0 {
		s = math.Sin(math.Pi*x) / (math.Pi * x)
	}
	u := t / r.hw
	w := bessI0(kaiserBeta*math.Sqrt(1-u*u)) / bessI0(kaiserBeta)
	return 2 * r.fc * s * w
}

func (r *resampler) process(in []float32, flush bool) []float32 {
	for _, v := range in {
		r.hist = append(r.hist, float64(v))
	}
	r.inTotal += int64(len(in))
	if flush {
		// Zeros after the end let the filter finish the last outputs.
		for range r.k {
			r.hist = append(r.hist, 0)
		}
	}
	var out []float32
	var scratch []float64
	histEnd := r.histStart + int64(len(r.hist))
	for r.base+int64(r.k) < histEnd {
		if flush && r.outTotal*r.m >= r.inTotal*r.l {
			break
		}
		coef := scratch
		if r.table != nil {
			coef = r.table[r.phase]
		} else {
			coef = r.taps(r.phase, scratch)
			scratch = coef
		}
		x := r.hist[r.base-int64(r.k)+1-r.histStart:]
		var acc float64
		for i, c := range coef {
			acc += c * x[i]
		}
		out = append(out, float32(acc))
		r.outTotal++
		r.phase += r.m
		r.base += r.phase / r.l
		r.phase %= r.l
	}
	// Keep only what the next outputs can reach.
	if drop := r.base - int64(r.k) + 1 - r.histStart; drop > 0 {
		drop = min(drop, int64(len(r.hist)))
		n := copy(r.hist, r.hist[drop:])
		r.hist = r.hist[:n]
		r.histStart += drop
	}
	return out
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// bessI0 is the zeroth-order modified Bessel function of the first kind.
func bessI0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 50; k++ {
		term *= (x / (2 * float64(k))) * (x / (2 * float64(k)))
		sum += term
		if term < sum*1e-16 {
			break
		}
	}
	return sum
}
