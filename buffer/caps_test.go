package buffer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCaps(t *testing.T) {
	t.Run("items", func(t *testing.T) {
		s := openT(t, "", Options{MaxItems: 5, Sync: SyncNone})
		var ok []Record
		for i := range 5 {
			r, err := s.AppendListen(rec(strings.Repeat("a", i)))
			if err != nil {
				t.Fatal(err)
			}
			ok = append(ok, r)
		}
		refusals := []struct {
			name string
			do   func() error
			kind string
		}{
			{"listen", func() error { _, err := s.AppendListen(rec("zesde")); return err }, "listen"},
			{"utterance", func() error { _, err := s.EnqueueUtterance(rec("zesde")); return err }, "utterance"},
			{"ack", func() error { _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{}`)); return err }, "ack"},
			{"audio", func() error { _, err := s.JournalAudio([]float32{0.1}, time.Now()); return err }, "audio"},
		}
		for _, r := range refusals {
			err := r.do()
			if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), r.kind) {
				t.Fatalf("%s over the cap: %v", r.name, err)
			}
		}
		st, _ := s.Stats()
		for _, r := range refusals {
			if st.Refused[r.kind] != 1 {
				t.Errorf("Refused[%s] = %d", r.kind, st.Refused[r.kind])
			}
		}
		if !strings.Contains(st.LastError, "cap") {
			t.Errorf("LastError = %q", st.LastError)
		}
		list, _ := s.ListListen(0)
		if len(list) != 5 || list[4].ID != ok[4].ID {
			t.Fatalf("stored items touched by refusal: %d", len(list))
		}
		// Flushing turns 5 records into one entry: room again.
		if _, _, err := s.FlushListen(false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendListen(rec("weer ruimte")); err != nil {
			t.Fatalf("append after flush freed room: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		s := openT(t, "", Options{MaxBytes: 20 << 10, Sync: SyncNone})
		var acked []Record
		var err error
		for i := 0; i < 1000; i++ {
			var r Record
			r, err = s.AppendListen(rec(strings.Repeat("b", 200)))
			if err != nil {
				break
			}
			acked = append(acked, r)
		}
		if !errors.Is(err, ErrFull) || len(acked) == 0 {
			t.Fatalf("after %d appends: %v, want ErrFull", len(acked), err)
		}
		st, _ := s.Stats()
		if st.StoredBytes > 20<<10 {
			t.Fatalf("stored %d bytes over the 20 KiB cap", st.StoredBytes)
		}
		s = reopen(t, s)
		list, _ := s.ListListen(0)
		if len(list) != len(acked) || list[len(list)-1].ID != acked[len(acked)-1].ID {
			t.Fatalf("%d stored, %d acknowledged", len(list), len(acked))
		}
	})
	t.Run("retained audio evicted first", func(t *testing.T) {
		s := openT(t, "", Options{MaxBytes: 64 << 10, AudioRetention: RetainKeep, Sync: SyncNone})
		id, err := s.JournalAudio(make([]float32, 16000), time.Now()) // 32 KiB
		if err != nil {
			t.Fatal(err)
		}
		r := rec("met audio")
		r.AudioID = id
		if _, err := s.AppendListen(r); err != nil {
			t.Fatal(err)
		}
		var n int
		for ; n < 1000; n++ {
			if _, err = s.AppendListen(rec(strings.Repeat("c", 200))); err != nil {
				break
			}
		}
		if !errors.Is(err, ErrFull) {
			t.Fatal(err)
		}
		if _, err := s.Audio(id); err == nil {
			t.Fatal("retained audio survived while text was refused")
		}
		if n < 100 { // the 32 KiB clip made room for >100 records of ~300 B
			t.Fatalf("only %d appends after eviction", n)
		}
		if c, _ := s.ListenCount(); c != n+1 {
			t.Fatalf("ListenCount %d, want %d", c, n+1)
		}
	})
}
