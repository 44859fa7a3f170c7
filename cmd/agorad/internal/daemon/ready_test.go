package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/cmd/agorad/internal/sdnotify/sdnotifytest"
)

// waitFor returns the first datagram containing want, or fails after d;
// every datagram seen before it is returned too.
func waitFor(msgs <-chan string, want string, d time.Duration) (seen []string, ok bool) {
	timeout := time.After(d)
	for {
		select {
		case m := <-msgs:
			seen = append(seen, m)
			if strings.Contains(m, want) {
				return seen, true
			}
		case <-timeout:
			return seen, false
		}
	}
}

// TestReadyMeansMicrophoneOpen: READY=1 is sent only once the audio source
// is open; a source that cannot be opened fails the start without READY=1
// (systemctl start then reports the failure); input "none" is ready at once
// and says in its status that it runs without a microphone.
func TestReadyMeansMicrophoneOpen(t *testing.T) {
	t.Run("opens late", func(t *testing.T) {
		msgs := sdnotifytest.Socket(t)
		cfg := testConfig(t, "tcp://127.0.0.1:1")
		cfg.Input.Source = "default"
		release := make(chan struct{})
		o := testOptions(cfg)
		o.Transcriber = &recordingTranscriber{}
		o.OpenSource = func(ctx context.Context) (audio.Source, error) {
			select {
			case <-release:
				return newScriptedSource(), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		startDaemon(t, o)
		if seen, ok := waitFor(msgs, "READY=1", 500*time.Millisecond); ok {
			t.Fatalf("READY=1 before the microphone opened: %q", seen)
		}
		close(release)
		if seen, ok := waitFor(msgs, "READY=1", 10*time.Second); !ok {
			t.Fatalf("no READY=1 after the microphone opened: %q", seen)
		}
	})
	t.Run("cannot open", func(t *testing.T) {
		msgs := sdnotifytest.Socket(t)
		cfg := testConfig(t, "tcp://127.0.0.1:1")
		cfg.Input.Source = "default"
		o := testOptions(cfg)
		o.Transcriber = &recordingTranscriber{}
		o.OpenSource = func(context.Context) (audio.Source, error) {
			return nil, errors.New("microphone: no sound card")
		}
		_, run := startDaemon(t, o)
		select {
		case <-run.Done():
		case <-time.After(15 * time.Second):
			t.Fatal("daemon still running without its microphone")
		}
		if err := run.Err(); err == nil || !strings.Contains(err.Error(), "no sound card") {
			t.Fatalf("run error %v, want the microphone's", err)
		}
		if seen, ok := waitFor(msgs, "READY=1", 200*time.Millisecond); ok {
			t.Fatalf("READY=1 sent although the microphone never opened: %q", seen)
		}
	})
	t.Run("input none", func(t *testing.T) {
		msgs := sdnotifytest.Socket(t)
		cfg := testConfig(t, "tcp://127.0.0.1:1")
		cfg.Input.Source = "none"
		startDaemon(t, testOptions(cfg))
		seen, ok := waitFor(msgs, "READY=1", 10*time.Second)
		if !ok || !strings.Contains(seen[len(seen)-1], "no microphone") {
			t.Fatalf("want READY=1 with a status saying there is no microphone, got %q", seen)
		}
	})
}

// A microphone that does not open on the real PortAudio (no such device, as
// on a machine without a sound card): the daemon stops with an error that
// says how to run without one.
func TestMicrophoneFailureSuggestsInputNoneOrWAV(t *testing.T) {
	cfg := testConfig(t, "tcp://127.0.0.1:1")
	cfg.Input.Source = "agora-no-such-sound-card"
	o := testOptions(cfg)
	o.Transcriber = &recordingTranscriber{}
	_, run := startDaemon(t, o)
	select {
	case <-run.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("daemon still running without its microphone")
	}
	err := run.Err()
	if err == nil {
		t.Fatal("daemon ran without its microphone")
	}
	for _, want := range []string{"agora-no-such-sound-card", "--input none", "INPUT=none", "INPUT=FILE.wav"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("run error %q lacks %q", err, want)
		}
	}
}
