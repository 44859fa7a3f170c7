package bridge

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/agora/agorad/sync/brokertest"
)

// Both stores keep a streamed answer's parts in index order across a
// restart (Badger: the database reopened; JetStream KV: a new connection)
// until they are dropped, apart from other messages' parts.
func TestStoresKeepStreamedParts(t *testing.T) {
	for _, sc := range []struct {
		name string
		open func(t *testing.T) (streamStore, func() streamStore)
	}{
		{"badger", func(t *testing.T) (streamStore, func() streamStore) {
			dir := t.TempDir()
			open := func() *BadgerStore {
				st, err := OpenBadger(dir, true, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			st := open()
			return st, func() streamStore {
				st.Close()
				again := open()
				t.Cleanup(func() { again.Close() })
				return again
			}
		}},
		{"jetstream-kv", func(t *testing.T) (streamStore, func() streamStore) {
			n := brokertest.StartNATS(t, 2)
			connect := func() streamStore {
				js, err := ConnectJetStream(JetStreamOptions{URL: n.URL(), Partitions: 2, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(js.Close)
				return js.Store().(streamStore)
			}
			return connect(), func() streamStore { return connect() }
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			st, restart := sc.open(t)
			const dev, id = "dev.with.dots", "019c0000-0000-7000-8000-0000000000bb"
			for _, i := range []int{1, 2, 10, 3} {
				if err := st.PutStreamPart(dev, id, i, []byte(fmt.Sprintf("part %d", i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.PutStreamPart(dev, "other", 1, []byte("other")); err != nil {
				t.Fatal(err)
			}
			st = restart()
			got, err := st.StreamParts(dev, id)
			if err != nil || fmt.Sprintf("%s", got) != "[part 1 part 2 part 3 part 10]" {
				t.Fatalf("after the restart: %s %v", got, err)
			}
			if err := st.DropStreamParts(dev, id); err != nil {
				t.Fatal(err)
			}
			if got, err := st.StreamParts(dev, id); err != nil || len(got) != 0 {
				t.Fatalf("after the drop: %s %v", got, err)
			}
			if got, _ := st.StreamParts(dev, "other"); len(got) != 1 {
				t.Fatalf("the other message's parts: %s", got)
			}
		})
	}
}
