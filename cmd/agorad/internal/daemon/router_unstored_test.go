package daemon

import (
	"context"
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
				Keep: func(rec buffer.Record, mode buffer.Mode, storeErr error) (string, bool) {
					if mode != buffer.ModeFeedback {
						t.Errorf("mode %s", mode)
					}
					if !strings.Contains(storeErr.Error(), "read-only file system") {
						t.Errorf("store error %v", storeErr)
					}
					offered = append(offered, rec)
					return rec.ID, tc.send
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
			if tc.send && (out.Sent != 1 || out.Kept != 1 || out.ID != offered[0].ID) {
				t.Errorf("outcome %+v, want sent 1 under id %s", out, offered[0].ID)
			}
			if got := strings.Join(snd.take(), ","); got != tc.wantSounds {
				t.Errorf("sounds %q, want %q", got, tc.wantSounds)
			}
		})
	}
}
