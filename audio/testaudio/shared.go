// Package testaudio holds helpers for tests that need real audio: where the
// project's shared test material is, an ALSA file-plugin microphone that
// PortAudio opens like real hardware, and speech synthesis with espeak-ng.
package testaudio

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// SharedDir returns the shared/ folder that sits beside the repository
// (CI clones the repository with shared/ next to it). AGORAD_SHARED
// overrides it. Tests that need it fail, not skip, when it is missing: the
// material is part of the test set-up, not optional.
func SharedDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("AGORAD_SHARED")
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "models")); err != nil {
		tb.Fatalf("shared test material not found at %s (set AGORAD_SHARED): %v", dir, err)
	}
	return dir
}

// RepoRoot is the repository's top folder, found from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Model returns the path of a file in shared/models (e.g. "for-tests-ggml-tiny.en.bin").
func Model(tb testing.TB, name string) string {
	tb.Helper()
	return filepath.Join(SharedDir(tb), "models", name)
}

// Clip returns the path of a file in shared/audio.
func Clip(tb testing.TB, name string) string {
	tb.Helper()
	return filepath.Join(SharedDir(tb), "audio", name)
}
