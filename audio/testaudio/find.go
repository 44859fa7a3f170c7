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
