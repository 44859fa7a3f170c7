package buffer

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestSyncPolicies(t *testing.T) {
	for _, mode := range []string{SyncAlways, SyncInterval, SyncNone} {
		t.Run(mode, func(t *testing.T) {
			s := openT(t, "", Options{Sync: mode, SyncInterval: 10 * time.Millisecond})
			var want []Record
			for i := range 20 {
				r, err := s.AppendListen(rec(fmt.Sprint("meting ", i)))
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, r)
			}
			time.Sleep(30 * time.Millisecond) // let the interval sync run
			s = reopen(t, s)
			checkListen(t, s, want)
		})
	}
}

// TestValueLogGC drops journaled audio spread over several value-log files
// and runs GC: the live data must survive the rewrite.
func TestValueLogGC(t *testing.T) {
	o := smallDevice()
	s := openT(t, "", o)
	clip := make([]float32, 16000)
	for i := range clip {
		clip[i] = float32(i%100) / 200
	}
	var keep []string
	for i := range 120 { // ~3.8 MB over 1 MiB value-log files
		id, err := s.JournalAudio(clip, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			keep = append(keep, id)
		} else if err := s.DropAudio(id); err != nil {
			t.Fatal(err)
		}
	}
	s.RunGC()
	s = reopen(t, s)
	s.RunGC()
	p, err := s.PendingAudio()
	if err != nil || len(p) != len(keep) {
		t.Fatalf("PendingAudio = %d, %v; want %d", len(p), err, len(keep))
	}
	for i, a := range p {
		if a.ID != keep[i] || len(a.Samples) != len(clip) || math.Abs(float64(a.Samples[99]-clip[99])) > 1.0/32767 {
			t.Fatalf("clip %d damaged: %s, %d samples", i, a.ID, len(a.Samples))
		}
	}
}

// BenchmarkAppendListen is the store's hot path per fsync policy; see
// bench/storebench for latency percentiles.
func BenchmarkAppendListen(b *testing.B) {
	for _, mode := range []string{SyncAlways, SyncInterval, SyncNone} {
		b.Run(mode, func(b *testing.B) {
			s := openT(b, "", Options{Sync: mode})
			r := rec("lasnaad gecontroleerd, geen afwijkingen, foto genomen")
			for b.Loop() {
				if _, err := s.AppendListen(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFlushListen1000(b *testing.B) {
	s := openT(b, "", Options{Sync: SyncNone})
	for b.Loop() {
		b.StopTimer()
		for range 1000 {
			if _, err := s.AppendListen(rec("meting")); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if _, _, err := s.FlushListen(false); err != nil {
			b.Fatal(err)
		}
	}
}
