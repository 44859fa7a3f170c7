package testaudio

import "math"

// Find returns where want best matches inside got and the normalized
// correlation there (1 is an exact copy at any volume). Tests use it to find
// a sound (an earcon, a clip) in what was played or captured.
func Find(want, got []float32) (lag int, corr float64) {
	var ew float64
	for _, v := range want {
		ew += float64(v) * float64(v)
	}
	corr, lag = -1, -1
	for l := 0; l+len(want) <= len(got); l++ {
		var xy, eg float64
		for i, w := range want {
			g := float64(got[l+i])
			xy += float64(w) * g
			eg += g * g
		}
		if eg == 0 {
			continue
		}
		if c := xy / math.Sqrt(ew*eg); c > corr {
			corr, lag = c, l
		}
	}
	return lag, corr
}

// Align finds the lag (ref[i] ~ got[i+lag]) within ±maxLag that maximises
// the normalized cross-correlation, and that correlation: how a captured
// signal lines up with what was played into the microphone.
func Align(ref, got []float32, maxLag int) (lag int, corr float64) {
	corr = -2
	for l := -maxLag; l <= maxLag; l++ {
		var xy, xx, yy float64
		for i, x := range ref {
			j := i + l
			if j < 0 || j >= len(got) {
				continue
			}
			y := float64(got[j])
			xy += float64(x) * y
			xx += float64(x) * float64(x)
			yy += y * y
		}
		if xx == 0 || yy == 0 {
			continue
		}
		if c := xy / math.Sqrt(xx*yy); c > corr {
			corr, lag = c, l
		}
	}
	return lag, corr
}
