package kws

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Files of a head directory: what the recipe (scripts/kws-head.sh) writes.
const (
	HeadDirHead = "head.json" // the head, with the threshold chosen on the recipe's development speakers
	HeadDirLate = "late.json" // optional: the late head (SetLate)
	HeadDirGate = "gate.json" // optional: the gate (SetGate)
)

// LoadHeadDir reads a head directory: its head, and its late head and gate
// when present (nil when not). A file that is there but unreadable or
// malformed is an error naming it, never skipped.
func LoadHeadDir(dir string) (head, late, gate *Head, err error) {
	if head, err = LoadHead(filepath.Join(dir, HeadDirHead)); err != nil {
		return nil, nil, nil, fmt.Errorf("keyword head directory %s: %w", dir, err)
	}
	opt := func(name string) (*Head, error) {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		h, err := LoadHead(p)
		if err != nil {
			return nil, fmt.Errorf("keyword head directory %s: %w", dir, err)
		}
		return h, nil
	}
	if late, err = opt(HeadDirLate); err != nil {
		return nil, nil, nil, err
	}
	if gate, err = opt(HeadDirGate); err != nil {
		return nil, nil, nil, err
	}
	return head, late, gate, nil
}

// OpenHeadDir opens a spotter on the front end in dir with the heads of
// headDir (LoadHeadDir); threshold 0 means the heads' own (the late
// head's when there is one: the verdict's).
func OpenHeadDir(dir, headDir string, threshold float64) (*Spotter, error) {
	head, late, gate, err := LoadHeadDir(headDir)
	if err != nil {
		return nil, err
	}
	s, err := Open(dir, head, threshold)
	if err != nil {
		return nil, err
	}
	if late != nil {
		if err := s.SetLate(late); err != nil {
			s.Close()
			return nil, fmt.Errorf("keyword head directory %s: %w", headDir, err)
		}
	}
	if gate != nil {
		if err := s.SetGate(gate); err != nil {
			s.Close()
			return nil, fmt.Errorf("keyword head directory %s: %w", headDir, err)
		}
	}
	return s, nil
}

// OpenHeadDirFound is OpenHeadDir with the front end found in dirs (Find).
func OpenHeadDirFound(headDir string, threshold float64, dirs ...string) (*Spotter, error) {
	dir, err := Find(dirs...)
	if err != nil {
		return nil, err
	}
	return OpenHeadDir(dir, headDir, threshold)
}
