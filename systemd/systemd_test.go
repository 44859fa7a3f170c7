package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// directives parses a unit file into section -> key -> values (in order).
func directives(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a directive: %q", path, n, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func TestUnitDirectives(t *testing.T) {
	d := directives(t, "agorad.service")
	svc := d["Service"]
	want := map[string]string{
		"Type":                    "notify",
		"NotifyAccess":            "main",
		"WatchdogSec":             "30",
		"ExecStart":               "/usr/bin/agorad run -c /etc/agorad/agorad.yaml",
		"ExecReload":              "/bin/kill -HUP $MAINPID",
		"StateDirectory":          "agorad",
		"RuntimeDirectory":        "agorad",
		"RuntimeDirectoryMode":    "0750",
		"User":                    "agorad",
		"Group":                   "agorad",
		"SupplementaryGroups":     "audio input",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"NoNewPrivileges":         "yes",
		"PrivateTmp":              "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectKernelLogs":       "yes",
		"ProtectControlGroups":    "yes",
		"RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
		"RestrictNamespaces":      "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"SystemCallArchitectures": "native",
		"CapabilityBoundingSet":   "",
		"DevicePolicy":            "closed",
		"Restart":                 "on-failure",
		"StandardOutput":          "journal",
	}
	for k, v := range want {
		got, ok := svc[k]
		if !ok {
			t.Errorf("[Service] %s= missing", k)
			continue
		}
		if got[len(got)-1] != v {
			t.Errorf("[Service] %s=%q, want %q", k, got[len(got)-1], v)
		}
	}
	for _, k := range []string{"TimeoutStopSec", "SystemCallFilter"} {
		if len(svc[k]) == 0 {
			t.Errorf("[Service] %s= missing", k)
		}
	}
	if !contains(svc["SystemCallFilter"], "@system-service") {
		t.Errorf("SystemCallFilter=%q lacks @system-service", svc["SystemCallFilter"])
	}
	for _, dev := range []string{"char-alsa rw", "char-input r"} {
		if !contains(svc["DeviceAllow"], dev) {
			t.Errorf("DeviceAllow=%s missing (got %q)", dev, svc["DeviceAllow"])
		}
	}
	// PrivateDevices=yes would hide /dev/snd and /dev/input.
	if v := svc["PrivateDevices"]; len(v) > 0 && v[len(v)-1] == "yes" {
		t.Error("PrivateDevices=yes hides the microphone and the push-to-talk key")
	}
	if d["Install"]["WantedBy"] == nil {
		t.Error("[Install] WantedBy= missing")
	}
}

func contains(vals []string, s string) bool {
	for _, v := range vals {
		if v == s {
			return true
		}
	}
	return false
}

// systemd-analyze verify checks every directive and that ExecStart is
// executable; the unit is copied with ExecStart pointing at a stand-in binary
// because agorad is not installed here. Any output (unknown key, bad value)
// fails the test: systemd only warns about those and still exits 0.
func TestSystemdAnalyzeVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (Debian package systemd): cannot verify the unit here")
	}
	dir := t.TempDir()
	unit, err := os.ReadFile("agorad.service")
	if err != nil {
		t.Fatal(err)
	}
	stand := filepath.Join(dir, "agorad")
	if err := os.WriteFile(stand, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(string(unit), "/usr/bin/agorad", stand)
	if body == string(unit) {
		t.Fatal("ExecStart path not found in the unit")
	}
	path := filepath.Join(dir, "agorad.service")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}

	// The check must be able to fail: a misspelt directive is reported.
	bad := filepath.Join(t.TempDir(), "agorad.service")
	os.WriteFile(bad, []byte(strings.Replace(body, "ProtectHome=yes", "ProtectHomer=yes", 1)), 0o644)
	out, _ = exec.Command(tool, "verify", bad).CombinedOutput()
	if !strings.Contains(string(out), "ProtectHomer") {
		t.Fatalf("verify did not report an unknown key: %s", out)
	}

	// Exposure score (lower is better; systemd calls < 2 "OK").
	if sec, err := exec.Command(tool, "security", "--offline=yes", path).CombinedOutput(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(sec)), "\n")
		t.Log(lines[len(lines)-1])
	}
}

// sysusers and tmpfiles are applied to a scratch root with systemd's tools:
// the agorad user and group appear, /etc/agorad is 0750 root:agorad.
func TestSysusersAndTmpfiles(t *testing.T) {
	sysusers, err1 := exec.LookPath("systemd-sysusers")
	tmpfiles, err2 := exec.LookPath("systemd-tmpfiles")
	if err1 != nil || err2 != nil {
		t.Skip("systemd-sysusers/systemd-tmpfiles not installed (Debian package systemd)")
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	if out, err := exec.Command(sysusers, "--root="+root, abs("agorad.sysusers")).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
	group, _ := os.ReadFile(filepath.Join(root, "etc/group"))
	if !strings.Contains(string(passwd), "agorad:x:") || !strings.Contains(string(passwd), ":/var/lib/agorad:/usr/sbin/nologin") {
		t.Fatalf("no agorad user:\n%s", passwd)
	}
	var agoradGID string
	for _, l := range strings.Split(string(group), "\n") {
		f := strings.Split(l, ":")
		if len(f) == 4 && f[0] == "agorad" {
			agoradGID = f[2]
		}
		if len(f) == 4 && (f[0] == "audio" || f[0] == "input") && !strings.Contains(f[3], "agorad") {
			t.Errorf("agorad not a member of %s: %q", f[0], l)
		}
	}
	if agoradGID == "" {
		t.Fatalf("no agorad group:\n%s", group)
	}
	if out, err := exec.Command(tmpfiles, "--root="+root, "--create", abs("agorad.tmpfiles")).CombinedOutput(); err != nil {
		t.Fatalf("systemd-tmpfiles: %v\n%s", err, out)
	}
	st, err := os.Stat(filepath.Join(root, "etc/agorad"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o750 {
		t.Errorf("/etc/agorad mode %v, want 0750", st.Mode().Perm())
	}
	out, _ := exec.Command("stat", "-c", "%u %g", filepath.Join(root, "etc/agorad")).Output()
	if got := strings.TrimSpace(string(out)); got != "0 "+agoradGID {
		t.Errorf("/etc/agorad owner %q, want root and gid %s", got, agoradGID)
	}
}

// MemoryDenyWriteExecute=yes must not break transcription: the helper in
// testdata/mdwe turns on the kernel's equivalent policy (prctl PR_SET_MDWE,
// the same rule systemd enforces with seccomp), then loads the ggml
// backends, a whisper model and the Silero VAD and runs both.
func TestWhisperUnderMemoryDenyWriteExecute(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs whisper.cpp: slow")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH: cannot build the helper")
	}
	shared := os.Getenv("AGORAD_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared")
	}
	whisperModel := filepath.Join(shared, "models", "for-tests-ggml-tiny.bin")
	vadModel := filepath.Join(shared, "models", "for-tests-silero-v6.2.0-ggml.bin")
	for _, p := range []string{whisperModel, vadModel} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("test model missing (set AGORAD_SHARED): %v", err)
		}
	}
	// The -lggml-cpu shim (see the Makefile): an empty archive.
	shim := t.TempDir()
	if out, err := exec.Command("ar", "rcs", filepath.Join(shim, "libggml-cpu.a")).CombinedOutput(); err != nil {
		t.Fatalf("make shim: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "mdwe")
	build := exec.Command(goTool, "build", "-o", bin, "./testdata/mdwe")
	build.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_LDFLAGS=-L"+shim+" "+os.Getenv("CGO_LDFLAGS"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build helper: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, whisperModel, vadModel)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
		t.Skipf("kernel without PR_SET_MDWE: %s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || lines[len(lines)-1] != "ok" {
		t.Fatalf("whisper under MDWE: %v\n%s", err, out)
	}
}
