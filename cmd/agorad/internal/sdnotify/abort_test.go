package sdnotify

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogAbortLeavesOneLine: SIGABRT (systemd's watchdog signal) makes
// the process log one structured line naming the stuck stage and die by
// with ExitWatchdogAbort, with no goroutine dump.
func TestWatchdogAbortLeavesOneLine(t *testing.T) {
	if os.Getenv("SDNOTIFY_ABORT_CHILD") == "1" {
		HandleWatchdogAbort(slog.New(slog.NewJSONHandler(os.Stderr, nil)))
		noteUnhealthy(errors.New("store: not answering"))
		os.Stdout.WriteString("armed\n")
		time.Sleep(time.Minute)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchdogAbortLeavesOneLine$")
	cmd.Env = append(os.Environ(), "SDNOTIFY_ABORT_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "armed\n" {
		t.Fatalf("child not armed: %q %v", buf, err)
	}
	cmd.Process.Signal(syscall.SIGABRT)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != ExitWatchdogAbort {
		t.Errorf("child ended with %v, want exit %d", err, ExitWatchdogAbort)
	}
	text := stderr.String()
	if !strings.Contains(text, `"msg":"watchdog abort (SIGABRT): exiting without a goroutine dump"`) ||
		!strings.Contains(text, `"stuck":"unhealthy: store: not answering"`) {
		t.Errorf("no abort line naming the stuck stage:\n%s", text)
	}
	if strings.Contains(text, "goroutine 1 ") || strings.Count(strings.TrimSpace(text), "\n") > 3 {
		t.Errorf("abort left more than the line (a traceback?):\n%s", text)
	}
}
