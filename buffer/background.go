package buffer

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// The store's background work under sync policy "interval" and its
// maintenance: the periodic fsync and what a failed one leaves shown, value-log
// GC, and the disk usage Stats reports.

// every runs fn every d until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// syncOnce is the periodic fsync of sync policy "interval".
func (s *Store) syncOnce() {
	committed := s.committed.Load()
	synced, err := func() (bool, error) {
		s.dbMu.RLock()
		defer s.dbMu.RUnlock()
		if s.db == nil {
			return false, nil
		}
		return true, s.db.Sync()
	}()
	if !synced {
		return
	}
	s.noteSync(err)
	if err != nil {
		return
	}
	// Everything committed before the sync is durable now.
	s.identMu.Lock()
	defer s.identMu.Unlock()
	if s.ident != nil && s.ident.f != nil { // not closed
		if err := s.ident.advance(committed); err != nil {
			s.log.Warn("record sequence high-water mark", "err", err)
		}
	}
}

// noteSync records a periodic fsync's outcome: a failure is counted and
// shown by Stats until a sync succeeds again, and logged when an episode
// of failures begins and when it ends. It takes syncMu, not s.mu: Close
// holds s.mu while it waits for this goroutine.
func (s *Store) noteSync(err error) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if err == nil {
		if s.syncFailing != "" {
			s.log.Info("periodic fsync succeeds again", "failures", s.syncFailures)
		}
		s.syncFailing = ""
		return
	}
	s.syncFailures++
	if s.syncFailing == "" {
		s.log.Error("periodic fsync failed: what was accepted since the last good sync is not safe from a power cut; further failures are counted, not logged, until one succeeds",
			"dir", s.dir, "err", err)
	}
	s.syncFailing = s.classify(err).Error()
}

// RunGC reclaims value-log space held by deleted audio and batches.
func (s *Store) RunGC() {
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.db == nil || s.vlogDamaged.Load() {
		return // see keyVlogDamaged
	}
	for s.checkSpace(0) == nil && s.db.RunValueLogGC(0.5) == nil {
	}
}

// diskUsage is the space Badger's files take on disk (allocated blocks:
// value-log files are preallocated sparse).
func diskUsage(dir string) (lsm, vlog int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		n := allocated(info)
		switch filepath.Ext(e.Name()) {
		case ".vlog":
			vlog += n
		default:
			lsm += n
		}
	}
	return lsm, vlog
}
