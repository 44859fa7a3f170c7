package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/wake"
)

// failingEnqueue is the real store whose EnqueueUtterance fails as on a
// file system gone read-only (a unit-test double: the real fault is in
// cmd/agorad TestRunStorageFaults).
type failingEnqueue struct {
	*buffer.Store
	err error
}

func (f failingEnqueue) EnqueueUtterance(rec buffer.Record) (buffer.Entry, error) {
	return buffer.Entry{}, fmt.Errorf("enqueue utterance: %w", f.err)
}

func (f failingEnqueue) ReleaseAudio(id string) error {
	return fmt.Errorf("release audio %s: %w", id, f.err)
}

// In feedback mode an utterance the store refuses is offered to Keep
// with an id chosen before the store saw it (the id a failed commit that
// survives would carry too); sent, it counts as sent with no error earcon;
// refused by Keep, the router refuses it with the error earcon.
func TestRouterUnstored(t *testing.T) {
	for _, tc := range []struct {
		name       string
		send       bool // what Unstored answers
		wantErr    bool
		wantSounds string
	}{
		{"sent unstored", true, false, ""},
		{"cannot be sent: refused audibly", false, true, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, filepath.Join(t.TempDir(), "store"))
			defer st.Close()
			if err := st.SetMode(buffer.ModeFeedback); err != nil {
				t.Fatal(err)
			}
			rules, err := wake.New(wake.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			var offered []buffer.Record
			snd := &recordingSounder{}
			r, err := NewRouter(RouterOptions{Store: failingEnqueue{st, syscall.EROFS}, Rules: rules, Sounds: snd,
				Online: func() bool { return true }, DefaultMode: buffer.ModeFeedback,
				Keep: func(rec buffer.Record, mode buffer.Mode, storeErr error) (string, string, bool) {
					if mode != buffer.ModeFeedback {
						t.Errorf("mode %s", mode)
					}
					if !strings.Contains(storeErr.Error(), "read-only file system") {
						t.Errorf("store error %v", storeErr)
					}
					offered = append(offered, rec)
					return rec.ID, KeptUnstored, tc.send
				}})
			if err != nil {
				t.Fatal(err)
			}
			// Audio journaled before the failure: the failed store cannot
			// release it, which must not fail what was kept.
			audioID, err := st.JournalAudio(make([]float32, 1600), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			out, err := r.Handle(context.Background(), Heard{Text: "The beam at grid C is deflected.", Lang: "en", StartedAt: time.Now(),
				Source: "mic", AudioID: audioID})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Handle: %v, want error %v", err, tc.wantErr)
			}
			if len(offered) != 1 || offered[0].ID == "" || offered[0].Text != "The beam at grid C is deflected." {
				t.Fatalf("offered %+v", offered)
			}
			if tc.send && (out.Sent != 1 || out.Kept != 1 || out.KeptAs != KeptUnstored || out.ID != offered[0].ID) {
				t.Errorf("outcome %+v, want sent 1 under id %s", out, offered[0].ID)
			}
			if got := strings.Join(snd.take(), ","); got != tc.wantSounds {
				t.Errorf("sounds %q, want %q", got, tc.wantSounds)
			}
		})
	}
}

// failable is the real store whose writes fail as on a file system gone
// read-only while fail is set (a unit-test double).
type failable struct {
	*buffer.Store
	fail *bool
}

func (f failable) err(what string) error { return fmt.Errorf("%s: %w", what, syscall.EROFS) }

func (f failable) SetMode(m buffer.Mode) error {
	if *f.fail {
		return f.err("set mode")
	}
	return f.Store.SetMode(m)
}

func (f failable) FlushListen(offline bool) (buffer.Entry, int, error) {
	if *f.fail {
		return buffer.Entry{}, 0, f.err("flush listen")
	}
	return f.Store.FlushListen(offline)
}

func (f failable) EnqueueUtterance(rec buffer.Record) (buffer.Entry, error) {
	if *f.fail {
		return buffer.Entry{}, f.err("enqueue utterance")
	}
	return f.Store.EnqueueUtterance(rec)
}

// The wake still works with a failed store: the mode changes in memory
// (with its earcon), the question is offered to Keep in feedback mode, and
// the flush of the listen buffer and the mode are persisted by Settle once
// the store writes again, the notes of before in one batch.
func TestRouterWakeWithFailedStore(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "store"))
	defer st.Close()
	fail := false
	rules, err := wake.New(wake.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	snd := &recordingSounder{}
	r, err := NewRouter(RouterOptions{Store: failable{st, &fail}, Rules: rules, Sounds: snd, DefaultMode: buffer.ModeListen,
		Online: func() bool { return true },
		Keep: func(rec buffer.Record, mode buffer.Mode, _ error) (string, string, bool) {
			kept = append(kept, string(mode)+":"+rec.Text)
			return rec.ID, KeptUnstored, true
		},
		StoreFailed: func(err error) bool { return errors.Is(err, syscall.EROFS) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	say := func(text string) (Outcome, error) {
		return r.Handle(ctx, Heard{Text: text, Lang: "nl", StartedAt: time.Now(), Source: "typed"})
	}
	if _, err := say("Scheur in de balk bij as drie."); err != nil {
		t.Fatal(err)
	}
	snd.take()
	fail = true
	out, err := say("AGORA, is deze scheur constructief?")
	if err != nil {
		t.Fatalf("wake with a failed store: %v", err)
	}
	if r.Mode() != buffer.ModeFeedback || out.ModeAfter != buffer.ModeFeedback {
		t.Errorf("mode %s, want feedback", r.Mode())
	}
	if got := strings.Join(snd.take(), ","); got != "feedback_on" {
		t.Errorf("sounds %q, want feedback_on", got)
	}
	if strings.Join(kept, "|") != "feedback:is deze scheur constructief?" {
		t.Errorf("kept %q", kept)
	}
	if m, _ := st.Mode(); m != buffer.ModeListen {
		t.Errorf("persisted mode %s while the store failed", m)
	}
	fail = false
	if err := r.Settle(); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if m, _ := st.Mode(); m != buffer.ModeFeedback {
		t.Errorf("persisted mode %s after Settle, want feedback", m)
	}
	if got := strings.Join(pendingTexts(t, st), "|"); got != "batch[Scheur in de balk bij as drie.]" {
		t.Errorf("outbox %q after Settle", got)
	}
	if n, _ := st.ListenCount(); n != 0 {
		t.Errorf("listen buffer %d after Settle", n)
	}
	if err := r.Settle(); err != nil || len(pendingTexts(t, st)) != 1 {
		t.Errorf("second Settle: %v, outbox %q", err, pendingTexts(t, st))
	}
}
