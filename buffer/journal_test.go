package buffer

import (
	"math"
	"testing"
	"time"
)

func TestJournal(t *testing.T) {
	samples := make([]float32, 16000)
	for i := range samples {
		samples[i] = float32(0.5 * math.Sin(float64(i)*2*math.Pi*440/16000))
	}
	samples[0], samples[1] = 1.5, -2 // clipped, not wrapped
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		retention    string
		wantRetained int
	}{
		{RetainDrop, 0},
		{RetainKeep, 1},
	}
	for _, tt := range tests {
		t.Run(tt.retention, func(t *testing.T) {
			s := openT(t, "", Options{AudioRetention: tt.retention})
			if _, err := s.JournalAudio(nil, start); err == nil {
				t.Fatal("empty audio accepted")
			}
			id1, err := s.JournalAudio(samples, start)
			if err != nil {
				t.Fatal(err)
			}
			id2, err := s.JournalAudio(samples[:800], start.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			// Crash before transcription: both come back, oldest first.
			s = reopen(t, s)
			p, err := s.PendingAudio()
			if err != nil || len(p) != 2 || p[0].ID != id1 || p[1].ID != id2 {
				t.Fatalf("PendingAudio = %d, %v", len(p), err)
			}
			if !p[0].StartedAt.Equal(start) || len(p[0].Samples) != len(samples) {
				t.Fatalf("journal round trip: start %v, %d samples", p[0].StartedAt, len(p[0].Samples))
			}
			if p[0].Samples[0] != 1 || p[0].Samples[1] != -1 {
				t.Errorf("clipping: %v %v", p[0].Samples[0], p[0].Samples[1])
			}
			for i := 2; i < len(samples); i++ {
				if d := math.Abs(float64(p[0].Samples[i] - samples[i])); d > 1.0/32767 {
					t.Fatalf("sample %d off by %g", i, d)
				}
			}
			// Text stored: its audio leaves the journal in the same write.
			r := rec("gevonden")
			r.AudioID = id1
			got, err := s.AppendListen(r)
			if err != nil {
				t.Fatal(err)
			}
			if (got.AudioID != "") != (tt.retention == RetainKeep) {
				t.Errorf("record AudioID = %q under %s", got.AudioID, tt.retention)
			}
			u := rec("commando")
			u.AudioID = id2
			if _, err := s.EnqueueUtterance(u); err != nil {
				t.Fatal(err)
			}
			s = reopen(t, s)
			if l, _ := s.ListListen(0); len(l) != 1 || l[0].AudioID != got.AudioID {
				t.Fatalf("stored record %+v, want AudioID %q", l, got.AudioID)
			}
			if p, _ := s.PendingAudio(); len(p) != 0 {
				t.Fatalf("%d clips still pending after their text was stored", len(p))
			}
			st, err := s.Stats()
			if err != nil || st.AudioRetained != 2*tt.wantRetained || st.JournalPending != 0 {
				t.Fatalf("Stats retained %d pending %d (%v)", st.AudioRetained, st.JournalPending, err)
			}
			_, err = s.Audio(id1)
			if (err == nil) != (tt.retention == RetainKeep) {
				t.Fatalf("Audio(%s) under %s: %v", id1, tt.retention, err)
			}
			// DropAudio is idempotent and removes retained audio too.
			for range 2 {
				if err := s.DropAudio(id1); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Audio(id1); err == nil {
				t.Fatal("audio still there after DropAudio")
			}
		})
	}
}
