package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
	"github.com/agora/agorad/configs"
)

func TestJudgeLevels(t *testing.T) {
	db := func(x float64) *float64 { return &x }
	tests := []struct {
		name       string
		l          *control.Levels
		wantStatus string
		wantDetail string
		wantFix    string
	}{
		{"no hands-free", nil, "skip", "without hands-free", ""},
		{"just started", &control.Levels{Seconds: 4, FloorDBFS: -60}, "skip", "only 4 s", "listen for a minute"},
		{"good headset", &control.Levels{Seconds: 120, FloorDBFS: -55, ExpectedDBFS: -24, WearerDBFS: db(-23), Utterances: 6},
			"ok", "the wearer's speech -23.0 dBFS (32.0 dB over the floor, 6 utterances", ""},
		{"clipping", &control.Levels{Seconds: 120, FloorDBFS: -55, ExpectedDBFS: -24, WearerDBFS: db(-8), Clipped: 0.05},
			"warn", "clips in 5.0 %", "lower the capture gain"},
		{"speech near the floor", &control.Levels{Seconds: 120, FloorDBFS: -35, ExpectedDBFS: -24, WearerDBFS: db(-26), Utterances: 3},
			"warn", "too close to the noise floor", "2-3 cm from the corner of the mouth"},
		{"boom far from the mouth", &control.Levels{Seconds: 120, FloorDBFS: -70, ExpectedDBFS: -24, WearerDBFS: db(-38), Utterances: 3},
			"warn", "below a headset's level", "place the boom"},
		{"wearer 7 dB under expected", &control.Levels{Seconds: 120, FloorDBFS: -70, ExpectedDBFS: -27, WearerDBFS: db(-34), Utterances: 5},
			"warn", "the gate drops the wearer's quieter sentences", "set wearer.expected_dbfs to the level heard"},
		{"wearer 4 dB under expected", &control.Levels{Seconds: 120, FloorDBFS: -70, ExpectedDBFS: -27, WearerDBFS: db(-31), Utterances: 5},
			"ok", "the wearer's speech -31.0 dBFS", ""},
		{"gain too high", &control.Levels{Seconds: 120, FloorDBFS: -50, ExpectedDBFS: -24, WearerDBFS: db(-11), Utterances: 3},
			"warn", "far above the expected level", "lower the capture gain"},
		{"all dropped, far below", &control.Levels{Seconds: 120, FloorDBFS: -70, ExpectedDBFS: -24, DroppedDBFS: db(-40), Dropped: 5},
			"warn", "5 utterances dropped as quieter than the wearer (median -40.0 dBFS", "too far from the mouth"},
		{"quiet room", &control.Levels{Seconds: 120, FloorDBFS: -70, ExpectedDBFS: -24},
			"ok", "no speech of the wearer heard", "speak a few sentences"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := judgeLevels(tc.l)
			if c.Name != "levels" || c.Status != tc.wantStatus || !strings.Contains(c.Detail, tc.wantDetail) || !strings.Contains(c.Fix, tc.wantFix) {
				t.Errorf("check %+v, want %s with detail containing %q and fix containing %q", c, tc.wantStatus, tc.wantDetail, tc.wantFix)
			}
		})
	}
}

// TestCheckLevelsAsksTheDaemon: doctor reads the levels from the running
// daemon's status over the control socket.
func TestCheckLevelsAsksTheDaemon(t *testing.T) {
	cfg := configs.Default()
	cfg.Control.Socket = filepath.Join(t.TempDir(), "none.sock")
	if c := checkLevels(context.Background(), cfg); c.Status != "skip" || !strings.Contains(c.Detail, "not running") {
		t.Errorf("no daemon: %+v", c)
	}
	heard := -40.0
	st := control.Status{Levels: &control.Levels{Seconds: 90, FloorDBFS: -65, ExpectedDBFS: -24, WearerDBFS: &heard, Utterances: 2}}
	cfg.Control.Socket = controltest.Serve(t, statusFake{controltest.NewFake(0), st})
	if c := checkLevels(context.Background(), cfg); c.Status != "warn" || !strings.Contains(c.Detail, "-40.0 dBFS") {
		t.Errorf("daemon hearing a far microphone: %+v", c)
	}
}
