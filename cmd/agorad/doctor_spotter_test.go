package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/configs/configtest"
)

// TestCheckSpotter: doctor opens the real front end and says what it runs
// on (XNNPACK, with the pinned library), and without the front end warns
// under "auto" and fails under "on".
func TestCheckSpotter(t *testing.T) {
	kwsDir := testaudio.SpotterDir(t)
	tests := []struct {
		name, mode, modelsDir string
		status, detail        string
	}{
		{"front end found", "on", filepath.Dir(kwsDir), "ok", "XNNPACK kernels"},
		{"off", "off", t.TempDir(), "ok", "whisper's text alone"},
		{"missing, auto", "auto", t.TempDir(), "warn", "make models"},
		{"missing, on", "on", t.TempDir(), "fail", "make models"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := configtest.Daemon(t, "inspector-7", "tcp://127.0.0.1:1")
			cfg.Models.Dir, cfg.Wake.Spotter = tt.modelsDir, tt.mode
			c := checkSpotter(cfg)
			if c.Status != tt.status || !strings.Contains(c.Detail, tt.detail) {
				t.Errorf("checkSpotter = %s %q, want %s and %q", c.Status, c.Detail, tt.status, tt.detail)
			}
		})
	}
}
