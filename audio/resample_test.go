package audio

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func sine(freq float64, rate, n int, amp float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return s
}

// goertzelAmp is the amplitude of freq in s (rate Hz).
func goertzelAmp(s []float32, freq float64, rate int) float64 {
	w := 2 * math.Pi * freq / float64(rate)
	var re, im float64
	for i, v := range s {
		re += float64(v) * math.Cos(w*float64(i))
		im -= float64(v) * math.Sin(w*float64(i))
	}
	return 2 * math.Hypot(re, im) / float64(len(s))
}

func rms(s []float32) float64 {
	var a float64
	for _, v := range s {
		a += float64(v) * float64(v)
	}
	return math.Sqrt(a / float64(max(1, len(s))))
}

// zeroCrossingFreq estimates a pure tone's frequency from sign changes.
func zeroCrossingFreq(s []float32, rate int) float64 {
	n := 0
	for i := 1; i < len(s); i++ {
		if (s[i-1] < 0) != (s[i] < 0) {
			n++
		}
	}
	return float64(n) / 2 / (float64(len(s)) / float64(rate))
}

// middle drops the filter's edge transients.
func middle(s []float32) []float32 { return s[len(s)/10 : len(s)*9/10] }

func TestResamplePassband(t *testing.T) {
	for _, rate := range []int{8000, 11025, 16000, 22050, 32000, 44100, 48000, 96000} {
		for _, freq := range []float64{100, 440, 1000, 3000, 5500} {
			if freq >= float64(rate)/2*0.85 {
				continue
			}
			const amp = 0.5
			in := sine(freq, rate, rate, amp) // 1 s
			out, err := Resample(in, rate)
			if err != nil {
				t.Fatal(err)
			}
			if want := (len(in)*SampleRate + rate - 1) / rate; len(out) != want {
				t.Errorf("%d Hz: %d samples out, want %d", rate, len(out), want)
			}
			mid := middle(out)
			if f := zeroCrossingFreq(mid, SampleRate); math.Abs(f-freq) > freq*0.01+2 {
				t.Errorf("%d Hz input, %.0f Hz tone: zero crossings say %.1f Hz", rate, freq, f)
			}
			got := goertzelAmp(mid, freq, SampleRate)
			if db := 20 * math.Log10(got/amp); math.Abs(db) > 1 {
				t.Errorf("%d Hz input, %.0f Hz tone: gain %.2f dB, want within 1 dB", rate, freq, db)
			}
		}
	}
}

func TestResampleStopband(t *testing.T) {
	for _, rate := range []int{48000, 44100, 96000} {
		for _, freq := range []float64{8500, 9000, 10000, 12000, 15000, 20000} {
			in := sine(freq, rate, rate, 0.5)
			out, err := Resample(in, rate)
			if err != nil {
				t.Fatal(err)
			}
			db := 20 * math.Log10(rms(middle(out))/rms(in))
			if db > -40 {
				t.Errorf("%d Hz input, %.0f Hz tone: %.1f dB after conversion, want <= -40 dB", rate, freq, db)
			}
		}
	}
}

func TestConverterChunkedEqualsOneShot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ rate, channels int }{{48000, 2}, {44100, 1}, {8000, 1}, {16000, 2}, {22050, 3}, {16001, 1}} {
		in := make([]float32, tc.rate/2*tc.channels)
		for i := range in {
			in[i] = float32(rng.NormFloat64() * 0.2)
		}
		one, _ := NewConverter(tc.rate, tc.channels)
		want := append(one.Write(in), one.Flush()...)
		chunked, _ := NewConverter(tc.rate, tc.channels)
		var got []float32
		for i := 0; i < len(in); {
			n := (1 + rng.IntN(3000)) * tc.channels
			n = min(n, len(in)-i)
			got = append(got, chunked.Write(in[i:i+n])...)
			i += n
		}
		got = append(got, chunked.Flush()...)
		if !slices.Equal(got, want) {
			t.Errorf("%d Hz %d ch: chunked conversion (%d samples) differs from one-shot (%d samples)", tc.rate, tc.channels, len(got), len(want))
		}
	}
}

func TestConverterDownmix(t *testing.T) {
	c, err := NewConverter(SampleRate, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := c.Write([]float32{1, 0, 0.5, 0.5, -1, 1})
	if want := []float32{0.5, 0.5, 0}; !slices.Equal(got, want) {
		t.Errorf("downmix = %v, want %v", got, want)
	}
}

func TestNewConverterRejects(t *testing.T) {
	for _, tc := range []struct{ rate, ch int }{{0, 1}, {-5, 1}, {16000, 0}} {
		if _, err := NewConverter(tc.rate, tc.ch); err == nil {
			t.Errorf("NewConverter(%d, %d) accepted", tc.rate, tc.ch)
		}
	}
}

func BenchmarkConvert48kStereo(b *testing.B) {
	in := sine(440, 48000, 48000*2, 0.5) // 1 s stereo frames
	b.SetBytes(int64(len(in) * 4))
	for b.Loop() {
		c, _ := NewConverter(48000, 2)
		c.Write(in)
		c.Flush()
	}
}
