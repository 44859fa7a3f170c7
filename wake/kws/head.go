package kws

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
)

// headFormat names the JSON layout of a trained head (wake/kws/train).
const headFormat = "agorad-kws-head/1"

// Head is the trained classifier on top of the embeddings: a small dense
// network from the last Windows embeddings (oldest first, flattened) to the
// probability that the name has just been said.
type Head struct {
	Format    string  `json:"format"`
	Name      string  `json:"name"`
	Windows   int     `json:"windows"`
	Features  int     `json:"features"`
	Layers    []layer `json:"layers"`
	Threshold float64 `json:"threshold"`
	Trained   string  `json:"trained"`
	// After is, for a late head (Spotter.SetLate), how long after the
	// name's end, in seconds, the windows it was trained to answer on end.
	After []float64 `json:"after,omitempty"`
}

type layer struct {
	W   [][]float32 `json:"w"` // out rows of in weights
	B   []float32   `json:"b"`
	Act string      `json:"act"`
}

// LoadHead reads and checks a head file.
func LoadHead(path string) (*Head, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read keyword head: %w", err)
	}
	h, err := ParseHead(data)
	if err != nil {
		return nil, fmt.Errorf("keyword head %s: %w", path, err)
	}
	return h, nil
}

// ParseHead decodes a head and checks that its layers chain.
func ParseHead(data []byte) (*Head, error) {
	var h Head
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if h.Format != headFormat {
		return nil, fmt.Errorf("format %q, want %q", h.Format, headFormat)
	}
	if h.Features != embFeatures || h.Windows < 1 {
		return nil, fmt.Errorf("input %d windows of %d features: the front end gives %d features", h.Windows, h.Features, embFeatures)
	}
	if h.Threshold <= 0 || h.Threshold >= 1 {
		return nil, fmt.Errorf("threshold %v: want a probability between 0 and 1", h.Threshold)
	}
	if len(h.Layers) == 0 {
		return nil, errors.New("no layers")
	}
	in := h.Windows * h.Features
	for i, l := range h.Layers {
		if len(l.W) == 0 || len(l.B) != len(l.W) {
			return nil, fmt.Errorf("layers[%d]: %d weight rows, %d biases", i, len(l.W), len(l.B))
		}
		for j, row := range l.W {
			if len(row) != in {
				return nil, fmt.Errorf("layers[%d].w[%d]: %d inputs, want %d", i, j, len(row), in)
			}
		}
		switch l.Act {
		case "relu", "sigmoid", "linear":
		default:
			return nil, fmt.Errorf("layers[%d].act %q: want relu, sigmoid or linear", i, l.Act)
		}
		in = len(l.W)
	}
	if last := h.Layers[len(h.Layers)-1]; len(last.W) != 1 || last.Act != "sigmoid" {
		return nil, errors.New("the last layer must be one sigmoid output")
	}
	h.flushTiny()
	return &h, nil
}

// tinyWeight is the magnitude under which a weight is taken as 0: the
// trained head has thousands of weights the fit left near 0, many of them
// denormal floats, and each product with one costs the processor a slow
// assist (the built-in head: 7503 in its first layer, which ran it at
// under half its speed); against sums of order 1 they are nothing.
const tinyWeight = 1e-20

func (h *Head) flushTiny() {
	for _, l := range h.Layers {
		for _, row := range l.W {
			for i, v := range row {
				if math.Abs(float64(v)) < tinyWeight {
					row[i] = 0
				}
			}
		}
		for i, v := range l.B {
			if math.Abs(float64(v)) < tinyWeight {
				l.B[i] = 0
			}
		}
	}
}

// score runs the head on x (Windows*Features floats).
func (h *Head) score(x []float32) float64 {
	cur := x
	for _, l := range h.Layers {
		next := make([]float32, len(l.W))
		for j, row := range l.W {
			s := l.B[j] + dot(row, cur)
			switch l.Act {
			case "relu":
				s = max(s, 0)
			case "sigmoid":
				s = float32(1 / (1 + math.Exp(-float64(s))))
			}
			next[j] = s
		}
		cur = next
	}
	return float64(cur[0])
}

// dot is the inner product of two vectors of one length, eight products
// at a time: eight sums in flight keep the processor's adders busy (the
// head's first layer is most of the spotter's own arithmetic).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		a, b := a[i:i+8], b[i:i+8]
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		s4 += a[4] * b[4]
		s5 += a[5] * b[5]
		s6 += a[6] * b[6]
		s7 += a[7] * b[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}
