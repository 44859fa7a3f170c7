package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/brokertest"
)

// agora-bridge reset-seq clears one device's sequence record, and only
// that device's: in the fleet's KV bucket, in a stopped bridge's state
// directory, and (as a request) in a running one's.
func TestResetSeqCommand(t *testing.T) {
	forged := bridge.DeviceState{LastSeq: 999999999, LastID: "forged", StoreID: "s", StoreSeq: 999999999}
	check := func(t *testing.T, st bridge.Store) {
		t.Helper()
		for dev, want := range map[string]uint64{"dev-a": 0, "dev-b": 999999999} {
			ds, err := st.Device(dev)
			if err != nil {
				t.Fatal(err)
			}
			if ds.StoreSeq != want || ds.LastSeq != want {
				t.Errorf("%s: store_seq %d last_seq %d, want %d", dev, ds.StoreSeq, ds.LastSeq, want)
			}
		}
	}
	seed := func(t *testing.T, st bridge.Store) {
		for _, dev := range []string{"dev-a", "dev-b"} {
			if err := st.Commit(dev, "forged", bridge.Record{State: bridge.StateDone}, forged, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(t *testing.T, args ...string) string {
		var out, errb bytes.Buffer
		if code := dispatch(context.Background(), append([]string{"reset-seq", "--device", "dev-a"}, args...), &out, &errb); code != exitOK {
			t.Fatalf("reset-seq %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	t.Run("nats", func(t *testing.T) {
		n := brokertest.StartNATS(t, 2)
		js, err := bridge.ConnectJetStream(bridge.JetStreamOptions{URL: n.URL(), Partitions: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer js.Close()
		seed(t, js.Store())
		if out := run(t, "--nats", n.URL(), "--partitions", "2"); !strings.Contains(out, "cleared") {
			t.Errorf("output %q", out)
		}
		check(t, js.Store())
	})
	t.Run("state-dir", func(t *testing.T) {
		dir := t.TempDir()
		bs, err := bridge.OpenBadger(dir, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		seed(t, bs)
		// Running: the database is held; the reset is requested.
		if out := run(t, "--state-dir", dir); !strings.Contains(out, "requested") {
			t.Errorf("output while the database is held: %q", out)
		}
		check(t, bs) // applied at the device's next read
		bs.Close()
		bs, err = bridge.OpenBadger(dir, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		seed(t, bs)
		bs.Close()
		if out := run(t, "--state-dir", dir); !strings.Contains(out, "cleared") {
			t.Errorf("output: %q", out)
		}
		bs, err = bridge.OpenBadger(dir, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer bs.Close()
		check(t, bs)
	})
}
