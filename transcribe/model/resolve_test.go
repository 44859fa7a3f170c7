package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultModelDirsUnderSystemd: with the working directory at / (as
// under systemd) the search list is absolute and names the service's places,
// never /models or /shared/models; in a checkout its models/ comes first.
func TestDefaultModelDirsUnderSystemd(t *testing.T) {
	t.Chdir("/")
	dirs := defaultModelDirs()
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			t.Errorf("relative search path %q", d)
		}
		if d == "/models" || d == "/shared/models" {
			t.Errorf("search path %q comes from a relative path resolved at /", d)
		}
	}
	if strings.Join(dirs, ",") != "/var/lib/agorad/models,/usr/share/agorad/models" {
		t.Errorf("search list at / = %q", dirs)
	}
	_, err := Resolve("whisper", "no-such-model.bin", "")
	if err == nil || !strings.Contains(err.Error(), "/var/lib/agorad/models/no-such-model.bin") {
		t.Errorf("error does not list the service's model dir: %v", err)
	}

	dev := t.TempDir()
	if err := os.Mkdir(filepath.Join(dev, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dev)
	if dirs := defaultModelDirs(); dirs[0] != filepath.Join(dev, "models") {
		t.Errorf("in a checkout the search starts at %q, want its models/", dirs[0])
	}
}

// TestResolveImportedName: a name outside the catalog finds the file under
// whisper.cpp's naming (make models imports base as ggml-base-q8_0.bin), and
// the error lists both names looked for.
func TestResolveImportedName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ggml-base-q8_0.bin")
	if err := os.WriteFile(path, make([]byte, 1024), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ResolveIn("whisper", "base-q8_0", dir)
	if err != nil || got != path {
		t.Errorf("ResolveIn(base-q8_0) = %q, %v; want %s", got, err, path)
	}
	_, err = ResolveIn("whisper", "small-q8_0", dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "ggml-small-q8_0.bin")) || !strings.Contains(err.Error(), filepath.Join(dir, "small-q8_0")) {
		t.Errorf("missing small-q8_0: %v, want both names listed", err)
	}
}
