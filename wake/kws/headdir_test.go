package kws

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

func writeHeadDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadHeadDir(t *testing.T) {
	small, _ := json.Marshal(smallHead(16))
	lateM := smallHead(16)
	lateM["after"] = []float64{0.32, 0.64}
	lateB, _ := json.Marshal(lateM)
	tests := []struct {
		name             string
		files            map[string][]byte
		wantErr          string // "" for none
		wantLate, wantGt bool
	}{
		{"head alone", map[string][]byte{HeadDirHead: small}, "", false, false},
		{"all three", map[string][]byte{HeadDirHead: small, HeadDirLate: lateB, HeadDirGate: small}, "", true, true},
		{"no head", map[string][]byte{HeadDirGate: small}, HeadDirHead, false, false},
		{"broken gate", map[string][]byte{HeadDirHead: small, HeadDirGate: []byte("{")}, HeadDirGate, false, false},
		{"broken late", map[string][]byte{HeadDirHead: small, HeadDirLate: []byte(`{"format":"x"}`)}, HeadDirLate, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, late, gate, err := LoadHeadDir(writeHeadDir(t, tt.files))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v; want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if head == nil || (late != nil) != tt.wantLate || (gate != nil) != tt.wantGt {
				t.Fatalf("head %v late %v gate %v; want late %v gate %v", head != nil, late != nil, gate != nil, tt.wantLate, tt.wantGt)
			}
		})
	}
}

// TestOpenHeadDirReal: a head directory holding the built-in heads opens
// on the real front end as OpenWith does: the late head's threshold is the
// verdict's, and it hears the name.
func TestOpenHeadDirReal(t *testing.T) {
	front := testaudio.SpotterDir(t)
	dir := writeHeadDir(t, map[string][]byte{HeadDirHead: agoraHead, HeadDirLate: lateHead, HeadDirGate: gateHead})
	s, err := OpenHeadDir(front, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	late, _ := DefaultLate()
	if s.Threshold() != late.Threshold {
		t.Errorf("threshold %v, want the late head's %v", s.Threshold(), late.Threshold)
	}
	speech := testaudio.Concat(testaudio.Silence(600), testaudio.SpeakArgs(t, "Agora, what is the maximum span for this beam?", "-v", "en-us", "-s", "150"), testaudio.Silence(800))
	hit, err := s.Spot(speech)
	if err != nil {
		t.Fatal(err)
	}
	if !hit.Heard {
		t.Errorf("head directory's spotter did not hear the name (score %.3f)", hit.Score)
	}
}
