package spool

import (
	"errors"
	"fmt"
	"sync"

	"github.com/agora/agorad/buffer"
)

// ErrFull: the spool has no room for the item.
var ErrFull = errors.New("memory spool full")

// Item is one utterance held: its record (with the id chosen for it) and
// the mode it was said in (listen: a note for the listen buffer; feedback:
// an utterance for the outbox).
type Item struct {
	Rec  buffer.Record
	Mode buffer.Mode
}

// overhead is what an item costs beyond its strings (the record's other
// fields and the slice slot), so a spool of tiny items is still bounded.
const overhead = 256

func size(it Item) int64 {
	r := it.Rec
	return int64(len(r.ID)+len(r.Text)+len(r.Lang)+len(r.Source)+len(r.AudioID)) + overhead
}

// Spool is the bounded FIFO. The zero value is unusable: use New.
type Spool struct {
	max int64

	mu    sync.Mutex
	items []Item
	bytes int64
	drain sync.Mutex // one Drain at a time
}

// New returns a spool of at most maxBytes (> 0).
func New(maxBytes int64) (*Spool, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("spool: size %d bytes, want > 0", maxBytes)
	}
	return &Spool{max: maxBytes}, nil
}

// Add holds it, or refuses it with ErrFull (naming the numbers).
func (s *Spool) Add(it Item) error {
	n := size(it)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes+n > s.max {
		return fmt.Errorf("hold utterance in memory: %d of %d bytes used, it needs %d: %w", s.bytes, s.max, n, ErrFull)
	}
	s.items = append(s.items, it)
	s.bytes += n
	return nil
}

// Room says whether an item of an ordinary size still fits.
func (s *Spool) Room() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes+overhead+1024 <= s.max
}

// Len is the number of items held.
func (s *Spool) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// Drain hands the items to write, oldest first, and drops each once write
// returned nil; it stops at the first error and returns it with the number
// written.
func (s *Spool) Drain(write func(Item) error) (int, error) {
	s.drain.Lock()
	defer s.drain.Unlock()
	n := 0
	for {
		s.mu.Lock()
		if len(s.items) == 0 {
			s.mu.Unlock()
			return n, nil
		}
		it := s.items[0]
		s.mu.Unlock()
		if err := write(it); err != nil {
			return n, err
		}
		s.mu.Lock()
		s.items[0] = Item{}
		s.items = s.items[1:]
		s.bytes -= size(it)
		s.mu.Unlock()
		n++
	}
}
