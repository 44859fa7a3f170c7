package kws

import "fmt"

// SetGate makes g the gate: a small network taught the head's logit
// (wake/kws/train's gate), run on every window, with the head itself run
// only where the gate scores g.Threshold or more. A window the gate turns
// away scores the gate's own probability, which is under its threshold and
// so under lateFrom: no verdict, fuse band or late head depends on windows
// under lateFrom, so the gate changes the spotter's cost, not what it
// hears, as long as it passes every window the head would score lateFrom or
// more (the gate's threshold is chosen with a margin under the lowest it
// gave any such training window; TestGateReal and bench/kwsbench -gate
// check it on speech it never saw). Call it before the spotter is used.
func (s *Spotter) SetGate(g *Head) error {
	if g.Windows != s.head.Windows {
		return fmt.Errorf("keyword gate: %d windows, the head %d", g.Windows, s.head.Windows)
	}
	if g.Threshold > lateFrom {
		return fmt.Errorf("keyword gate: passes from %v: want at most %v, the least score the verdict looks at", g.Threshold, lateFrom)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = g
	return nil
}

// headScore is the head's score on the window x, or the gate's where the
// gate turns it away.
func (s *Spotter) headScore(x []float32) float64 {
	if s.gate != nil {
		if g := s.gate.score(x); g < s.gate.Threshold {
			return g
		}
	}
	return s.head.score(x)
}
