package buffer

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agora/agorad/buffer/fsfault"
)

// logLines collects what a store logs, as JSON lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count returns how many lines have msg starting with prefix, and the
// last one's "failures" field.
func (l *logLines) count(prefix string) (n int, failures float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
			n++
			failures, _ = m["failures"].(float64)
		}
	}
	return n, failures
}

// TestWriteFailuresLoggedOncePerEpisode (issue 23): a write refused over
// and over (an MQTT reply retried every 250 ms on a full disk) is logged
// once per episode, and the write that succeeds again logs the count; the
// next failure starts a new episode. On the real store: its cap, and a
// full tmpfs.
func TestWriteFailuresLoggedOncePerEpisode(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) (dir string, opts Options, fill, free func(s *Store))
		want  error
	}{
		{"storage cap", func(t *testing.T) (string, Options, func(*Store), func(*Store)) {
			return t.TempDir(), Options{MaxItems: 3},
				func(s *Store) {
					for {
						if _, err := s.AppendListen(rec("vol")); errors.Is(err, ErrFull) {
							return
						} else if err != nil {
							t.Fatal(err)
						}
					}
				},
				func(s *Store) {
					if _, err := s.ClearListen(); err != nil {
						t.Fatal(err)
					}
				}
		}, ErrFull},
		{"disk full", func(t *testing.T) (string, Options, func(*Store), func(*Store)) {
			if testing.Short() {
				t.Skip("mounts a tmpfs")
			}
			mnt := fsfault.MountTmpfs(t, "16m")
			ballast := filepath.Join(mnt, "ballast")
			return filepath.Join(mnt, "store"), smallDevice(),
				func(*Store) { fsfault.Fill(t, ballast) },
				func(*Store) {
					if err := os.Remove(ballast); err != nil {
						t.Fatal(err)
					}
				}
		}, ErrDiskFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, opts, fill, free := tt.setup(t)
			var lines logLines
			opts.Logger = slog.New(slog.NewJSONHandler(&lines, nil))
			s := openT(t, dir, opts)
			fill(s) // the cap's fill: its last append is refused, the episode's first
			const tries = 40
			for range tries {
				if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{"command_id":"c1","ok":true}`)); !errors.Is(err, tt.want) {
					t.Fatalf("enqueue: %v, want %v", err, tt.want)
				}
			}
			if n, _ := lines.count("store write failed"); n != 1 {
				t.Fatalf("%d failure lines for %d refused writes, want 1:\n%s", n, tries, lines.buf.String())
			}
			free(s)
			if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{"command_id":"c1","ok":true}`)); err != nil {
				t.Fatalf("enqueue after room came back: %v", err)
			}
			if n, failures := lines.count("store writes succeed again"); n != 1 || failures < tries || failures > tries+1 {
				t.Fatalf("%d recovery lines (failures %v), want 1 counting the %d refusals", n, failures, tries)
			}
			fill(s)
			if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{}`)); !errors.Is(err, tt.want) {
				t.Fatalf("enqueue: %v, want %v", err, tt.want)
			}
			if n, _ := lines.count("store write failed"); n != 2 { // the second fill's refusal opened it
				t.Fatalf("a new episode was not logged: %d failure lines", n)
			}
		})
	}
}
