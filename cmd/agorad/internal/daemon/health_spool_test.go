package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/buffer/fsfault"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
	"github.com/agora/agorad/wake"
)

// On a real ext4 filled up: listen-mode notes the store refuses are held
// in memory (in order, up to storage.spool_bytes; past it refused), and
// written to the store in order, after the notes of before, once space is
// back, before the storage is OK again. No link: nothing is sent unstored.
func TestStorageHealthSpool(t *testing.T) {
	fs := fsfault.MountExt4(t, 128)
	cfg := testConfig(t, "tcp://127.0.0.1:1")
	cfg.StateDir = filepath.Join(fs.Dir, "state")
	cfg.Storage.SpoolBytes = 3 * 320 // three short notes (id, text and 256 bytes each)
	st, err := buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &core{cfg: cfg, log: slog.New(slog.DiscardHandler), store: st, met: metrics.New("test")}
	h, err := newStorageHealth(c, func() {})
	if err != nil {
		t.Fatal(err)
	}
	h.sounds = &recordingSounder{}
	rs, err := wake.New(wake.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(RouterOptions{Store: st, Rules: rs, DefaultMode: buffer.ModeListen, Keep: h.keep})
	if err != nil {
		t.Fatal(err)
	}
	say := func(text string) error {
		_, err := r.Handle(context.Background(), Heard{Text: text, Lang: "en", StartedAt: time.Now(), Source: "typed"})
		return err
	}
	if err := say("before the fault"); err != nil {
		t.Fatal(err)
	}
	filler := fs.Fill(t)
	var refused []string
	for _, s := range []string{"held one", "held two", "held three", "held four"} {
		if err := say(s); err != nil {
			refused = append(refused, s)
			if !strings.Contains(err.Error(), "disk full") {
				t.Errorf("refusal of %q: %v", s, err)
			}
		}
	}
	if strings.Join(refused, ",") != "held four" || h.held() != 3 {
		t.Fatalf("refused %q, %d held; want the fourth refused, 3 held", refused, h.held())
	}
	if p := h.problem(); !strings.Contains(p, "3 utterance(s) held in memory") {
		t.Errorf("problem %q", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.problem() != "" {
		if time.Now().After(deadline) {
			t.Fatalf("not recovered: %s", h.problem())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := listenTexts(t, st)
	if want := "before the fault|held one|held two|held three"; strings.Join(got, "|") != want {
		t.Errorf("listen buffer %q, want %q", got, want)
	}
	if h.held() != 0 {
		t.Errorf("%d still held", h.held())
	}
}
