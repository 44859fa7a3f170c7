package buffer

import (
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

func TestOpenOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"bad sync", Options{Sync: "sometimes"}, "sync"},
		{"bad retention", Options{AudioRetention: "forever"}, "audio retention"},
		{"negative cap", Options{MaxItems: -1}, "caps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Open(dir, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("Open error = %v, want one naming %q and the dir", err, tt.want)
			}
		})
	}
}

func TestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The schema key was written on create.
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	var v uint64
	err = db.View(func(txn *badger.Txn) error {
		var err error
		v, err = getUint64(txn, keySchema)
		return err
	})
	if err != nil || v != SchemaVersion {
		t.Fatalf("schema key = %d, %v; want %d", v, err, SchemaVersion)
	}
	// A newer schema is refused with a clear error.
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(keySchema, be8(SchemaVersion+1)) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Logger: quiet()})
	if err == nil || !strings.Contains(err.Error(), "schema version 2") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open of newer schema: %v", err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	s := openT(t, "", Options{Sync: SyncNone})
	const workers, each = 4, 50
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				var seq uint64
				if (w+i)%2 == 0 {
					r, err := s.AppendListen(rec("x"))
					if err != nil {
						t.Error(err)
						return
					}
					seq = r.Seq
				} else {
					e, err := s.Enqueue(LaneData, KindEvent, false, []byte(`{}`))
					if err != nil {
						t.Error(err)
						return
					}
					seq = e.Seq
				}
				mu.Lock()
				if seen[seq] {
					t.Errorf("seq %d handed out twice", seq)
				}
				seen[seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	l, _ := s.ListenCount()
	o, _ := s.OutboxCount()
	if l+o != workers*each || len(seen) != workers*each {
		t.Fatalf("%d listen + %d outbox, %d seqs; want %d", l, o, len(seen), workers*each)
	}
}
