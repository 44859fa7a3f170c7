package daemon

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

const (
	envReplyK9Dir    = "AGORAD_REPLY_K9_DIR"
	envReplyK9Broker = "AGORAD_REPLY_K9_BROKER"
	envReplyK9Kill   = "AGORAD_REPLY_K9_KILL"
)

func k9Config(dir, broker string) *configs.Config {
	cfg := configs.Default()
	cfg.DeviceID = "dev-k9"
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Control.Socket = filepath.Join(dir, "ctl.sock")
	cfg.Metrics.Listen = ""
	cfg.MQTT.Broker = broker
	cfg.Sounds.Enabled = false
	cfg.Input.Source = "none"
	cfg.Mode = "feedback"
	return cfg
}

// TestReplyKill9Child is the daemon process of TestReplyKill9 (a no-op
// otherwise): with envReplyK9Kill set it SIGKILLs itself right after the
// first reply is stored, before the broker is acknowledged.
func TestReplyKill9Child(t *testing.T) {
	dir := os.Getenv(envReplyK9Dir)
	if dir == "" {
		t.Skip("child of TestReplyKill9 only")
	}
	if os.Getenv(envReplyK9Kill) != "" {
		testHookReplyStored = func(string) { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	}
	logf, err := os.OpenFile(filepath.Join(dir, "child.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = Run(ctx, Options{Config: k9Config(dir, os.Getenv(envReplyK9Broker)), Version: "k9", DrainTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(logf, nil))})
	if err != nil {
		t.Fatalf("daemon: %v", err)
	}
}

// TestReplyKill9: the daemon is killed (SIGKILL) after a reply is stored and
// before it is acknowledged to the broker or spoken. The broker redelivers
// it to the restarted daemon, which recognises it by id: spoken exactly
// once, acked spoken once.
func TestReplyKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto, espeak-ng, PortAudio, child processes")
	}
	mic := testaudio.NewVirtualMic(t, nil)
	broker := brokertest.Start(t)
	dir := t.TempDir()
	cfg := k9Config(dir, broker.URL())
	be := newBackend(t, broker, cfg.DeviceID)
	child := func(kill bool) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReplyKill9Child$", "-test.count=1")
		cmd.Env = append(os.Environ(), envReplyK9Dir+"="+dir, envReplyK9Broker+"="+broker.URL())
		if kill {
			cmd.Env = append(cmd.Env, envReplyK9Kill+"=1")
		}
		out, err := os.OpenFile(filepath.Join(dir, "child.out"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { out.Close() })
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	waitLog := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if b, _ := os.ReadFile(filepath.Join(dir, "child.log")); strings.Contains(string(b), what) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "child.log"))
		t.Fatalf("child log never said %q:\n%s", what, b)
	}

	first := child(true)
	waitLog("connected to MQTT broker")
	const text = "The ladder on the east side is not secured."
	be.reply(protocol.ReplyCommand{ID: "r-k9", Text: text, Lang: "en"})
	err := first.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first daemon: %v, want killed by SIGKILL", err)
	}
	st, err := buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.GetReply("r-k9")
	st.Close()
	if err != nil || r.State != buffer.ReplyQueued {
		t.Fatalf("after the kill the reply is %+v (%v), want stored and queued", r, err)
	}
	if n := len(be.outcomes()); n != 0 {
		t.Fatalf("%d acks before the restart", n)
	}

	second := child(false)
	be.waitOutcome("r-k9", protocol.OutcomeSpoken, 60*time.Second)
	waitLog("reply redelivered")
	time.Sleep(time.Second) // a second playback would start by now
	_ = second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		t.Fatalf("second daemon: %v", err)
	}
	if got := be.outcomes(); len(got) != 1 {
		t.Errorf("acks %+v, want exactly one (spoken)", got)
	}
	played := mic.Played(t)
	ref := reference(t, cfg, "en", text)
	lag, c := testaudio.FindSpeech(ref, played)
	if c < 0.9 {
		t.Fatalf("reply not spoken (correlation %.3f)", c)
	}
	if rest := played[min(len(played), lag+len(ref)):]; len(rest) >= len(ref) {
		if _, c2 := testaudio.FindSpeech(ref, rest); c2 > 0.6 {
			t.Errorf("reply spoken twice (second correlation %.3f)", c2)
		}
	}
	t.Logf("spoken once at %.2f s (correlation %.3f); %.2f s played in all", float64(lag)/16000, c, float64(len(played))/16000)
}
