package buffer

import (
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/agora/agorad/buffer/fsfault"
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

// TestPeriodicSyncFailureShown: under sync policy "interval", an ext4
// error that turns the state directory read-only makes the background
// fsync fail. The failure is counted and shown by Stats (the daemon's
// status, problems and metric read it), not only logged.
func TestPeriodicSyncFailureShown(t *testing.T) {
	if testing.Short() {
		t.Skip("loop-mounted ext4")
	}
	e := fsfault.MountExt4(t, 64)
	var log logLines
	s, err := Open(filepath.Join(e.Dir, "store"), Options{Sync: SyncInterval, SyncInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// A plain Close would retry its flush forever on the read-only file
	// system: CloseWithin gives up (its own test checks how).
	defer func() { _ = s.CloseWithin(2 * time.Second) }()
	if _, err := s.AppendListen(rec("scheur in de balk bij as drie")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if st, err := s.Stats(); err != nil || st.SyncFailures != 0 || st.SyncFailing != "" {
		t.Fatalf("healthy store: Stats = %d failures, failing %q, %v", st.SyncFailures, st.SyncFailing, err)
	}
	// A write after the sync above leaves something for the next sync to
	// flush; then the file system goes read-only under it.
	if _, err := s.AppendListen(rec("vochtplek in de kelder")); err != nil {
		t.Fatal(err)
	}
	e.RemountReadOnly(t)
	var st Stats
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if st, err = s.Stats(); err != nil {
			t.Fatal(err)
		}
		if st.SyncFailures > 0 || time.Now().After(deadline) {
			break
		}
	}
	if st.SyncFailures == 0 || st.SyncFailing == "" {
		t.Fatalf("periodic fsync on a read-only file system: Stats = %d failures, failing %q; want counted and shown", st.SyncFailures, st.SyncFailing)
	}
	if n, _ := log.count("periodic fsync failed"); n != 1 {
		t.Fatalf("%d 'periodic fsync failed' log lines for %d failing syncs; want 1 (an episode)", n, st.SyncFailures)
	}
}
