package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/configs"
)

// TestLoadSpotterHead: wake.spotter_head opens the spotter with that
// directory's head (its threshold, not the built-in one's), and with
// wake.spotter on a directory whose head is broken stops the daemon with
// an error naming it.
func TestLoadSpotterHead(t *testing.T) {
	front := testaudio.SpotterDir(t) // models/kws
	head, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "wake", "kws", "testdata", "headdir", "head.json"))
	if err != nil {
		t.Fatal(err)
	}
	good := t.TempDir()
	if err := os.WriteFile(filepath.Join(good, "head.json"), head, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "head.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(dir string) (*speech, error) {
		cfg := &configs.Config{}
		cfg.Models.Dir = filepath.Dir(front)
		cfg.Wake.Spotter = "on"
		cfg.Wake.SpotterHead = dir
		sp := &speech{core: &core{cfg: cfg, log: slog.New(slog.DiscardHandler)}}
		return sp, sp.loadSpotter()
	}
	sp, err := open(good)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.spotter.Close()
	if got := sp.spotter.(interface{ Threshold() float64 }).Threshold(); got != 0.5 {
		t.Errorf("threshold %v, want the head directory's 0.5", got)
	}
	if _, err := open(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("broken head: %v; want an error naming %s", err, bad)
	}
}
