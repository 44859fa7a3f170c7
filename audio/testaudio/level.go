package testaudio

import (
	"math"

	"github.com/agora/agorad/audio"
)

// ActiveDB is the active level of speech s (dBFS): the power mean of its
// 20 ms frames within rangeDB of the loudest, so pauses do not count (the
// level clips are mixed and set at; bench/noise's mix.py uses 30 dB, the
// wearer tests 35). A trailing frame shorter than half a frame is left out.
func ActiveDB(s []float32, rangeDB float64) float64 {
	const n = audio.SampleRate / 50
	var pow []float64
	top := 0.0
	for i := 0; i < len(s); i += n {
		end := min(i+n, len(s))
		if end-i < n/2 && i > 0 {
			break
		}
		var e float64
		for _, v := range s[i:end] {
			e += float64(v) * float64(v)
		}
		e /= float64(end - i)
		pow = append(pow, e)
		top = max(top, e)
	}
	floor := top * math.Pow(10, -rangeDB/10)
	sum, k := 0.0, 0
	for _, e := range pow {
		if e > floor {
			sum += e
			k++
		}
	}
	return 10 * math.Log10(sum/float64(max(k, 1)))
}

// AtActiveDB returns a copy of s scaled to the active level db (ActiveDB
// with rangeDB).
func AtActiveDB(s []float32, db, rangeDB float64) []float32 {
	g := float32(math.Pow(10, (db-ActiveDB(s, rangeDB))/20))
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = v * g
	}
	return out
}
