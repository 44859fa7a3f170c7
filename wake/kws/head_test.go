package kws

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// smallHead is a valid head of one hidden unit: relu(sum(x)) then
// sigmoid(2h - 1).
func smallHead(windows int) map[string]any {
	ones := make([]float32, windows*embFeatures)
	for i := range ones {
		ones[i] = 1
	}
	return map[string]any{
		"format": headFormat, "name": "agora", "windows": windows, "features": embFeatures, "threshold": 0.5,
		"layers": []map[string]any{
			{"w": [][]float32{ones}, "b": []float32{0}, "act": "relu"},
			{"w": [][]float32{{2}}, "b": []float32{-1}, "act": "sigmoid"},
		},
	}
}

// parseSmallHead is smallHead(windows) with the fields in set changed
// (nil values left out), parsed.
func parseSmallHead(t *testing.T, windows int, set map[string]any) *Head {
	t.Helper()
	m := smallHead(windows)
	for k, v := range set {
		if v != nil {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	h, err := ParseHead(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestParseHead(t *testing.T) {
	tests := []struct {
		name   string
		modify func(h map[string]any)
		want   string // "" for valid
	}{
		{"valid", func(map[string]any) {}, ""},
		{"format", func(h map[string]any) { h["format"] = "other/1" }, "format"},
		{"features", func(h map[string]any) { h["features"] = 64 }, "features"},
		{"threshold", func(h map[string]any) { h["threshold"] = 1.0 }, "threshold"},
		{"no layers", func(h map[string]any) { h["layers"] = []any{} }, "no layers"},
		{"inputs do not chain", func(h map[string]any) {
			h["layers"].([]map[string]any)[1]["w"] = [][]float32{{1, 2}}
		}, "layers[1].w[0]: 2 inputs, want 1"},
		{"biases", func(h map[string]any) { h["layers"].([]map[string]any)[0]["b"] = []float32{} }, "layers[0]: 1 weight rows, 0 biases"},
		{"activation", func(h map[string]any) { h["layers"].([]map[string]any)[0]["act"] = "tanh" }, "layers[0].act"},
		{"last not sigmoid", func(h map[string]any) { h["layers"].([]map[string]any)[1]["act"] = "relu" }, "sigmoid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := smallHead(2)
			tt.modify(h)
			data, _ := json.Marshal(h)
			_, err := ParseHead(data)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("ParseHead: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("ParseHead: %v, want an error naming %q", err, tt.want)
			}
		})
	}
	if _, err := ParseHead([]byte("{")); err == nil {
		t.Error("ParseHead accepted truncated JSON")
	}
}

// TestParseHeadFlushesTiny: weights and biases under tinyWeight, denormal
// floats among them, are 0 once parsed; the others are kept.
func TestParseHeadFlushesTiny(t *testing.T) {
	h := smallHead(2)
	denormal := math.Float32frombits(1) // the smallest float32 above 0
	layers := h["layers"].([]map[string]any)
	row := make([]float32, 2*embFeatures)
	copy(row, []float32{denormal, -1e-25, 1e-3, 0.5, -2, 0, 1e-19, 3 * denormal})
	layers[0]["w"] = [][]float32{row}
	layers[0]["b"] = []float32{-denormal}
	data, _ := json.Marshal(h)
	got, err := ParseHead(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 0, 1e-3, 0.5, -2, 0, 1e-19, 0}
	if w := got.Layers[0].W[0]; !slices.Equal(w[:len(want)], want) || got.Layers[0].B[0] != 0 {
		t.Errorf("first layer after parsing: w %v, b %v; want %v, 0", w, got.Layers[0].B, want)
	}
}

func TestHeadScore(t *testing.T) {
	data, _ := json.Marshal(smallHead(1))
	h, err := ParseHead(data)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		fill float32
		want float64
	}{
		{0, 1 / (1 + math.E)},                       // relu(0) = 0: sigmoid(-1)
		{-1, 1 / (1 + math.E)},                      // relu cuts the negative sum
		{1.0 / embFeatures, 1 / (1 + math.Exp(-1))}, // sum 1: sigmoid(1)
	}
	for _, tt := range tests {
		x := make([]float32, embFeatures)
		for i := range x {
			x[i] = tt.fill
		}
		if got := h.score(x); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("score(all %v) = %v, want %v", tt.fill, got, tt.want)
		}
	}
}

func TestDefaultHead(t *testing.T) {
	h, err := DefaultHead()
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "agora" || h.Trained == "" {
		t.Errorf("built-in head: name %q, trained %q", h.Name, h.Trained)
	}
	late, err := DefaultLate()
	if err != nil {
		t.Fatal(err)
	}
	if late.Name != "agora" || late.Trained == "" || late.Windows != h.Windows {
		t.Errorf("built-in late head: name %q, %d windows (the head %d), trained %q", late.Name, late.Windows, h.Windows, late.Trained)
	}
	if err := (&Spotter{head: h}).SetLate(late); err != nil {
		t.Errorf("the built-in heads do not go together: %v", err)
	}
}

// BenchmarkDefaultHead is the built-in head on one window (1.28 s of
// embeddings): the spotter runs it every 80 ms of audio, beside the front
// end's two networks (docs/wake.md, "Cost").
func BenchmarkDefaultHead(b *testing.B) {
	h, err := DefaultHead()
	if err != nil {
		b.Fatal(err)
	}
	x := make([]float32, h.Windows*h.Features)
	for i := range x {
		x[i] = float32(i%17) - 8
	}
	for b.Loop() { // b.Loop times only the loop
		h.score(x)
	}
}
