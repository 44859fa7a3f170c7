package model

import "math"

// halfToFloat widens an IEEE 754 binary16 value exactly.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0: // ±0
		return math.Float32frombits(sign)
	}
	// subnormal: normalise the mantissa
	e := uint32(127 - 15 + 1)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// floatToHalf narrows f to binary16, rounding to nearest even as ggml's
// and numpy's conversions do; out-of-range values become ±inf.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // inf, NaN (keep NaN quiet)
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal half or zero
		if e < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - e)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is still right (up to inf)
	}
	return sign | uint16(half)
}
