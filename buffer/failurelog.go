package buffer

import (
	"errors"
	"syscall"
	"time"
)

// failureLog keeps the store's write failures from flooding the log: a
// caller retrying every 250 ms (an MQTT reply waiting for room) would
// otherwise write an ERROR line four times a second onto the full disk.
// The first failure of an episode is logged, later ones of the same kind
// are counted (with a reminder every failureRemind), and the first write
// that succeeds ends the episode with the count. Stats still carry every
// refusal and the last error.
type failureLog struct {
	class string // the episode's kind of failure; "" between episodes
	began time.Time
	n     int       // failures in the episode
	last  time.Time // the episode's last log line
}

const failureRemind = 5 * time.Minute

func failureClass(err error) string {
	switch {
	case errors.Is(err, ErrFull):
		return "storage cap reached"
	case errors.Is(err, ErrDiskFull):
		return "disk full"
	case errors.Is(err, ErrClosed):
		return "store closed"
	case errors.Is(err, syscall.EROFS):
		return "read-only file system"
	case errors.Is(err, syscall.EIO):
		return "I/O error"
	case errors.Is(err, syscall.ENOENT):
		return "state directory gone"
	}
	return "write failed"
}

// logFailure logs a refused or failed write unless its episode was logged
// already. Called with s.mu held.
func (s *Store) logFailure(what string, err error) {
	now := time.Now()
	f := &s.failures
	class := failureClass(err)
	log := s.log.Error
	if errors.Is(err, ErrFull) {
		log = s.log.Warn // a policy at work, not a fault
	}
	switch {
	case class != f.class:
		if f.class != "" {
			s.log.Info("store write failures changed kind", "was", f.class, "failures", f.n, "for", now.Sub(f.began).Round(time.Millisecond))
		}
		*f = failureLog{class: class, began: now, n: 1, last: now}
		log("store write failed; further failures of this kind are counted, not logged, until a write succeeds",
			"what", what, "err", err)
	case now.Sub(f.last) >= failureRemind:
		f.n++
		f.last = now
		log("store writes still failing", "what", what, "err", err, "failures", f.n, "for", now.Sub(f.began).Round(time.Second))
	default:
		f.n++
	}
}

// writeSucceeded ends a failure episode. Called with s.mu held.
func (s *Store) writeSucceeded() {
	f := &s.failures
	if f.class == "" {
		return
	}
	s.log.Info("store writes succeed again", "after", f.class, "failures", f.n, "for", time.Since(f.began).Round(time.Millisecond))
	*f = failureLog{}
}
