package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestBridgeUnitDirectives(t *testing.T) {
	d := directives(t, "agora-bridge.service")
	svc := d["Service"]
	want := map[string]string{
		"Type":            "notify",
		"ExecStart":       "/usr/bin/agora-bridge run -c /etc/agora-bridge/agora-bridge.yaml --state-dir /var/lib/agora-bridge",
		"Restart":         "on-failure",
		"DynamicUser":     "yes",
		"StateDirectory":  "agora-bridge",
		"ProtectSystem":   "strict",
		"NoNewPrivileges": "yes",
		"PrivateDevices":  "yes",
	}
	for k, v := range want {
		if got := svc[k]; len(got) != 1 || got[0] != v {
			t.Errorf("[Service] %s = %v, want %q", k, got, v)
		}
	}
}

func TestBridgeUnitVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd)")
	}
	dir := t.TempDir()
	unit, err := os.ReadFile("agora-bridge.service")
	if err != nil {
		t.Fatal(err)
	}
	stand := filepath.Join(dir, "agora-bridge")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(unit), "/usr/bin/agora-bridge", stand)
	path := filepath.Join(dir, "agora-bridge.service")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
