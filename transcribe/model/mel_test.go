package model

import (
	"math"
	"testing"
)

// TestMelFilters compares the computed bank with librosa's Slaney filters
// (values from faster-whisper's float64 port, FeatureExtractor.get_mel_filters,
// which matches OpenAI's mel_filters.npz): whisper.cpp computes every
// spectrogram with this bank, so an error here is an error in every token.
func TestMelFilters(t *testing.T) {
	type v struct {
		row, col int
		want     float64
	}
	cases := []struct {
		mels  int
		known []v
		total float64 // sum of all weights
	}{
		{80, []v{
			{0, 1, 0.024862593984176087}, {0, 2, 0}, {1, 1, 0.00199082188809807}, {1, 2, 0.022871772096078016},
			{20, 19, 0.010972200001589123}, {20, 20, 0.01389039398258697},
			{40, 42, 0.00541110509868314}, {40, 43, 0.01473556574143909}, {40, 44, 0.0065181896946609665},
			{79, 186, 0.00036674167978492585}, {79, 187, 0.0008330700230168483}, {79, 188, 0.001299398366248771},
			{79, 200, 0}, {10, 13, 0},
		}, 1.9990241029178577},
		{128, []v{
			{0, 1, 0.012373986332636965}, {1, 1, 0.03039256487135521}, {32, 19, 0.021493566903850823},
			{64, 42, 0.006749682704665286}, {64, 43, 0.01809151762107626},
			{127, 191, 0.00047569508346930465}, {127, 192, 0.0016171717313581387}, {127, 193, 0.002758648379246973},
		}, 3.1909855285406996},
	}
	for _, c := range cases {
		w := MelFilters(16000, 400, c.mels)
		if len(w) != c.mels*201 {
			t.Fatalf("%d mels: %d weights, want %d", c.mels, len(w), c.mels*201)
		}
		for _, k := range c.known {
			got := float64(w[k.row*201+k.col])
			if math.Abs(got-k.want) > 1e-7*math.Abs(k.want) {
				t.Errorf("%d mels: filter %d bin %d = %.17g, want %.17g", c.mels, k.row, k.col, got, k.want)
			}
		}
		var sum float64
		for _, x := range w {
			if x < 0 {
				t.Fatalf("%d mels: negative weight %g", c.mels, x)
			}
			sum += float64(x)
		}
		if math.Abs(sum-c.total) > 1e-6*c.total {
			t.Errorf("%d mels: weights sum to %.10g, want %.10g", c.mels, sum, c.total)
		}
	}
}

// TestHalf checks the float16 conversions on the cases that matter:
// exact values, rounding to nearest even, subnormals, overflow.
func TestHalf(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1e6, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, {6.097555160522461e-05, 0x03ff}, {6.103515625e-05, 0x0400},
		{1 + 1.0/2048, 0x3c00},             // halfway: to even (down)
		{1 + 3.0/2048, 0x3c02},             // halfway: to even (up)
		{1 + 1.0/2048 + 1.0/65536, 0x3c01}, // above halfway: up
		{0.1, 0x2e66},
	}
	for _, c := range cases {
		if got := floatToHalf(c.f); got != c.h {
			t.Errorf("floatToHalf(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for h := 0; h < 0x10000; h++ { // every finite half survives a round trip
		if h&0x7c00 == 0x7c00 {
			continue
		}
		if got := floatToHalf(halfToFloat(uint16(h))); got != uint16(h) {
			t.Fatalf("round trip of %#04x gives %#04x", h, got)
		}
	}
}
