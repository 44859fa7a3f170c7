package buffer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAppendListen(t *testing.T) {
	s := openT(t, "", Options{})
	tests := []struct {
		name string
		in   Record
	}{
		{"assigns id", rec("eerste")},
		{"keeps given id", Record{ID: "0190c4a2-0000-7000-8000-000000000001", Text: "tweede"}},
		{"offline", Record{Text: "derde", Offline: true, Source: "typed"}},
		{"unicode", rec("scheur in de lasnaad — 3 mm, ∅ 12")},
	}
	var got []Record
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			r, err := s.AppendListen(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if tt.in.ID != "" && r.ID != tt.in.ID {
				t.Errorf("ID = %q, want the given %q", r.ID, tt.in.ID)
			}
			if r.ID == "" || r.Seq == 0 || r.CreatedAt.Before(before.Add(-time.Millisecond)) {
				t.Errorf("not assigned: %+v", r)
			}
			if len(got) > 0 && r.Seq <= got[len(got)-1].Seq {
				t.Errorf("seq %d not after %d", r.Seq, got[len(got)-1].Seq)
			}
			if r.Text != tt.in.Text || r.Offline != tt.in.Offline {
				t.Errorf("fields changed: %+v", r)
			}
			got = append(got, r)
		})
	}
	check := func(s *Store) {
		t.Helper()
		if n, err := s.ListenCount(); err != nil || n != len(got) {
			t.Fatalf("ListenCount = %d, %v; want %d", n, err, len(got))
		}
		list, err := s.ListListen(0)
		if err != nil || len(list) != len(got) {
			t.Fatalf("ListListen = %d, %v", len(list), err)
		}
		for i := range list {
			if list[i].ID != got[i].ID || list[i].Seq != got[i].Seq || list[i].Text != got[i].Text || !list[i].CreatedAt.Equal(got[i].CreatedAt) {
				t.Errorf("item %d = %+v, want %+v", i, list[i], got[i])
			}
		}
		if two, _ := s.ListListen(2); len(two) != 2 || two[1].Seq != got[1].Seq {
			t.Errorf("ListListen(2) = %+v", two)
		}
	}
	check(s)
	s = reopen(t, s)
	check(s)
	r, err := s.AppendListen(rec("na herstart"))
	if err != nil || r.Seq <= got[len(got)-1].Seq {
		t.Fatalf("append after reopen: seq %d, %v; last was %d", r.Seq, err, got[len(got)-1].Seq)
	}
	n, err := s.ClearListen()
	if err != nil || n != len(got)+1 {
		t.Fatalf("ClearListen = %d, %v", n, err)
	}
	if c, _ := s.ListenCount(); c != 0 {
		t.Fatalf("ListenCount after clear = %d", c)
	}
	if raw := rawListenKeys(t, s); raw != 0 {
		t.Fatalf("%d listen keys left after clear", raw)
	}
	s = reopen(t, s)
	if l, _ := s.ListListen(0); len(l) != 0 {
		t.Fatalf("cleared records back after reopen: %d", len(l))
	}
}

func TestFlushListen(t *testing.T) {
	s := openT(t, "", Options{})
	if _, n, err := s.FlushListen(false); n != 0 || err != nil {
		t.Fatalf("flush of empty buffer = %d, %v", n, err)
	}
	var want []Record
	for _, txt := range []string{"een", "twee", "drie"} {
		r, err := s.AppendListen(rec(txt))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	e, n, err := s.FlushListen(true)
	if err != nil || n != len(want) {
		t.Fatalf("FlushListen = %d, %v; want %d records moved", n, err, len(want))
	}
	if e.Kind != KindBatch || e.Lane != LaneData || !e.Offline || e.Seq <= want[2].Seq {
		t.Fatalf("batch entry %+v", e)
	}
	// Spoken after the wake phrase: must come after the batch.
	cmd, err := s.EnqueueUtterance(rec("agora wat is de norm"))
	if err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s)
	p, err := s.Pending(0)
	if err != nil || len(p) != 2 || p[0].ID != e.ID || p[1].ID != cmd.ID {
		t.Fatalf("Pending = %+v, %v; want batch then command", p, err)
	}
	b := decodeBatch(t, p[0])
	if b.Count != 3 {
		t.Fatalf("batch count %d", b.Count)
	}
	for i := range want {
		if b.Items[i].ID != want[i].ID || b.Items[i].Seq != want[i].Seq || b.Items[i].Text != want[i].Text {
			t.Errorf("item %d = %+v, want %+v", i, b.Items[i], want[i])
		}
	}
	if n, _ := s.ListenCount(); n != 0 {
		t.Fatalf("listen buffer not empty after flush: %d", n)
	}
	if raw := rawListenKeys(t, s); raw != 0 {
		t.Fatalf("%d moved listen keys left", raw)
	}
}

// TestFlushListenCrash stops FlushListen between the committed batch and the
// deletion of the moved keys, as a crash there would, and checks that the
// move is seen as complete before and after reopening, with 20,000 records
// (far beyond one Badger transaction).
func TestFlushListenCrash(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		crash bool
	}{
		{"small crash", 5, true},
		{"20000 records", 20000, false},
		{"20000 records crash", 20000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.n > 1000 && testing.Short() {
				t.Skip("slow: 20,000 records")
			}
			s := openT(t, "", Options{Sync: SyncNone})
			var last Record
			for i := range tt.n {
				r, err := s.AppendListen(rec("meting " + strings.Repeat("x", i%40)))
				if err != nil {
					t.Fatal(err)
				}
				last = r
			}
			if tt.crash {
				s.testHookAfterFlushMarker = func() error { return errors.New("simulated crash") }
			}
			e, n, err := s.FlushListen(false)
			if n == 0 || (err != nil) != tt.crash {
				t.Fatalf("FlushListen = %d, %v", n, err)
			}
			if n, _ := s.ListenCount(); n != 0 {
				t.Fatalf("ListenCount after flush = %d", n)
			}
			if l, _ := s.ListListen(0); len(l) != 0 {
				t.Fatalf("ListListen shows %d moved records", len(l))
			}
			if tt.crash && rawListenKeys(t, s) != tt.n {
				t.Fatalf("the simulated crash should leave the %d keys", tt.n)
			}
			s.testHookAfterFlushMarker = nil
			s = reopen(t, s)
			if raw := rawListenKeys(t, s); raw != 0 {
				t.Fatalf("Open did not finish the move: %d listen keys", raw)
			}
			p, err := s.Pending(0)
			if err != nil || len(p) != 1 || p[0].ID != e.ID {
				t.Fatalf("Pending = %d entries, %v", len(p), err)
			}
			b := decodeBatch(t, p[0])
			if b.Count != tt.n || b.Items[tt.n-1].ID != last.ID {
				t.Fatalf("batch has %d items, want %d ending with %s", b.Count, tt.n, last.ID)
			}
			for i := 1; i < len(b.Items); i++ {
				if b.Items[i].Seq <= b.Items[i-1].Seq {
					t.Fatalf("batch items out of order at %d", i)
				}
			}
			r, err := s.AppendListen(rec("daarna"))
			if err != nil || r.Seq <= e.Seq {
				t.Fatalf("append after flush: seq %d (batch %d), %v", r.Seq, e.Seq, err)
			}
			if l, _ := s.ListListen(0); len(l) != 1 || l[0].ID != r.ID {
				t.Fatalf("listen buffer after flush+append = %+v", l)
			}
		})
	}
}
