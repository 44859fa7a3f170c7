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

// gateHead is the gate taught the built-in head's logit (wake/kws/train
// gate): the head runs only where it passes (Spotter.SetGate).
//
//go:embed gate.json
var gateHead []byte

// DefaultGate is the built-in gate (Spotter.SetGate).
func DefaultGate() (*Head, error) { return builtin(gateHead, "built-in keyword gate") }

// DefaultLate is the built-in late head (Spotter.SetLate).
func DefaultLate() (*Head, error) { return builtin(lateHead, "built-in late keyword head") }

// DefaultHead is the built-in head for the name "Agora".
func DefaultHead() (*Head, error) { return builtin(agoraHead, "built-in keyword head") }

// builtin parses an embedded head file; what names it in the error.
func builtin(data []byte, what string) (*Head, error) {
	h, err := ParseHead(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
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

// OpenWith opens a spotter for "Agora" with the built-in heads and gate on
// the front end in dir; threshold 0 means the verdict's own.
func OpenWith(dir string, threshold float64) (*Spotter, error) {
	head, err := DefaultHead()
	if err != nil {
		return nil, err
	}
	late, err := DefaultLate()
	if err != nil {
		return nil, err
	}
	gate, err := DefaultGate()
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
	if err := s.SetGate(gate); err != nil {
		s.Close()
		return nil, fmt.Errorf("built-in keyword gate: %w", err)
	}
	return s, nil
}
