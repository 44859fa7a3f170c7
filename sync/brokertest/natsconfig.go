package brokertest

import (
	"os"
	"path/filepath"
	"testing"
)

// StartNATSWith runs nats-server with the configuration render returns for
// its free loopback ports (client, MQTT) and JetStream directory, and stops
// it in t.Cleanup: for configurations other than NATSConfig's (users and
// permissions).
func StartNATSWith(t testing.TB, render func(port, mqttPort int, storeDir string) (string, error)) *NATS {
	t.Helper()
	if _, err := os.Stat(NATSBinary); err != nil {
		t.Skipf("nats-server not installed (%s): %v", NATSBinary, err)
	}
	dir := t.TempDir()
	p1, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	conf, err := render(p1, p2, filepath.Join(dir, "js"))
	if err != nil {
		t.Fatal(err)
	}
	n := &NATS{t: t, dir: dir, port: p1, mqtt: p2, conf: filepath.Join(dir, "nats.conf")}
	if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	if err := n.Run(); err != nil {
		t.Fatal(err)
	}
	return n
}
