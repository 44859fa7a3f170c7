package buffer

import (
	"testing"
	"time"
)

func TestStats(t *testing.T) {
	s := openT(t, "", Options{})
	if _, err := s.AppendListen(rec("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JournalAudio([]float32{0, 0.1}, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Listen != 1 || st.OutboxControl != 1 || st.OutboxData != 0 || st.JournalPending != 1 || st.Seq != 2 {
		t.Fatalf("counts %+v", st)
	}
	for name, age := range map[string]time.Duration{"listen": st.OldestListen, "outbox": st.OldestOutbox, "journal": st.OldestJournal} {
		if age < 10*time.Millisecond || age > time.Minute {
			t.Errorf("oldest %s age %v", name, age)
		}
	}
	if st.StoredBytes <= 0 || st.LSMBytes <= 0 || st.VlogBytes <= 0 || st.FreeBytes <= 0 {
		t.Errorf("sizes %+v", st)
	}
	s = reopen(t, s)
	st2, _ := s.Stats()
	if st2.StoredBytes != st.StoredBytes || st2.Listen != 1 {
		t.Errorf("accounting after reopen %d bytes, want %d", st2.StoredBytes, st.StoredBytes)
	}
}
