package buffer

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOutboxOrderAndDelete(t *testing.T) {
	s := openT(t, "", Options{})
	type step struct {
		lane Lane
		kind Kind
	}
	steps := []step{{LaneData, KindEvent}, {LaneControl, KindAck}, {LaneData, KindEvent}, {LaneControl, KindAck}, {LaneData, KindEvent}}
	var ents []Entry
	for i, st := range steps {
		e, err := s.Enqueue(st.lane, st.kind, i%2 == 0, []byte(`{"n":`+string(rune('0'+i))+`}`))
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, e)
	}
	u, err := s.EnqueueUtterance(rec("controleer de klep"))
	if err != nil {
		t.Fatal(err)
	}
	var ur Record
	if err := json.Unmarshal(u.Body, &ur); err != nil || ur.Seq != u.Seq || ur.ID != u.ID || ur.Text != "controleer de klep" {
		t.Fatalf("utterance body %s (%v) does not carry the record with the entry's id/seq", u.Body, err)
	}
	ents = append(ents, u)
	wantOrder := []uint64{ents[1].Seq, ents[3].Seq, ents[0].Seq, ents[2].Seq, ents[4].Seq, u.Seq}
	check := func(s *Store, want []uint64) {
		t.Helper()
		p, err := s.Pending(0)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []uint64
		for _, e := range p {
			seqs = append(seqs, e.Seq)
		}
		if !equalU64(seqs, want) {
			t.Fatalf("Pending order %v, want %v", seqs, want)
		}
		if n, _ := s.OutboxCount(); n != len(want) {
			t.Fatalf("OutboxCount = %d, want %d", n, len(want))
		}
	}
	check(s, wantOrder)
	p, _ := s.Pending(3)
	if len(p) != 3 || p[2].Seq != ents[0].Seq || p[0].Lane != LaneControl || p[2].Lane != LaneData {
		t.Fatalf("Pending(3) = %+v", p)
	}
	if string(p[2].Body) != `{"n":0}` || !p[2].Offline || p[2].Kind != KindEvent {
		t.Fatalf("entry round trip: %+v body %s", p[2], p[2].Body)
	}
	s = reopen(t, s)
	check(s, wantOrder)
	// Delete is idempotent and ignores unknown ids.
	if err := s.Delete(ents[1].ID, ents[0].ID, "no-such-id"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ents[1].ID); err != nil {
		t.Fatal(err)
	}
	check(s, []uint64{ents[3].Seq, ents[2].Seq, ents[4].Seq, u.Seq})
	s = reopen(t, s)
	check(s, []uint64{ents[3].Seq, ents[2].Seq, ents[4].Seq, u.Seq})
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEnqueueValidation(t *testing.T) {
	s := openT(t, "", Options{})
	tests := []struct {
		name string
		lane Lane
		kind Kind
		body string
		want string
	}{
		{"bad lane", 7, KindAck, `{}`, "lane 7"},
		{"empty kind", LaneData, "", `{}`, "kind"},
		{"bad json", LaneControl, KindAck, `{"a":`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Enqueue(tt.lane, tt.kind, false, []byte(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Enqueue error %v, want %q", err, tt.want)
			}
		})
	}
	if n, _ := s.OutboxCount(); n != 0 {
		t.Fatalf("refused entries were stored: %d", n)
	}
	// Nothing refused consumed a sequence number that reached storage.
	e, err := s.Enqueue(LaneData, KindEvent, false, []byte(`{}`))
	if err != nil || e.Seq == 0 {
		t.Fatal(e, err)
	}
}

func TestNotifyCoalesces(t *testing.T) {
	s := openT(t, "", Options{Sync: SyncNone})
	for range 3 {
		if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-s.Notify():
	default:
		t.Fatal("no notification after enqueue")
	}
	select {
	case <-s.Notify():
		t.Fatal("notifications not coalesced")
	default:
	}
	if _, _, err := s.FlushListen(false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Notify():
		t.Fatal("notified for an empty flush")
	default:
	}
	if _, err := s.AppendListen(rec("x")); err != nil {
		t.Fatal(err)
	}
	if _, n, err := s.FlushListen(false); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	select {
	case <-s.Notify():
	default:
		t.Fatal("no notification after flush")
	}
}
