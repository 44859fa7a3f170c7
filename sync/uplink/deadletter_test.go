package uplink

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
)

// TestGarbledOutboxEntryBecomesDeadLetter garbles one outbox entry's bytes
// in Badger's value log (the real file) among 53 and checks, against a real
// mosquitto, that the store still opens, the entry goes out as a dead letter
// with its seq and the 52 around it are delivered in seq order: one
// unreadable entry must not block the queue (issue 9, item 3).
func TestGarbledOutboxEntryBecomesDeadLetter(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	dir := filepath.Join(t.TempDir(), "store")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := buffer.Open(dir, buffer.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// Utterances above the value threshold (1 KiB) live in the value log,
	// one value each.
	var entries []buffer.Entry
	for i := range 53 {
		e, err := st.EnqueueUtterance(buffer.Record{Text: fmt.Sprintf("marker-%03d %s", i, strings.Repeat("roest ", 300)),
			Lang: "nl", StartedAt: time.Now(), DurationMS: 1000, Source: "typed"})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	const victim = 26
	garbled := false
	vlogs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	for _, p := range vlogs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(fmt.Sprintf("marker-%03d", victim))); i >= 0 {
			copy(b[i+100:], "GARBLED GARBLED GARBLED")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			garbled = true
		}
	}
	if !garbled {
		t.Fatal("victim entry not found in the value log")
	}

	st, err = buffer.Open(dir, buffer.Options{Logger: quiet})
	if err != nil {
		t.Fatalf("open store with one garbled outbox entry: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if st, err := st.Stats(); err != nil || st.Unreadable != 1 || st.OutboxData != 53 {
		t.Fatalf("at open: unreadable %d, outbox %d (%v), want 1 of 53", st.Unreadable, st.OutboxData, err)
	}
	b := brokertest.Start(t)
	sub := b.Subscribe(t, "agora/v1/dev-x/+")
	c := newClient(t, testOptions("dev-x", b.URL()), st, nil)
	runUntil(t, c, "outbox drained", func() bool { n, _ := st.OutboxCount(); return n == 0 })
	var data []brokertest.Message
	sub.WaitFor(10*time.Second, func(ms []brokertest.Message) bool {
		data = data[:0]
		for _, m := range ms {
			if !strings.HasSuffix(m.Topic, "/status") {
				data = append(data, m)
			}
		}
		return len(data) >= 53
	})
	got := decode(t, data)
	if len(got) != 53 {
		t.Fatalf("got %d messages, want 53", len(got))
	}
	delivered := 0
	for i, m := range got {
		e := entries[i]
		switch {
		case i == victim:
			if m.Type != "dead_letter" || m.Seq != e.Seq || data[i].Topic != "agora/v1/dev-x/events" ||
				!strings.Contains(string(data[i].Payload), "unreadable") {
				t.Errorf("message %d: %s %s, want the dead letter of seq %d", i, data[i].Topic, data[i].Payload, e.Seq)
			}
		case m.Type != "utterance" || m.ID != e.ID || m.Seq != e.Seq:
			t.Errorf("message %d: %s id %s seq %d, want utterance %s seq %d", i, m.Type, m.ID, m.Seq, e.ID, e.Seq)
		default:
			delivered++
		}
		if !strings.Contains(string(data[i].Payload), `"store_id":"`+st.StoreID()+`"`) {
			t.Errorf("message %d carries no store_id %s: %.200s", i, st.StoreID(), data[i].Payload)
		}
	}
	if st, err := st.Stats(); err != nil || st.Unreadable != 0 || st.OutboxData != 0 {
		t.Errorf("after delivery: unreadable %d, outbox %d (%v)", st.Unreadable, st.OutboxData, err)
	}
	if delivered != 52 {
		t.Errorf("%d of the 52 readable entries delivered", delivered)
	}
}
