package daemon

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/wake"
)

func TestPlanReload(t *testing.T) {
	tests := []struct {
		name                   string
		changed                []string
		applied, keys, restart []string
	}{
		{"nothing", nil, nil, nil, nil},
		{"log level", []string{"log.level"}, []string{"log.level"}, []string{"log.level"}, nil},
		{"log format needs a restart", []string{"log.format"}, nil, nil, []string{"log.format"}},
		{"both wake lists apply the rules once", []string{"wake.words", "wake.listen_words"},
			[]string{"wake.words", "wake.listen_words"}, []string{"wake"}, nil},
		{"wake bias and spotter need a restart", []string{"wake.words", "wake.bias", "wake.spotter", "wake.spotter_threshold"},
			[]string{"wake.words"}, []string{"wake"}, []string{"wake.bias", "wake.spotter", "wake.spotter_threshold"}},
		{"mixed", []string{"state_dir", "mode", "mqtt.password", "sounds.volume"},
			[]string{"mode", "sounds.volume"}, []string{"mode", "sounds"}, []string{"state_dir", "mqtt.password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, keys, restart := planReload(tt.changed)
			if !reflect.DeepEqual(applied, tt.applied) || !reflect.DeepEqual(keys, tt.keys) || !reflect.DeepEqual(restart, tt.restart) {
				t.Fatalf("planReload(%v) = %v, %v, %v; want %v, %v, %v", tt.changed, applied, keys, restart, tt.applied, tt.keys, tt.restart)
			}
		})
	}
}

// TestReloadAppliesSafeChanges: SIGHUP (the Reload channel) applies a new
// wake word from the file at once; a broken file is rejected and the running
// configuration kept.
func TestReloadAppliesSafeChanges(t *testing.T) {
	cfg := testConfig(t, "tcp://127.0.0.1:1")
	cfg.Input.Source = "none"
	path := filepath.Join(t.TempDir(), "agorad.yaml")
	write := func(c *configs.Config) {
		b, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cfg)
	reload := make(chan struct{}, 1)
	o := testOptions(cfg)
	o.ConfigPath, o.Reload, o.Transcriber = path, reload, &recordingTranscriber{}
	d, _ := startDaemon(t, o)

	if m := d.rules.Match("Computer, wat nu?"); m.Action != wake.None {
		t.Fatalf("before reload: %q is already a wake word", "computer")
	}
	if err := os.WriteFile(path, []byte("sounds:\n  volume: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	time.Sleep(200 * time.Millisecond)
	if m := d.rules.Match("agora, wat nu?"); m.Action != wake.Feedback {
		t.Fatal("a rejected reload changed the running wake rules")
	}

	next := *cfg
	next.Wake.Words = []string{"agora", "computer"}
	write(&next)
	reload <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for d.rules.Match("Computer, wat nu?").Action != wake.Feedback {
		if time.Now().After(deadline) {
			t.Fatal("reload did not apply the new wake word")
		}
		time.Sleep(10 * time.Millisecond)
	}
	out, err := d.router.Handle(context.Background(), Heard{Text: "Computer, wat nu?", Source: "typed"})
	if err != nil || out.ModeAfter != buffer.ModeFeedback || out.Sent != 1 {
		t.Fatalf("after reload: %+v, %v; want feedback with the command queued", out, err)
	}
}
