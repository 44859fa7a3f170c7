package bridge

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/sync/brokertest"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Issue 49: the bridge says at start when the broker is open (it lets a
// client in without credentials), and not on a broker set up as shipped
// (passwords, the ACL of configs/mosquitto). Real mosquitto both times.
func TestBridgeWarnsOpenBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	acl, err := os.ReadFile("../../configs/mosquitto/acl")
	if err != nil {
		t.Fatal(err)
	}
	secured := brokertest.Start(t, brokertest.WithPassword("agora-bridge", "s3cret"),
		brokertest.WithACL(strings.Split(string(acl), "\n")...), brokertest.WithConfig("max_queued_messages 1000000"))
	open := brokertest.Start(t)
	for _, tc := range []struct {
		name, url, user, pass string
		warn                  bool
	}{
		{"open", open.URL(), "", "", true},
		{"shipped set-up", secured.URL(), "agora-bridge", "s3cret", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncBuf
			m, err := NewMQTT(MQTTOptions{BrokerURL: tc.url, ClientID: "bridge-" + tc.name, Username: tc.user, Password: tc.pass,
				NoSubscribe: true, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx, nil, nil) }()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(log.String(), "without credentials") && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(log.String(), "level=WARN msg=\"BROKER IS OPEN")
			if warned != tc.warn {
				t.Fatalf("warned %v, want %v; log:\n%s", warned, tc.warn, log.String())
			}
		})
	}
}
