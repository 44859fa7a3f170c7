package buffer

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openT opens a store in dir (a fresh temp dir when empty) and closes it at
// the end of the test.
func openT(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func reopen(t testing.TB, s *Store) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openT(t, s.dir, s.opts)
}

func rec(text string) Record {
	return Record{Text: text, Lang: "nl", StartedAt: time.Now().Add(-time.Second), DurationMS: 800, Source: "mic"}
}

// decodeBatch decodes a batch entry's body strictly as a BatchBody.
func decodeBatch(t testing.TB, e Entry) BatchBody {
	t.Helper()
	var b BatchBody
	dec := json.NewDecoder(bytes.NewReader(e.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("batch body %.80q: %v", e.Body, err)
	}
	if b.Count != len(b.Items) {
		t.Fatalf("batch count %d but %d items", b.Count, len(b.Items))
	}
	return b
}

// rawListenKeys counts physical listen keys, including moved ones the floor hides.
func rawListenKeys(t testing.TB, s *Store) int {
	t.Helper()
	n := 0
	err := s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefixListen})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
