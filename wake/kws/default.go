package kws

import (
	_ "embed"
	"fmt"
)

// agoraHead is the head trained for "Agora" (wake/kws/train).
//
//go:embed agora.json
var agoraHead []byte

// lateHead is the late head trained for "Agora" (wake/kws/train with
// KWS_AFTER): it hears the words that follow the name.
//
//go:embed late.json
var lateHead []byte

// DefaultLate is the built-in late head (Spotter.SetLate).
func DefaultLate() (*Head, error) {
	h, err := ParseHead(lateHead)
	if err != nil {
		return nil, fmt.Errorf("built-in late keyword head: %w", err)
	}
	return h, nil
}

// DefaultHead is the built-in head for the name "Agora".
func DefaultHead() (*Head, error) {
	h, err := ParseHead(agoraHead)
	if err != nil {
		return nil, fmt.Errorf("built-in keyword head: %w", err)
	}
	return h, nil
}

// OpenDefault opens a spotter for "Agora" with the built-in heads and the
// front end found in dirs (Find); threshold 0 means the verdict's own.
func OpenDefault(threshold float64, dirs ...string) (*Spotter, error) {
	dir, err := Find(dirs...)
	if err != nil {
		return nil, err
	}
	return OpenWith(dir, threshold)
}

// OpenWith opens a spotter for "Agora" with the built-in heads on the front
// end in dir; threshold 0 means the verdict's own.
func OpenWith(dir string, threshold float64) (*Spotter, error) {
	head, err := DefaultHead()
	if err != nil {
		return nil, err
	}
	late, err := DefaultLate()
	if err != nil {
		return nil, err
	}
	s, err := Open(dir, head, threshold)
	if err != nil {
		return nil, err
	}
	if err := s.SetLate(late); err != nil {
		s.Close()
		return nil, fmt.Errorf("built-in late keyword head: %w", err)
	}
	return s, nil
}
