package bridge

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agora/agorad/sync/brokertest"
)

// refusingKV is the real bucket with Purge refused.
type refusingKV struct{ nats.KeyValue }

func (refusingKV) Purge(string, ...nats.DeleteOpt) error {
	return errors.New("purge refused by the test")
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// Issue 48: the KV store dropped the errors of cleaning a committed batch's
// parts (left as unused space with no word). The commit still succeeds (the
// record is what counts) and the log says what was not dropped and why.
func TestKVStoreLogsPartCleanupErrors(t *testing.T) {
	n := brokertest.StartNATS(t, 1)
	var logs lockedBuf
	js, err := ConnectJetStream(JetStreamOptions{URL: n.URL(), Partitions: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer js.Close()
	s := js.Store().(*KVStore)
	if _, err := s.PutPart("dev1", "b1", 1, 2, []byte(`{"part":1}`)); err != nil {
		t.Fatal(err)
	}
	s.kv = refusingKV{s.kv}
	if err := s.Commit("dev1", "b1", Record{}, DeviceState{}, nil); err != nil {
		t.Fatalf("commit failed for a cleanup error: %v", err)
	}
	got := logs.String()
	for _, want := range []string{"dropping a part of a committed batch", "purge refused by the test", "id=b1"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}
