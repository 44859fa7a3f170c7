package segment

import (
	"fmt"
	"time"

	"github.com/agora/agorad/audio"
)

// Hold collects push-to-talk audio. While the key is held every sample is
// kept (the key, not the VAD, says what is speech), and a press longer than
// the maximum is cut into pieces of at most that length, each at the
// quietest window of its last search span, as hands-free speech is. Memory
// is therefore bounded by the maximum whatever the key does: a key stuck in
// a pocket yields a steady stream of pieces, never one unbounded utterance
// that the journal would have to refuse.
//
// Hold is not safe for concurrent use; the capture loop owns it.
type Hold struct {
	max, search int // samples
	held        bool
	buf         []float32
	start       time.Time // wall clock of buf[0]
	heldFor     int64     // samples since the press
	pieces      int       // pieces emitted in this press
}

// Piece is one cut of a push-to-talk press.
type Piece struct {
	Samples []float32
	// Start is the wall clock of Samples[0].
	Start time.Time
	// Index counts the pieces of one press from 0; Last is set on the piece
	// the release produced.
	Index int
	Last  bool
}

// holdWindow is the granularity of the quiet-point search (32 ms at 16 kHz,
// the VAD's window).
const holdWindow = 512

// NewHold cuts presses at maxLen, looking for the quietest window in the
// last search of each piece. search is clamped to maxLen.
func NewHold(maxLen, search time.Duration) (*Hold, error) {
	m := int(maxLen.Seconds() * audio.SampleRate)
	if m < 2*holdWindow {
		return nil, fmt.Errorf("push-to-talk maximum utterance %s is shorter than %s", maxLen, samplesDur(2*holdWindow))
	}
	s := min(int(search.Seconds()*audio.SampleRate), m-holdWindow)
	return &Hold{max: m, search: max(s, 0)}, nil
}

// Held reports whether a press is in progress.
func (h *Hold) Held() bool { return h.held }

// HeldFor is how much audio the current press has captured (0 when up).
func (h *Hold) HeldFor() time.Duration { return samplesDur(h.heldFor) }

// Press starts a press whose first sample is captured at t. A press while
// held is ignored.
func (h *Hold) Press(t time.Time) {
	if h.held {
		return
	}
	h.held, h.start, h.heldFor, h.pieces = true, t, 0, 0
	h.buf = h.buf[:0]
}

// Push adds captured audio to the press and returns the pieces that reached
// the maximum length. Without a press it does nothing.
func (h *Hold) Push(c audio.Chunk) []Piece {
	if !h.held {
		return nil
	}
	if len(h.buf) == 0 {
		h.start = c.Time
	}
	h.buf = append(h.buf, c.Samples...)
	h.heldFor += int64(len(c.Samples))
	var out []Piece
	for len(h.buf) >= h.max {
		out = append(out, h.emit(h.cutPoint(), false))
	}
	return out
}

// Release ends the press and returns what is left of it, if anything.
func (h *Hold) Release() (Piece, bool) {
	if !h.held {
		return Piece{}, false
	}
	h.held = false
	if len(h.buf) == 0 {
		return Piece{}, false
	}
	return h.emit(len(h.buf), true), true
}

// cutPoint is the start of the quietest window in the last search span of
// the first max samples. Windows are compared from the end backwards and an
// earlier one must be clearly quieter to win, so without a real pause the
// piece stays close to the maximum rather than ending at a random dip.
func (h *Hold) cutPoint() int {
	const clearlyQuieter = 3 // dB
	best, bestDB := h.max, 0.0
	for at := h.max - holdWindow; at >= h.max-h.search; at -= holdWindow {
		if db := dbfs(h.buf[at : at+holdWindow]); best == h.max || db < bestDB-clearlyQuieter {
			best, bestDB = at, db
		}
	}
	return best
}

// emit returns buf[:n] as a piece and keeps the rest.
func (h *Hold) emit(n int, last bool) Piece {
	p := Piece{Samples: append([]float32(nil), h.buf[:n]...), Start: h.start, Index: h.pieces, Last: last}
	h.pieces++
	h.start = h.start.Add(samplesDur(int64(n)))
	h.buf = append(h.buf[:0], h.buf[n:]...)
	return p
}
