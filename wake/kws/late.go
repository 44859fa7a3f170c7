package kws

import (
	"fmt"
	"math"
)

// lateFrom is the head's score under which the late head is not asked
// (the verdict is then the head's score): from there, it would take a late
// head sure to within 2e-6 to reach the threshold.
const lateFrom = 0.5

// SetLate makes h the late head: a head trained on windows that end
// h.After[0] to h.After[1] seconds after the name, which hold the words
// that follow it. The verdict on a window is then the two heads' together
// (Verdict), the late one over the windows from there to After[1] later,
// and a spotter opened with the head's own threshold takes h's: the
// verdict's. Call it before the spotter is used.
func (s *Spotter) SetLate(h *Head) error {
	if h.Windows != s.head.Windows {
		return fmt.Errorf("late head: %d windows, the head %d", h.Windows, s.head.Windows)
	}
	if len(h.After) != 2 || h.After[0] < 0 || h.After[1] <= h.After[0] || h.After[1] > 2 {
		return fmt.Errorf("late head: after %v: want [from, to] seconds after the name, 0 <= from < to <= 2", h.After)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.late = h
	if s.own {
		s.threshold = h.Threshold // the verdict's, chosen with both heads
	}
	return nil
}

// Verdict joins the head's score on a window and the late head's best
// score after it: their logits' mean with the head weighing twice, as one
// probability. The late head alone never wakes the device: it hears the
// name less sharply (its window holds more of what is not the name), but
// it hears what follows, and where it is sure it carries a head that is
// nearly so; where it hears something else ("agora|fobie") it holds one
// back. The weights were chosen on bench/kwsbench (docs/wake.md, "The
// late verdict").
func Verdict(head, late float64) float64 {
	return sigmoid((2*logit(head) + logit(late)) / 3)
}

func logit(p float64) float64 {
	p = min(max(p, 1e-9), 1-1e-9)
	return math.Log(p / (1 - p))
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
