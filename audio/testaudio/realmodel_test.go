package testaudio

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRealModelAbsentUnderCI: a missing real model skips a test on a
// developer's machine and fails it under CI. Runs itself as a child with
// an empty models directory, once without CI and once with it.
func TestRealModelAbsentUnderCI(t *testing.T) {
	if os.Getenv("AGORAD_ABSENT_CHILD") == "1" {
		RealModel(t, "tiny.en")
		return
	}
	for _, tt := range []struct {
		ci       string
		fails    bool
		contains string
	}{
		{"", false, "--- SKIP"},
		{"true", true, "CI is set and a real model is missing"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRealModelAbsentUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "AGORAD_ABSENT_CHILD=1", "AGORAD_MODELS="+t.TempDir(), "CI="+tt.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != tt.fails || !strings.Contains(string(out), tt.contains) {
			t.Errorf("CI=%q, no model: err %v, want failed=%v and %q in:\n%s", tt.ci, err, tt.fails, tt.contains, out)
		}
	}
}
