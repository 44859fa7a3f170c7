package buffer

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestReplies(t *testing.T) {
	s := openT(t, "", Options{})
	exp := time.Now().Add(time.Hour).UTC()
	a, added, err := s.AddReply(Reply{ID: "r1", Text: "Ja.", Lang: "nl", ExpiresAt: exp})
	if err != nil || !added {
		t.Fatalf("AddReply r1: %v added=%v", err, added)
	}
	if a.State != ReplyQueued || a.Seq == 0 || a.ReceivedAt.IsZero() {
		t.Errorf("stored reply %+v", a)
	}
	b, _, err := s.AddReply(Reply{ID: "r2", Text: "Yes.", Lang: "en"})
	if err != nil || b.Seq <= a.Seq {
		t.Fatalf("AddReply r2: %v, seq %d after %d", err, b.Seq, a.Seq)
	}
	// A redelivery, also after a restart, is not stored again.
	s = reopen(t, s)
	again, added, err := s.AddReply(Reply{ID: "r1", Text: "different"})
	if err != nil || added || again.Text != "Ja." || again.Seq != a.Seq {
		t.Fatalf("redelivered r1: %+v added=%v err=%v", again, added, err)
	}
	// The outcome and its ack are stored together.
	n0, _ := s.OutboxCount()
	if _, err := s.UpdateReply("r1", ReplySpeaking, "", nil, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.OutboxCount(); n != n0 {
		t.Errorf("state change without ack queued %d entries", n-n0)
	}
	r, err := s.UpdateReply("r1", ReplySpoken, "", []byte(`{"command_id":"r1","command_type":"reply","ok":true,"outcome":"spoken"}`), true)
	if err != nil || r.State != ReplySpoken || r.Plays != 1 {
		t.Fatalf("UpdateReply: %+v %v", r, err)
	}
	es, _ := s.Pending(0)
	if len(es) != n0+1 || es[len(es)-1].Kind != KindAck || es[len(es)-1].Lane != LaneControl || !es[len(es)-1].Offline {
		t.Fatalf("pending after outcome: %+v", es)
	}
	if _, err := s.UpdateReply("nope", ReplySpoken, "", nil, false); !errors.Is(err, ErrNoReply) {
		t.Errorf("update unknown reply: %v", err)
	}
	if _, err := s.UpdateReply("r2", ReplySpoken, "", []byte(`{`), false); err == nil {
		t.Errorf("invalid ack accepted")
	}
	open, err := s.ListReplies(0, true)
	if err != nil || len(open) != 1 || open[0].ID != "r2" {
		t.Fatalf("open replies %+v %v", open, err)
	}
	all, _ := s.ListReplies(0, false)
	if len(all) != 2 || all[0].ID != "r1" || all[1].ID != "r2" {
		t.Fatalf("all replies %+v", all)
	}
	if got, _ := s.GetReply("r1"); !got.ExpiresAt.Equal(exp) || got.State != ReplySpoken {
		t.Errorf("GetReply %+v", got)
	}
}

func TestRepliesPruned(t *testing.T) {
	if testing.Short() {
		t.Skip("writes MaxReplies replies")
	}
	s := openT(t, "", Options{Sync: SyncNone})
	// One open reply at the start is never pruned.
	if _, _, err := s.AddReply(Reply{ID: "open", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	for i := range MaxReplies + 20 {
		id := fmt.Sprint("f", i)
		if _, _, err := s.AddReply(Reply{ID: id, Text: "x"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpdateReply(id, ReplySpoken, "", nil, false); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := s.ListReplies(0, false)
	if len(all) != MaxReplies || all[0].ID != "open" || all[len(all)-1].ID != fmt.Sprint("f", MaxReplies+19) {
		t.Fatalf("%d replies kept, first %s last %s", len(all), all[0].ID, all[len(all)-1].ID)
	}
	if _, err := s.GetReply("f0"); !errors.Is(err, ErrNoReply) {
		t.Errorf("oldest finished reply not pruned: %v", err)
	}
}
