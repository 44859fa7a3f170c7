package testaudio

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// JFKPath is samples/jfk.wav of the whisper.cpp Go binding (16 kHz mono,
// 11 s). go.mod replaces the binding with the pinned source tree
// (scripts/whisper.sh), so the file is found where go resolves the module,
// never by guessing the module cache.
func JFKPath(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ggerganov/whisper.cpp/bindings/go")
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("locate the whisper.cpp Go binding (make whisper unpacks it): %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "samples", "jfk.wav")
}
