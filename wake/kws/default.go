package kws

import (
	_ "embed"
	"fmt"
)

// agoraHead is the head trained for "Agora" (wake/kws/train).
//
//go:embed agora.json
var agoraHead []byte

// DefaultHead is the built-in head for the name "Agora".
func DefaultHead() (*Head, error) {
	h, err := ParseHead(agoraHead)
	if err != nil {
		return nil, fmt.Errorf("built-in keyword head: %w", err)
	}
	return h, nil
}

// OpenDefault opens a spotter for "Agora" with the built-in head and the
// front end found in dirs (Find); threshold 0 means the head's own.
func OpenDefault(threshold float64, dirs ...string) (*Spotter, error) {
	dir, err := Find(dirs...)
	if err != nil {
		return nil, err
	}
	head, err := DefaultHead()
	if err != nil {
		return nil, err
	}
	return Open(dir, head, threshold)
}
