package brokertest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// NATSBinary is the nats-server executable used by StartNATS.
var NATSBinary = "/usr/sbin/nats-server"

// NATS is a nats-server (JetStream + MQTT listener) owned by a test: the
// fleet broker of docs/bridge.md, with the partition mapping of device
// subjects into agora.in.<partition>.<device>.<topic>.
type NATS struct {
	t          testing.TB
	dir        string
	port, mqtt int
	conf       string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// NATSPartitionedTopics are the device topics the mapping partitions; status
// stays on agora.v1.<device>.status (retained, read by every bridge).
var NATSPartitionedTopics = []string{"utterances", "batches", "events", "acks"}

// NATSConfig renders the server configuration of docs/bridge.md: JetStream
// in storeDir, MQTT on mqttPort, client port port, and the account mapping
// that puts each device's messages into one of partitions partitions.
func NATSConfig(port, mqttPort int, storeDir string, partitions int) string {
	var m []string
	for _, topic := range NATSPartitionedTopics {
		m = append(m, fmt.Sprintf("    \"agora.v1.*.%s\": \"agora.in.{{partition(%d,1)}}.{{wildcard(1)}}.%s\"", topic, partitions, topic))
	}
	return fmt.Sprintf(`server_name: agora-test
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
}
mqtt {
  listen: 127.0.0.1:%d
  ack_wait: "5s"
}
mappings = {
%s
}
`, port, storeDir, mqttPort, strings.Join(m, "\n"))
}

// StartNATS runs nats-server with partitions partitions on free loopback
// ports and stops it in t.Cleanup.
func StartNATS(t testing.TB, partitions int) *NATS {
	t.Helper()
	if _, err := os.Stat(NATSBinary); err != nil {
		t.Skipf("nats-server not installed (%s): %v", NATSBinary, err)
	}
	n, err := NewNATS(t.TempDir(), partitions)
	if err != nil {
		t.Fatal(err)
	}
	n.t = t
	t.Cleanup(n.Stop)
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	return n
}

// NewNATS prepares a server in dir without starting it (for benchmarks).
func NewNATS(dir string, partitions int) (*NATS, error) {
	p1, err := freePort()
	if err != nil {
		return nil, err
	}
	p2, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &NATS{dir: dir, port: p1, mqtt: p2, conf: filepath.Join(dir, "nats.conf")}
	if err := os.WriteFile(n.conf, []byte(NATSConfig(p1, p2, filepath.Join(dir, "js"), partitions)), 0o600); err != nil {
		return nil, err
	}
	return n, nil
}

// URL is the NATS client URL (nats://127.0.0.1:PORT).
func (n *NATS) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// MQTTURL is the MQTT listener for paho (tcp://127.0.0.1:PORT).
func (n *NATS) MQTTURL() string { return fmt.Sprintf("tcp://127.0.0.1:%d", n.mqtt) }

// Run starts the server and waits until both listeners accept connections.
func (n *NATS) Run() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return nil
	}
	log := &bytes.Buffer{}
	cmd := exec.Command(NATSBinary, "-c", n.conf)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nats-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(15 * time.Second)
	for _, port := range []int{n.port, n.mqtt} {
		for {
			select {
			case <-done:
				return fmt.Errorf("nats-server exited at start: %s", log.String())
			default:
			}
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				<-done
				return errors.New("nats-server did not listen within 15s: " + log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	n.cmd, n.done, n.log = cmd, done, log
	return nil
}

// Stop shuts the server down (SIGTERM).
func (n *NATS) Stop() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	n.cmd = nil
}

// Log is what the server logged.
func (n *NATS) Log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.log == nil {
		return ""
	}
	return n.log.String()
}
