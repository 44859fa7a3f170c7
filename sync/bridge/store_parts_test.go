package bridge_test

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
)

// Both stores (Badger for one bridge, the JetStream KV bucket for a fleet)
// keep batch parts in index order until the commit drops them, and index
// committed records by (store_id, seq).
func TestStoresKeepPartsAndSeqIndex(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) bridge.Store
	}{
		{"badger", func(t *testing.T) bridge.Store {
			st, err := bridge.OpenBadger(t.TempDir(), false, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"jetstream-kv", func(t *testing.T) bridge.Store {
			n := brokertest.StartNATS(t, 2)
			js, err := bridge.ConnectJetStream(bridge.JetStreamOptions{URL: n.URL(), Partitions: 2,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(js.Close)
			return js.Store()
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			st := sc.open(t)
			const dev, id = "dev.with.dots", "019c0000-0000-7000-8000-0000000000aa"
			// Out of order, one twice, up to index 12 (ordering is numeric).
			for _, i := range []int{3, 1, 12, 2, 3} {
				if _, err := st.PutPart(dev, id, i, 12, []byte(fmt.Sprintf("part %d", i))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.PutPart(dev, "other-batch", 1, 2, []byte("other")); err != nil {
				t.Fatal(err)
			}
			// The pending record counts distinct parts and their bytes.
			pb, found, err := st.PendingBatch(dev, id)
			if err != nil || !found || pb.Parts != 4 || pb.Of != 12 || pb.Bytes != int64(len("part 1part 2part 3part 12")) {
				t.Fatalf("pending batch %+v found %v err %v", pb, found, err)
			}
			if all, err := st.Pending(0); err != nil || len(all) != 2 {
				t.Fatalf("%d pending batches (%v), want 2", len(all), err)
			}
			parts, err := st.Parts(dev, id)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"part 1", "part 2", "part 3", "part 12"}
			if len(parts) != len(want) {
				t.Fatalf("%d parts kept, want %d", len(parts), len(want))
			}
			for i, p := range parts {
				if string(p) != want[i] {
					t.Errorf("part %d is %q, want %q", i, p, want[i])
				}
			}
			if _, found, _ := st.BySeq(dev, "store-1", 41); found {
				t.Fatal("seq indexed before the commit")
			}
			rec := bridge.Record{Seq: 41, StoreID: "store-1", State: bridge.StateDone, At: time.Now()}
			if err := st.Commit(dev, id, rec, bridge.DeviceState{LastSeq: 41, StoreID: "store-1", StoreSeq: 41}, nil); err != nil {
				t.Fatal(err)
			}
			if parts, err := st.Parts(dev, id); err != nil || len(parts) != 0 {
				t.Errorf("after the commit: %d parts kept (%v), want none", len(parts), err)
			}
			if parts, _ := st.Parts(dev, "other-batch"); len(parts) != 1 {
				t.Errorf("the commit dropped another batch's parts")
			}
			if _, found, _ := st.PendingBatch(dev, id); found {
				t.Errorf("pending record kept after the commit")
			}
			cases := []struct {
				store string
				seq   uint64
				found bool
			}{{"store-1", 41, true}, {"store-1", 40, false}, {"store-2", 41, false}}
			for _, c := range cases {
				got, found, err := st.BySeq(dev, c.store, c.seq)
				if err != nil || found != c.found || found && got != id {
					t.Errorf("BySeq(%s, %d) = %q, %v, %v", c.store, c.seq, got, found, err)
				}
			}
			// A parked batch joined from parts can exceed one NATS message.
			big := make([]byte, 3<<20)
			for i := range big {
				big[i] = byte('a' + i%26)
			}
			dl := &bridge.DeadLetter{DeviceID: dev, ID: "big-dl", Seq: 42, Payload: big, Reason: "test", At: time.Now()}
			if err := st.Commit(dev, "big-dl", bridge.Record{Seq: 42, State: bridge.StateParked}, bridge.DeviceState{LastSeq: 42, StoreID: "store-1", StoreSeq: 41}, dl); err != nil {
				t.Fatal(err)
			}
			dls, err := st.DeadLetters(0)
			if err != nil || len(dls) != 1 || string(dls[0].Payload) != string(big) || dls[0].Seq != 42 {
				t.Fatalf("dead letters: %d (%v)", len(dls), err)
			}
			ds, err := st.Device(dev)
			if err != nil || ds.StoreID != "store-1" || ds.StoreSeq != 41 {
				t.Errorf("device state %+v, %v", ds, err)
			}
		})
	}
}
