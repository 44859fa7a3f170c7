package kws

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

func TestSetGate(t *testing.T) {
	parse := func(t *testing.T, windows int, threshold float64) *Head {
		return parseSmallHead(t, windows, map[string]any{"threshold": threshold})
	}
	tests := []struct {
		name      string
		windows   int
		threshold float64
		wantErr   string // "" for accepted
	}{
		{"gate", 2, 0.01, ""},
		{"at lateFrom", 2, lateFrom, ""},
		{"passes too late", 2, 0.6, "want at most 0.5"},
		{"other windows", 3, 0.01, "3 windows, the head 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Spotter{head: parse(t, 2, 0.5)}
			err := s.SetGate(parse(t, tt.windows, tt.threshold))
			switch {
			case tt.wantErr == "" && (err != nil || s.gate == nil):
				t.Fatalf("SetGate: %v (in use: %v)", err, s.gate != nil)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("SetGate: %v, want an error with %q", err, tt.wantErr)
			case tt.wantErr != "" && s.gate != nil:
				t.Fatal("SetGate refused the gate but uses it")
			}
		})
	}
}

// TestGateHeadScore: where the gate passes a window the head's score is
// the head's own; where it turns it away, the gate's, under its threshold.
func TestGateHeadScore(t *testing.T) {
	head := func(bias float32) *Head {
		h := parseSmallHead(t, 1, nil)
		h.Layers[1].B[0] = bias
		return h
	}
	s := &Spotter{head: head(0)} // on zeros: sigmoid(0) = 0.5
	x := make([]float32, embFeatures)
	for _, tt := range []struct {
		name string
		gate float32 // the gate's bias: its logit on zeros
		want float64
	}{
		{"passes", -2, 0.5},             // sigmoid(-2) = 0.119 >= 0.1
		{"turns away", -4, sigmoid(-4)}, // 0.018 < 0.1
	} {
		g := head(tt.gate)
		g.Threshold = 0.1
		s.gate = g
		if got := s.headScore(x); math.Abs(got-tt.want) > 1e-6 { // the head's float32 arithmetic
			t.Errorf("%s: score %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestGateReal: the built-in gate on the real front end, on sentences and
// voices it never saw, with and without the name: every window the head
// scores lateFrom or more passes it, so the verdict is the same as without
// the gate (the head's scores are the same from lateFrom up, the late
// head's everywhere), and it turns most windows of speech without the name
// away (what it saves).
func TestGateReal(t *testing.T) {
	dir := testaudio.SpotterDir(t)
	s, err := OpenDefault(0, filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.gate == nil {
		t.Fatal("OpenDefault sets no gate")
	}
	gate := s.gate
	tests := []struct{ voice, text string }{
		{"en-us", "Agora, how deep should the footing be under this wall?"},
		{"en-gb-x-rp+m2", "Before we close up, could we ask Agora whether the fire stopping is complete?"},
		{"en-us+f3", "The plasterer says Agora flagged the damp patch by the back door."},
		{"nl+m2", "Vraag het Agora even, ik weet niet of die latei genoeg oplegging heeft."},
		{"nl+f3", "Agora, noteer dat de dakgoot verstopt zit."},
		{"en-us+m4", "The scaffold tag on the north elevation ran out last Tuesday."},
		{"en-gb-x-rp", "My sister has agoraphobia and never leaves the house."},
		{"nl+m1", "De aannemer heeft de wapening gisteren nog laten controleren."},
	}
	var windows, turned, speechWindows, speechTurned int
	for _, tt := range tests {
		speech := testaudio.Concat(testaudio.Silence(500), testaudio.SpeakArgs(t, tt.text, "-v", tt.voice, "-s", "150"), testaudio.Silence(300))
		s.gate = nil
		full, fullLate, ends, err := s.Parts(speech)
		if err != nil {
			t.Fatal(err)
		}
		s.gate = gate
		gated, gatedLate, gatedEnds, err := s.Parts(speech)
		if err != nil {
			t.Fatal(err)
		}
		if len(gated) != len(full) || len(gatedEnds) != len(ends) {
			t.Fatalf("%q: %d windows with the gate, %d without", tt.text, len(gated), len(full))
		}
		named := strings.Contains(tt.text, "Agora")
		var best float64
		for i := range full {
			best = max(best, full[i])
			windows++
			if gated[i] != full[i] {
				turned++
				if !named {
					speechTurned++
				}
				if full[i] >= lateFrom || gated[i] >= gate.Threshold {
					t.Errorf("%q window %d: the head scores %.4f, the gate turned it away with %.4f", tt.text, i, full[i], gated[i])
				}
			}
			if !named {
				speechWindows++
			}
			if gatedLate[i] != fullLate[i] && (full[i] >= lateFrom || gatedLate[i] >= lateFrom) {
				t.Errorf("%q window %d: the late head's part %.4f with the gate, %.4f without", tt.text, i, gatedLate[i], fullLate[i])
			}
		}
		t.Logf("%-14s best head %.4f: %s", tt.voice, best, tt.text)
	}
	t.Logf("the gate turned away %d of %d windows; of speech without the name %d of %d", turned, windows, speechTurned, speechWindows)
	if speechTurned*2 < speechWindows {
		t.Errorf("the gate turned away %d of %d windows of speech without the name, want most", speechTurned, speechWindows)
	}
}
