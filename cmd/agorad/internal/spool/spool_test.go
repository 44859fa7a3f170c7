package spool

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agora/agorad/buffer"
)

func note(text string) Item {
	return Item{Rec: buffer.Record{ID: "id-" + text, Text: text}, Mode: buffer.ModeListen}
}

func TestSpool(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int64
		add      []string
		refused  []string // refused by Add, in order
		failAt   int      // the write that fails (-1: none)
		written  []string
		leftover int
	}{
		{"all fit, all drained in order", 4096, []string{"a", "b", "c"}, nil, -1, []string{"a", "b", "c"}, 0},
		{"past the bound refused, nothing evicted", 2 * (overhead + 5), []string{"a", "b", "c"}, []string{"c"}, -1, []string{"a", "b"}, 0},
		{"an item bigger than the spool", 100, []string{strings.Repeat("x", 200)}, []string{strings.Repeat("x", 200)}, -1, nil, 0},
		{"a failed write stops the drain, the rest stays", 4096, []string{"a", "b", "c"}, nil, 1, []string{"a"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.max)
			if err != nil {
				t.Fatal(err)
			}
			var refused []string
			for _, a := range tc.add {
				if err := s.Add(note(a)); err != nil {
					if !errors.Is(err, ErrFull) {
						t.Fatalf("Add: %v", err)
					}
					refused = append(refused, a)
				}
			}
			if fmt.Sprint(refused) != fmt.Sprint(tc.refused) {
				t.Errorf("refused %q, want %q", refused, tc.refused)
			}
			var written []string
			calls := 0
			n, err := s.Drain(func(it Item) error {
				defer func() { calls++ }()
				if calls == tc.failAt {
					return errors.New("read-only file system")
				}
				written = append(written, it.Rec.Text)
				return nil
			})
			if (err != nil) != (tc.failAt >= 0) || n != len(tc.written) {
				t.Errorf("Drain: %d, %v", n, err)
			}
			if fmt.Sprint(written) != fmt.Sprint(tc.written) || s.Len() != tc.leftover {
				t.Errorf("written %q left %d; want %q left %d", written, s.Len(), tc.written, tc.leftover)
			}
			if tc.leftover > 0 {
				// The next drain starts where the failed one stopped.
				var rest []string
				if _, err := s.Drain(func(it Item) error { rest = append(rest, it.Rec.Text); return nil }); err != nil || s.Len() != 0 {
					t.Fatalf("second drain: %v, %d left", err, s.Len())
				}
				if want := tc.add[len(tc.written):]; fmt.Sprint(rest) != fmt.Sprint(want) {
					t.Errorf("second drain %q, want %q", rest, want)
				}
			}
		})
	}
	if _, err := New(0); err == nil {
		t.Error("New(0) accepted")
	}
}
