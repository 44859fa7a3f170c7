package model

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agora/agorad/transcribe/model/internal/ggmlref"
)

// block is 32 values, zero but for the given ones.
func block(set map[int]float32) []float32 {
	b := make([]float32, 32)
	for i, v := range set {
		b[i] = v
	}
	return b
}

// TestQuantizeQ4_0Rules checks ggml's q4_0 rules on hand-worked blocks:
// the scale is the signed value of largest magnitude (the first one on a
// tie) over -8, quants are trunc(x/d + 8.5) capped at 15, value j goes to
// the low nibble of byte j and value j+16 to its high nibble.
func TestQuantizeQ4_0Rules(t *testing.T) {
	cases := []struct {
		name  string
		x     []float32
		d     uint16 // the f16 scale
		bytes map[int]byte
	}{
		{"zeros", block(nil), 0x8000, nil}, // d = 0/-8 = -0: every quant is 8
		{"negative max", block(map[int]float32{0: -8}), 0x3c00, map[int]byte{0: 0x80}},
		{"positive max flips the sign", block(map[int]float32{0: 8}), 0xbc00, map[int]byte{0: 0x80}},
		{"first of equal magnitudes wins; -max caps at 15", block(map[int]float32{1: 16, 16: -16}), 0xc000,
			map[int]byte{0: 0xf8, 1: 0x80}},
		{"half rounds up, just below truncates", block(map[int]float32{0: -8, 1: 0.49, 2: 0.5, 3: -0.5, 4: -0.51, 20: 7.9}), 0x3c00,
			map[int]byte{0: 0x80, 1: 0x88, 2: 0x89, 3: 0x88, 4: 0xf7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := make([]byte, 18)
			binary.LittleEndian.PutUint16(want, c.d)
			for j := 0; j < 16; j++ {
				want[2+j] = 0x88
			}
			for j, b := range c.bytes {
				want[2+j] = b
			}
			if got := quantizeQ4_0(c.x, make([]byte, 18)); !bytes.Equal(got, want) {
				t.Errorf("got  % x\nwant % x", got, want)
			}
		})
	}
}

// TestQuantizeLikeGGML compares the Go quantizers with ggml's own
// (libggml-base, the library whisper.cpp loads them with) bit for bit, on
// rows shaped like Whisper's weights and on the blocks where rounding and
// f16 scales are delicate.
func TestQuantizeLikeGGML(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 4))
	gauss := func(n int, scale float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * scale)
		}
		return x
	}
	ties := make([]float32, 384) // exact x/d + 8.5 boundaries: multiples of d/2
	for i := range ties {
		ties[i] = float32(i%17-8) / 2
	}
	edge := append(append(append(
		make([]float32, 32),                     // a zero block
		block(map[int]float32{5: -3, 9: 3})...), // equal magnitudes, opposite signs
		block(map[int]float32{0: 1e-6, 1: -7e-7})...), // subnormal f16 scale
		block(map[int]float32{0: 65504 * 8, 31: -1})...) // the largest f16 scale
	inputs := []struct {
		name   string
		x      []float32
		perRow int
	}{
		{"weights 384x384", gauss(384*384, 0.05), 384},
		{"weights 64x1536 large", gauss(64*1536, 3), 1536},
		{"tiny values", gauss(32*64, 1e-5), 64},
		{"ties", ties, 384},
		{"edge blocks", edge, 32},
	}
	for _, q := range []struct {
		name  string
		typ   int
		block int
		f     func([]float32, []byte) []byte
	}{
		{"q4_0", ggmlref.Q4_0, 18, quantizeQ4_0},
		{"q8_0", ggmlref.Q8_0, 34, quantizeQ8_0},
	} {
		for _, in := range inputs {
			t.Run(fmt.Sprintf("%s/%s", q.name, in.name), func(t *testing.T) {
				want, err := ggmlref.Quantize(q.typ, in.x, in.perRow)
				if err != nil {
					t.Fatal(err)
				}
				got := q.f(in.x, make([]byte, len(in.x)/32*q.block))
				if len(got) != len(want) {
					t.Fatalf("%d bytes, ggml %d", len(got), len(want))
				}
				for b := 0; b < len(got); b += q.block {
					if !bytes.Equal(got[b:b+q.block], want[b:b+q.block]) {
						t.Fatalf("block %d (values %v):\n got  % x\n ggml % x", b/q.block,
							in.x[b/q.block*32:b/q.block*32+32], got[b:b+q.block], want[b:b+q.block])
					}
				}
			})
		}
	}
}
