package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/configs/configtest"
	"github.com/agora/agorad/sync/brokertest"
	"gopkg.in/yaml.v3"
)

// TestDoctor runs `agorad doctor --json` against a working set-up and
// against broken ones: each breaks exactly the check it names, and the exit
// code says something is wrong.
func TestDoctor(t *testing.T) {
	broker := brokertest.Start(t)
	down := brokertest.Start(t)
	down.Stop()
	tests := []struct {
		name   string
		mutate func(t *testing.T, c *configs.Config)
		env    func(e *doctorEnv)
		failed string // the check that must fail ("" = none)
	}{
		{"healthy", nil, nil, ""},
		{"missing model", func(t *testing.T, c *configs.Config) { c.Models.Whisper = filepath.Join(t.TempDir(), "gone.bin") }, nil, "whisper model"},
		{"broker down", func(t *testing.T, c *configs.Config) { c.MQTT.Broker = down.URL() }, nil, "broker"},
		{"wrong CA", func(t *testing.T, c *configs.Config) {
			ca := filepath.Join(t.TempDir(), "ca.pem")
			os.WriteFile(ca, []byte("not a certificate\n"), 0o644)
			c.MQTT.Broker = strings.Replace(broker.URL(), "tcp://", "ssl://", 1)
			c.MQTT.TLS.CAFile = ca
		}, nil, "broker"},
		{"unreadable input device", func(t *testing.T, c *configs.Config) { c.Input.Source = "default" },
			func(e *doctorEnv) {
				e.openMic = func(context.Context, string) (audio.Source, error) {
					return nil, errors.New("open /dev/snd/pcmC0D0c: permission denied")
				}
			}, "microphone"},
		{"unreadable push-to-talk device", func(t *testing.T, c *configs.Config) {
			c.Input.PTT.Enabled = true
			c.Input.PTT.EvdevDevice = filepath.Join(t.TempDir(), "event-gone")
		}, nil, "push-to-talk"},
		{"clock in 1970", nil, func(e *doctorEnv) { e.now = func() time.Time { return time.Unix(0, 0) } }, "clock"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configtest.Daemon(t, "dev-doctor", broker.URL())
			cfg.Input.Source = "none"
			if tc.mutate != nil {
				tc.mutate(t, cfg)
			}
			path := filepath.Join(t.TempDir(), "agorad.yaml")
			b, err := yaml.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(path, b, 0o644)
			env := realDoctorEnv()
			env.brokerWait = 2 * time.Second
			if tc.env != nil {
				tc.env(&env)
			}
			var out, errb bytes.Buffer
			code := cmdDoctor(context.Background(), []string{"-c", path, "--json"}, &out, &errb, env)
			var rep struct {
				OK     bool    `json:"ok"`
				Checks []check `json:"checks"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("output is not JSON: %v\n%s%s", err, out.String(), errb.String())
			}
			var failed []string
			for _, c := range rep.Checks {
				if c.Status == "fail" {
					failed = append(failed, c.Name)
					if c.Fix == "" {
						t.Errorf("%s failed without a fix: %+v", c.Name, c)
					}
				}
			}
			want := []string{}
			if tc.failed != "" {
				want = []string{tc.failed}
			}
			if strings.Join(failed, ",") != strings.Join(want, ",") {
				t.Fatalf("failed checks %q, want %q\n%s", failed, want, out.String())
			}
			if (code != 0) != (tc.failed != "") || rep.OK != (tc.failed == "") {
				t.Fatalf("exit %d ok=%v with failed %q", code, rep.OK, failed)
			}
		})
	}
}
