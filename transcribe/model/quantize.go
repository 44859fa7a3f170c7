package model

import (
	"encoding/binary"
	"math"
)

// ggml's block quantizers for the weights Import writes as q8_0 or q4_0:
// the same rounding as ggml's reference quantize_row_q8_0/q4_0_ref.

// quantizeQ8_0 packs blocks of 32 values as ggml's reference quantizer
// does: an f16 scale d = max|x|/127, then round(x/d) as int8.
func quantizeQ8_0(x []float32, out []byte) []byte {
	for blk := 0; blk < len(x)/32; blk++ {
		v := x[blk*32 : blk*32+32]
		var amax float32
		for _, f := range v {
			if a := float32(math.Abs(float64(f))); a > amax {
				amax = a
			}
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		o := out[blk*34:]
		binary.LittleEndian.PutUint16(o, floatToHalf(d))
		for j, f := range v {
			o[2+j] = byte(int8(math.Round(float64(f * id))))
		}
	}
	return out
}

// quantizeQ4_0 packs blocks of 32 values bit for bit as ggml's reference
// quantizer (ggml-quants.c: quantize_row_q4_0_ref) does: the scale d is the
// block's value of largest magnitude, sign kept, divided by -8 (stored as
// f16); each value becomes min(15, trunc(x/d + 8.5)) in single precision,
// value j in the low nibble of byte j and value j+16 in its high nibble.
func quantizeQ4_0(x []float32, out []byte) []byte {
	for blk := 0; blk < len(x)/32; blk++ {
		v := x[blk*32 : blk*32+32]
		var amax, max float32
		for _, f := range v {
			if a := float32(math.Abs(float64(f))); amax < a {
				amax, max = a, f
			}
		}
		d := max / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		o := out[blk*18:]
		binary.LittleEndian.PutUint16(o, floatToHalf(d))
		q := func(f float32) byte {
			// float32(...) rounds the product before the add, as C does:
			// Go may otherwise fuse the two into one FMA.
			return byte(min(15, int8(float32(f*id)+8.5)))
		}
		for j := 0; j < 16; j++ {
			o[2+j] = q(v[j]) | q(v[16+j])<<4
		}
	}
	return out
}
