package daemon

import (
	"testing"

	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/configs"
)

// TestWearerDefaults: the shipped configuration is the gate's measured
// defaults (bench/wearer), field for field.
func TestWearerDefaults(t *testing.T) {
	sp := &speech{core: &core{cfg: configs.Default()}}
	if got, want := sp.wearerConfig(), wearer.DefaultConfig(); got != want {
		t.Errorf("configs/agorad.yaml wearer section %+v, want audio/wearer's defaults %+v", got, want)
	}
}
