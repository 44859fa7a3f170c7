package buffer

import (
	"strings"
	"testing"
)

func TestMode(t *testing.T) {
	s := openT(t, "", Options{})
	if m, err := s.Mode(); err != nil || m != "" {
		t.Fatalf("fresh Mode = %q, %v; want empty", m, err)
	}
	tests := []struct {
		mode    Mode
		wantErr bool
	}{
		{ModeFeedback, false},
		{ModeListen, false},
		{"", true},
		{"sleep", true},
	}
	for _, tt := range tests {
		err := s.SetMode(tt.mode)
		if (err != nil) != tt.wantErr {
			t.Fatalf("SetMode(%q) = %v, wantErr %v", tt.mode, err, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "mode") {
			t.Errorf("SetMode(%q) error %v does not say what was wrong", tt.mode, err)
		}
	}
	if err := s.SetMode(ModeFeedback); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	if m, err := s.Mode(); err != nil || m != ModeFeedback {
		t.Fatalf("Mode after reopen = %q, %v", m, err)
	}
}
