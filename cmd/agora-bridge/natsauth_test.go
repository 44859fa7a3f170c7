package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// TestFleetAuthorizedNATS: a fleet set up as docs/bridge.md says, with
// agora-bridge nats-passwd and nats-config: the bridge (its user from
// broker.username / password_file, for both listeners) answers a device
// with its own credentials; a device set up with another's device_id but
// its own credentials (a forger) reaches nobody; a device with a wrong
// password does not connect.
func TestFleetAuthorizedNATS(t *testing.T) {
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	pw := map[string]string{}
	for _, u := range []string{"agora-bridge", "dev1", "dev2"} {
		var out, errb bytes.Buffer
		if code := dispatch(t.Context(), []string{"nats-passwd", passwd, u}, &out, &errb); code != exitOK {
			t.Fatalf("nats-passwd %s: exit %d: %s", u, code, errb.String())
		}
		pw[u] = strings.TrimSpace(out.String())
	}
	var errb bytes.Buffer
	if code := dispatch(t.Context(), []string{"nats-passwd", passwd, "site.7"}, io.Discard, &errb); code == exitOK ||
		!strings.Contains(errb.String(), "subject separator") {
		t.Errorf("nats-passwd took a device id with '.': exit %d, %q", code, errb.String())
	}
	const partitions = 4
	srv := brokertest.StartNATSWith(t, func(port, mqttPort int, storeDir string) (string, error) {
		var out, errb bytes.Buffer
		if code := dispatch(t.Context(), []string{"nats-config", "--passwd", passwd, "--partitions", strconv.Itoa(partitions),
			"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--mqtt-listen", fmt.Sprintf("127.0.0.1:%d", mqttPort),
			"--store-dir", storeDir}, &out, &errb); code != exitOK {
			return "", fmt.Errorf("nats-config: exit %d: %s", code, errb.String())
		}
		return out.String(), nil
	})
	g := startGraph(t)

	pwFile := filepath.Join(dir, "bridge-password")
	if err := os.WriteFile(pwFile, []byte(pw["agora-bridge"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "bridge.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("broker:\n  username: agora-bridge\n  password_file: %s\njetstream:\n  ack_wait: 5s\n", pwFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	br := fleetsim.NewProc("bridge", "", nil, binPath, "run", "-c", cfg, "--broker", srv.MQTTURL(), "--nats", srv.URL(),
		"--partitions", strconv.Itoa(partitions), "--agui-url", g.url, "--state-dir", filepath.Join(dir, "state"), "--log-level", "info")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Stop)

	waitFor := func(what string, d time.Duration, ok func() bool) bool {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if ok() {
				return true
			}
		}
		t.Errorf("%s: not within %v", what, d)
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	device := func(id, user, password string) (*uplink.Client, *fleetsim.MemOutbox) {
		ob := fleetsim.NewMemOutbox()
		c, err := uplink.New(uplink.Options{DeviceID: id, BrokerURL: srv.MQTTURL(), Username: user, Password: password,
			BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second, KeepAlive: 30 * time.Second, ConnectTimeout: 5 * time.Second,
			PublishTimeout: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Status: func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "test"} }}, ob, nil)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return c, ob
	}
	// The bridge makes the stream that keeps the devices' data before it
	// logs that it runs; published earlier, a question would be lost.
	if !waitFor("the bridge running", time.Minute, func() bool { return strings.Contains(br.Log(), "agora-bridge running") }) {
		t.Fatalf("bridge log:\n%s", br.Log())
	}
	honest, honestOut := device("dev1", "dev1", pw["dev1"])
	forger, forgerOut := device("dev2", "dev1", pw["dev1"]) // dev2's id, dev1's credentials
	wrong, _ := device("dev2", "dev2", pw["dev1"])
	waitFor("dev1 and the forger online", 30*time.Second, func() bool { return honest.Online() && forger.Online() })

	mine, err := honestOut.Say("is this railing high enough")
	if err != nil {
		t.Fatal(err)
	}
	forged, err := forgerOut.Say("forged question as dev2")
	if err != nil {
		t.Fatal(err)
	}
	// The outbox empties on the server's PUBACK: the graph's own count of
	// runs is what says the bridge ran the question.
	if !waitFor("dev1's question run", 2*time.Minute, func() bool { return g.runsByMessage(t)[mine.ID] > 0 }) {
		t.Logf("bridge log:\n%s", br.Log())
	}
	time.Sleep(2 * time.Second) // a forged message that got through would have run by now
	runs := g.runsByMessage(t)
	if runs[mine.ID] != 1 {
		t.Errorf("dev1's question: %d runs, want 1", runs[mine.ID])
	}
	if runs[forged.ID] != 0 {
		t.Errorf("the forged question as dev2 ran %d times", runs[forged.ID])
	}
	// (The forger's own outbox empties all the same: the server PUBACKs a
	// publish it refuses, as mosquitto does; agorad doctor warns of a
	// username that is not the device_id.)
	if wrong.Online() {
		t.Error("a device with a wrong password is online")
	}
	if log := srv.Log(); !strings.Contains(log, `Publish Violation - User "dev1"`) {
		t.Errorf("the server did not refuse the forger's publish:\n%s", log)
	}
}
