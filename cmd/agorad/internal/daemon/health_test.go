package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
)

// The telling of one storage failure episode: one error earcon however
// many refusals, a status publish per change, agoractl's problem line
// naming the failure and the fix, the retained status's storage field,
// and all of it cleared when the store writes again.
func TestStorageHealthTells(t *testing.T) {
	cfg := testConfig(t, "tcp://127.0.0.1:1")
	st, err := buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &core{cfg: cfg, log: slog.New(slog.DiscardHandler), store: st, met: metrics.New("test")}
	var published atomic.Int32
	h, err := newStorageHealth(c, func() { published.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingSounder{}
	h.sounds = rec
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (problem %q, summary %q)", what, h.problem(), h.summary())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if h.problem() != "" || h.protocol() != nil || h.summary() != "ok" {
		t.Fatalf("healthy: problem %q, protocol %+v, summary %q", h.problem(), h.protocol(), h.summary())
	}
	// Three refusals of one episode, as the router's writes return them.
	for i := range 3 {
		h.report(fmt.Errorf("store note in listen buffer: append %d: %w", i, syscall.EROFS))
		h.report(fmt.Errorf("append: %w", buffer.ErrFull)) // a cap: not a storage failure
	}
	waitFor("the failure told", func() bool { return published.Load() >= 1 })
	time.Sleep(100 * time.Millisecond)
	if got := rec.take(); strings.Join(got, ",") != "error" {
		t.Errorf("earcons %q, want one error", got)
	}
	p := h.problem()
	for _, want := range []string{"storage: state directory " + cfg.StateDir + " is read-only (EROFS since", "fix:", "e2fsck"} {
		if !strings.Contains(p, want) {
			t.Errorf("problem %q lacks %q", p, want)
		}
	}
	if ps := h.protocol(); ps == nil || ps.State != "failed" || ps.Kind != "read_only" || ps.Episode != 1 || !strings.Contains(ps.Error, "read-only file system") {
		t.Errorf("status storage field %+v", ps)
	}
	if !strings.HasPrefix(h.summary(), "failed (read_only since ") {
		t.Errorf("summary %q", h.summary())
	}
	// The directory itself is fine (it was never read-only): the next
	// probe passes, the store writes, and the episode ends, silently.
	waitFor("recovery", func() bool { return h.problem() == "" })
	if h.protocol() != nil || h.summary() != "ok" {
		t.Errorf("after recovery: protocol %+v, summary %q", h.protocol(), h.summary())
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("earcons on recovery %q, want none", got)
	}
	// A second episode is told again.
	h.report(fmt.Errorf("sync: %w", syscall.EIO))
	waitFor("second episode", func() bool { return h.problem() != "" })
	time.Sleep(100 * time.Millisecond)
	if got := rec.take(); strings.Join(got, ",") != "error" {
		t.Errorf("earcons of episode 2 %q, want one error", got)
	}
}
