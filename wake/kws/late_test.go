package kws

import (
	"math"
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		head, late, want float64
	}{
		{0.5, 0.5, 0.5},
		{0.9, 0.9, 0.9},
		{sigmoid(3), 0.5, sigmoid(2)},          // an undecided late head: two thirds of the head's logit
		{sigmoid(3), sigmoid(-6), 0.5},         // the late head hears something else after the name
		{sigmoid(1.5), sigmoid(6), sigmoid(3)}, // a sure late head carries a head that is less so
		{1, 1, 1 - 1e-9},                       // clamped, never NaN
		{0, 0, 1e-9},
	}
	for _, tt := range tests {
		if got := Verdict(tt.head, tt.late); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Verdict(%v, %v) = %v, want %v", tt.head, tt.late, got, tt.want)
		}
	}
	if Verdict(0.99, 0.9) <= Verdict(0.99, 0.5) || Verdict(0.99, 0.9) <= Verdict(0.9, 0.9) {
		t.Error("the verdict must grow with either head's score")
	}
}

func TestSetLate(t *testing.T) {
	parse := func(t *testing.T, windows int, after any) *Head {
		return parseSmallHead(t, windows, map[string]any{"after": after})
	}
	tests := []struct {
		name    string
		windows int
		after   any
		wantErr string // "" for accepted
	}{
		{"late head", 2, []float64{0.32, 0.64}, ""},
		{"no after", 2, nil, "after []"},
		{"after backwards", 2, []float64{0.64, 0.32}, "want [from, to]"},
		{"after too long", 2, []float64{0.3, 5}, "want [from, to]"},
		{"other windows", 3, []float64{0.32, 0.64}, "3 windows, the head 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Spotter{head: parse(t, 2, nil)}
			err := s.SetLate(parse(t, tt.windows, tt.after))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("SetLate: %v", err)
			case tt.wantErr == "" && s.late == nil:
				t.Fatal("SetLate accepted the head but does not use it")
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("SetLate: %v, want an error with %q", err, tt.wantErr)
			case tt.wantErr != "" && s.late != nil:
				t.Fatal("SetLate refused the head but uses it")
			}
		})
	}
}
