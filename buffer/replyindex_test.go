package buffer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Issue 27: open replies were never evicted and outside MaxBytes (4,384
// stored against the cap of 500). The store now refuses a reply while
// MaxReplies are open, and a redelivery of a stored one is still recognised.
func TestOpenRepliesCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("writes MaxReplies replies")
	}
	s := openT(t, "", Options{Sync: SyncNone})
	for i := range MaxReplies {
		if _, _, err := s.AddReply(Reply{ID: fmt.Sprint("o", i), Text: "x", State: ReplyHeld}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.AddReply(Reply{ID: "one-too-many", Text: "x"}); !errors.Is(err, ErrFull) {
		t.Fatalf("reply beyond %d open: %v, want ErrFull", MaxReplies, err)
	}
	if _, added, err := s.AddReply(Reply{ID: "o7", Text: "x"}); err != nil || added {
		t.Fatalf("redelivery at the cap: added=%v %v", added, err)
	}
	// Finishing one makes room; the finished one is then evicted first.
	if _, err := s.UpdateReply("o0", ReplyExpired, "dropped", nil, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddReply(Reply{ID: "next", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetReply("o0"); !errors.Is(err, ErrNoReply) {
		t.Errorf("finished reply not evicted at the cap: %v", err)
	}
	s = reopen(t, s) // counts come back from the keys
	if open, done := s.ReplyCounts(); open != MaxReplies || done != 0 {
		t.Errorf("after reopen: %d open, %d finished, want %d, 0", open, done, MaxReplies)
	}
	open, err := s.OpenReplies(3)
	if err != nil || len(open) != 3 || open[0].ID != "o1" || open[2].ID != "o3" {
		t.Fatalf("OpenReplies(3) = %+v %v", open, err)
	}
}

// Replies count in MaxBytes: finished ones are evicted, oldest first, to
// make room for a new one; when only open ones are left, it is refused.
func TestRepliesInMaxBytes(t *testing.T) {
	text := strings.Repeat("x", 8000)
	s := openT(t, "", Options{Sync: SyncNone, MaxBytes: 60_000})
	for i := range 5 {
		if _, _, err := s.AddReply(Reply{ID: fmt.Sprint("f", i), Text: text}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateReply(fmt.Sprint("f", i), ReplySpoken, "", nil, false); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if before := st.StoredBytes; before < 5*8000 {
		t.Fatalf("stored bytes %d: replies not counted", st.StoredBytes)
	}
	for i := range 4 {
		if _, _, err := s.AddReply(Reply{ID: fmt.Sprint("n", i), Text: text}); err != nil {
			t.Fatalf("n%d: %v", i, err)
		}
	}
	if st, _ := s.Stats(); st.StoredBytes > 60_000 {
		t.Errorf("stored %d bytes, cap 60000", st.StoredBytes)
	}
	if _, err := s.GetReply("f0"); !errors.Is(err, ErrNoReply) {
		t.Errorf("oldest finished reply kept past MaxBytes: %v", err)
	}
	if _, err := s.GetReply("f4"); err != nil {
		t.Errorf("newest finished reply evicted early: %v", err)
	}
	for i := 4; ; i++ {
		_, _, err := s.AddReply(Reply{ID: fmt.Sprint("n", i), Text: text})
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil || i > 10 {
			t.Fatalf("n%d: %v (never refused)", i, err)
		}
	}
	if open, done := s.ReplyCounts(); done != 0 || open < 6 {
		t.Errorf("%d open, %d finished when full", open, done)
	}
}

// A store written before the index (r/ and ri/ keys only) is indexed on
// first use: open and finished replies are told apart, counts add up.
func TestReplyIndexBuiltForOldStore(t *testing.T) {
	s := openT(t, "", Options{Sync: SyncNone})
	for i, st := range []ReplyState{ReplySpoken, ReplyHeld, ReplyExpired, ReplyQueued} {
		r := Reply{ID: fmt.Sprint("old", i), Seq: uint64(100 + i), Text: "x", State: st, ExpiresAt: time.Now().Add(time.Hour)}
		v, _ := json.Marshal(r)
		err := s.db.Update(func(txn *badger.Txn) error {
			if err := txn.Set(replyKey(r.Seq), v); err != nil {
				return err
			}
			return txn.Set(replyIndexKey(r.ID), replyKey(r.Seq))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s = reopen(t, s)
	open, err := s.OpenReplies(0)
	if err != nil || len(open) != 2 || open[0].ID != "old1" || open[1].ID != "old3" {
		t.Fatalf("OpenReplies = %+v %v", open, err)
	}
	if o, d := s.ReplyCounts(); o != 2 || d != 2 {
		t.Errorf("counts %d open %d finished, want 2 2", o, d)
	}
	// A replay of a finished reply moves it back to the open index.
	if _, err := s.UpdateReply("old0", ReplySpeaking, "", nil, false); err != nil {
		t.Fatal(err)
	}
	if o, d := s.ReplyCounts(); o != 3 || d != 1 {
		t.Errorf("after replay: %d open %d finished, want 3 1", o, d)
	}
	s = reopen(t, s)
	if o, d := s.ReplyCounts(); o != 3 || d != 1 {
		t.Errorf("after reopen: %d open %d finished, want 3 1", o, d)
	}
}

// Storing a reply does not read the others: adding replies next to 480
// stored ones of 8,000 characters costs about what it costs in an empty
// store (it used to decode every stored reply: tens of times more).
// Measured as a ratio in one run, so a loaded machine slows both sides.
func TestAddReplyCostIndependentOfStored(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 400 replies")
	}
	text := strings.Repeat("x", 8000)
	cost := func(s *Store, prefix string) time.Duration {
		start := time.Now()
		for i := range 20 {
			if _, _, err := s.AddReply(Reply{ID: fmt.Sprint(prefix, i), Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		return time.Since(start)
	}
	empty := openT(t, "", Options{Sync: SyncNone})
	full := openT(t, "", Options{Sync: SyncNone})
	for i := range 400 {
		if _, _, err := full.AddReply(Reply{ID: fmt.Sprint("s", i), Text: text, State: ReplyHeld}); err != nil {
			t.Fatal(err)
		}
	}
	var e, f time.Duration
	for round := range 3 { // interleaved, best of three
		if d := cost(empty, fmt.Sprint("e", round, "-")); e == 0 || d < e {
			e = d
		}
		if d := cost(full, fmt.Sprint("f", round, "-")); f == 0 || d < f {
			f = d
		}
	}
	t.Logf("20 replies: %v in an empty store, %v next to 400 open ones", e, f)
	if f > 4*e+20*time.Millisecond {
		t.Errorf("adding next to 400 replies took %v, %.1fx the empty store's %v", f, float64(f)/float64(e), e)
	}
}
