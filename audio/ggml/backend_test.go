package ggml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadBackendsFindsCPU(t *testing.T) {
	for i := 0; i < 2; i++ { // a second call must be a cheap no-op with the same answer
		if err := LoadBackends(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if devices < 1 {
		t.Fatalf("devices = %d, want at least the CPU", devices)
	}
	// The modules come from libggml's own directory, not the test binary's
	// or the working directory (ggml's default search).
	dir := BackendDir()
	mods, _ := filepath.Glob(filepath.Join(dir, "libggml-cpu-*.so"))
	if len(mods) < 2 {
		t.Fatalf("backend dir %q has %d CPU variant modules, want several", dir, len(mods))
	}
	if _, err := os.Stat(filepath.Join(dir, "libggml-base.so.0")); err != nil {
		t.Fatalf("backend dir %q is not libggml's directory: %v", dir, err)
	}
	// Every x86-64 and arm64 variant has SIMD; a chosen module reports it.
	f := CPUFeatures()
	if !strings.Contains(f, "SSE3") && !strings.Contains(f, "NEON") {
		t.Fatalf("CPU features %q: no variant with SIMD was chosen", f)
	}
	t.Logf("modules from %s; chosen CPU variant has: %s", dir, f)
}
