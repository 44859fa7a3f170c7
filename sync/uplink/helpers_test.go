package uplink

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

func newStore(t testing.TB) *buffer.Store {
	t.Helper()
	st, err := buffer.Open(t.TempDir(), buffer.Options{Sync: buffer.SyncNone, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func testOptions(deviceID, url string) Options {
	return Options{DeviceID: deviceID, BrokerURL: url, BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
		KeepAlive: 5 * time.Second, ConnectTimeout: 2 * time.Second, PublishTimeout: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Status: func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "test", Model: "tiny"} }}
}

// runClient runs c until the test ends, or until the returned stop, which
// cancels Run and waits for it to return.
func runClient(t testing.TB, c *Client) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Errorf("uplink Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// runUntil runs c until cond holds, then stops it and waits for Run to return.
func runUntil(t testing.TB, c *Client, what string, cond func() bool) {
	t.Helper()
	defer runClient(t, c)()
	waitUntil(t, 10*time.Second, what, cond)
}

func newClient(t testing.TB, opts Options, ob Outbox, h CommandHandler) *Client {
	t.Helper()
	c, err := New(opts, ob, h)
	if err != nil {
		t.Fatalf("uplink.New: %v", err)
	}
	return c
}

func waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func enqueueUtterances(t testing.TB, st *buffer.Store, n int, offline bool, prefix string) []buffer.Entry {
	t.Helper()
	out := make([]buffer.Entry, 0, n)
	for i := range n {
		e, err := st.EnqueueUtterance(buffer.Record{Text: fmt.Sprintf("%s %d", prefix, i), Lang: "en", StartedAt: time.Now(),
			DurationMS: 1000, Source: "typed", Offline: offline})
		if err != nil {
			t.Fatalf("enqueue utterance %d: %v", i, err)
		}
		out = append(out, e)
	}
	return out
}

type wireMsg struct {
	V        int    `json:"v"`
	Type     string `json:"type"`
	ID       string `json:"id"`
	Seq      uint64 `json:"seq"`
	DeviceID string `json:"device_id"`
	Offline  bool   `json:"offline"`
	Text     string `json:"text"`
	Online   bool   `json:"online"`
	Count    int    `json:"count"`
	OK       bool   `json:"ok"`
	CmdID    string `json:"command_id"`
	Context  *struct {
		IsOfflineBatch bool `json:"isOfflineBatch"`
		MessageCount   int  `json:"messageCount"`
	} `json:"context"`
	Items []protocol.Item `json:"items"`
}

func decode(t testing.TB, msgs []brokertest.Message) []wireMsg {
	t.Helper()
	out := make([]wireMsg, len(msgs))
	for i, m := range msgs {
		if err := json.Unmarshal(m.Payload, &out[i]); err != nil {
			t.Fatalf("message %d on %s is not JSON: %v: %s", i, m.Topic, err, m.Payload)
		}
	}
	return out
}

// distinct counts distinct ids.
func distinct(t testing.TB, msgs []brokertest.Message) int {
	seen := map[string]bool{}
	for _, m := range decode(t, msgs) {
		seen[m.ID] = true
	}
	return len(seen)
}

// checkDelivery asserts at-least-once, in-order delivery of want: every
// entry arrived, duplicates carry the same id and seq, and the first
// occurrences are in seq order.
func checkDelivery(t testing.TB, got []wireMsg, want map[string]uint64) {
	t.Helper()
	seen := map[string]uint64{}
	var last uint64
	dups := 0
	for i, m := range got {
		if s, ok := seen[m.ID]; ok {
			dups++
			if s != m.Seq {
				t.Errorf("duplicate of %s with seq %d, first had %d", m.ID, m.Seq, s)
			}
			continue
		}
		seen[m.ID] = m.Seq
		if m.Seq <= last {
			t.Errorf("message %d (id %s) seq %d after seq %d: out of order", i, m.ID, m.Seq, last)
		}
		last = m.Seq
	}
	missing := 0
	for id, seq := range want {
		s, ok := seen[id]
		if !ok {
			missing++
			if missing <= 5 {
				t.Errorf("entry %s (seq %d) never delivered", id, seq)
			}
		} else if s != seq {
			t.Errorf("entry %s delivered with seq %d, stored with %d", id, s, seq)
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d entries missing", missing, len(want))
	}
	t.Logf("%d messages received, %d distinct, %d duplicates", len(got), len(seen), dups)
}
