// Package configtest builds the configuration of a daemon under test:
// state directory and control socket under t.TempDir(), no metrics
// listener, no sounds, no audio input, the test models from shared/, and a
// fast reconnect, so tests start from the same place and change only what
// they test.
package configtest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/configs"
)

// Daemon returns that configuration for device deviceID and the broker at
// brokerURL.
func Daemon(t testing.TB, deviceID, brokerURL string) *configs.Config {
	t.Helper()
	dir := t.TempDir()
	cfg := configs.Default()
	cfg.DeviceID = deviceID
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Control.Socket = filepath.Join(dir, "agorad.sock")
	cfg.MQTT.Broker = brokerURL
	cfg.MQTT.ReconnectMin = configs.Duration(100 * time.Millisecond)
	cfg.MQTT.ReconnectMax = configs.Duration(500 * time.Millisecond)
	cfg.Input.Source = "none"
	cfg.Sounds.Enabled = false
	cfg.Metrics.Listen = ""
	cfg.Models.VAD = testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin")
	cfg.Models.Whisper = testaudio.Model(t, "for-tests-ggml-tiny.bin")
	return cfg
}
