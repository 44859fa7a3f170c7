package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agora-bridge-bin")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "agora-bridge")
	if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build agora-bridge: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("agent:\n  url: http://127.0.0.1:1/agui\n  timout: 3s\n"), 0o600)
	badDur := filepath.Join(dir, "dur.yaml")
	os.WriteFile(badDur, []byte("retry:\n  max: soon\n"), 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--state-dir", dir}, "agent.url: required"},
		{[]string{"run", "--agui-url", "ftp://x/agui", "--state-dir", dir}, "agent.url"},
		{[]string{"run", "--agui-url", "http://127.0.0.1:1/agui"}, "state.dir: required"},
		{[]string{"run", "--broker", "127.0.0.1:1883", "--agui-url", "http://127.0.0.1:1/agui", "--state-dir", dir}, "broker.url"},
		{[]string{"run", "-c", bad, "--state-dir", dir}, "timout"},
		{[]string{"run", "-c", badDur, "--agui-url", "http://127.0.0.1:1/agui", "--state-dir", dir}, "not a duration"},
		{[]string{"run", "--nats", "nats://127.0.0.1:4222", "--partitions", "99999", "--agui-url", "http://127.0.0.1:1/agui", "--state-dir", dir}, "jetstream.partitions"},
		{[]string{"frobnicate"}, "unknown command"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		code := dispatch(t.Context(), tt.args, io.Discard, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The binary as systemd runs it: answers a device, serves metrics, and
// stops cleanly on SIGTERM; a restart with the same state directory keeps
// its de-duplication records.
func TestRunBinary(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	state := t.TempDir()
	metrics := freeAddr(t)
	start := func() (*exec.Cmd, *bytes.Buffer) {
		var log bytes.Buffer
		cmd := exec.Command(binPath, "run", "--broker", broker.URL(), "--agui-url", agent.URL, "--state-dir", state,
			"--metrics", metrics, "--log-level", "debug")
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &log
	}
	cmd, log := start()
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("raw-pub"))
	if tok := pub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer pub.Disconnect(100)
	u := protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: "utterance", ID: "019c0000-0000-7000-8000-00000000abcd",
		Seq: 7, DeviceID: "hh-1", CreatedAt: protocol.FormatTime(time.Now())}, Text: "is this weld ok", Lang: "en"}
	payload, _ := json.Marshal(u)
	// The bridge's session may not exist yet: publish until it answers.
	msgs, ok := cmds.WaitFor(20*time.Second, func(m []brokertest.Message) bool {
		if len(m) < 2 {
			pub.Publish("agora/v1/hh-1/utterances", 1, false, payload).Wait()
			return false
		}
		return true
	})
	if !ok {
		t.Fatalf("no reply and ack; log:\n%s", log.String())
	}
	var reply protocol.ReplyCommand
	json.Unmarshal(msgs[0].Payload, &reply)
	if reply.Type != "reply" || reply.InReplyTo != u.ID || reply.Text != "echo: is this weld ok" || msgs[0].Topic != "agora/v1/hh-1/commands" {
		t.Errorf("first command %s on %s", msgs[0].Payload, msgs[0].Topic)
	}
	// The hand-over metrics are set just after the ack is confirmed, which
	// the subscriber may see first: scrape until they are there.
	wantMetrics := []string{`agora_bridge_runs_total{result="ok"}`, "agora_bridge_run_duration_seconds_bucket",
		`agora_bridge_device_lag_seconds{device="hh-1"}`, `agora_bridge_messages_total{outcome="run",type="utterance"}`}
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		missing = missing[:0]
		for _, want := range wantMetrics {
			if !strings.Contains(string(body), want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, m := range missing {
		t.Errorf("metrics lack %s", m)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, log.String())
	}
	runs := len(agent.Runs())
	cmd, log = start()
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	n := cmds.Count()
	pub.Publish("agora/v1/hh-1/utterances", 1, false, payload).Wait()
	if _, ok := cmds.WaitCount(n+2, 15*time.Second); !ok {
		t.Fatalf("no answer to the duplicate after restart:\n%s", log.String())
	}
	if len(agent.Runs()) != runs {
		t.Errorf("the duplicate ran again after a restart (%d runs, had %d)", len(agent.Runs()), runs)
	}
}
