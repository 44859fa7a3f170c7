package daemon

import (
	"testing"
	"time"

	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/wake/kws"
)

// TestWearerDefaults: the shipped configuration is the gate's measured
// defaults (bench/wearer), field for field.
func TestWearerDefaults(t *testing.T) {
	sp := &speech{core: &core{cfg: configs.Default()}}
	if got, want := sp.wearerConfig(), wearer.DefaultConfig(); got != want {
		t.Errorf("configs/agorad.yaml wearer section %+v, want audio/wearer's defaults %+v", got, want)
	}
}

// TestSpotFor: the spotter's verdict reaches the router unless the wearer
// gate took every word whisper wrote (someone else's speech, and a name in
// it is theirs); where whisper itself wrote nothing, it does.
func TestSpotFor(t *testing.T) {
	sure := &kws.Hit{Score: 0.999, End: time.Second, Heard: true}
	tests := []struct {
		name          string
		whisper, kept string
		hit           *kws.Hit
		want          bool
	}{
		{"words kept", "Agora, is this safe?", "Agora, is this safe?", sure, true},
		{"some words kept", "Agora, is this safe? Yes.", "Agora, is this safe?", sure, true},
		{"whisper wrote nothing", "", "", sure, true},
		{"the gate took every word", "Hey Agora, over here!", "", sure, false},
		{"no spotter", "Agora, is this safe?", "Agora, is this safe?", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spotFor(transcribe.Result{Text: tt.whisper}, transcribe.Result{Text: tt.kept}, tt.hit)
			if (got != nil) != tt.want || (got != nil && (got.Score != tt.hit.Score || !got.Heard)) {
				t.Errorf("spotFor(%q, %q) = %+v; want a verdict: %v", tt.whisper, tt.kept, got, tt.want)
			}
		})
	}
}
