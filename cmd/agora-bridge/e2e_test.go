package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/bridge/fleetsim"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

func buildTool(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// End to end on the real components: agorad (typed input through agoractl)
// → mosquitto → agora-bridge → the reference graph → reply and ack back.
// A listen round (three notes, then "AGORA, …") reaches the graph as one
// batch run whose notes reach the answer (and report_notes), and the question's one
// reply names them; the device deletes the batch on the bridge's ack.
func TestEndToEndAgoradBridgeRefgraph(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: agorad, mosquitto, the reference graph (Python)")
	}
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "refgraph")); err != nil {
		t.Skip("no refgraph/")
	}
	g, err := fleetsim.StartRefGraph(t.Context(), root, "REFGRAPH_DB="+filepath.Join(t.TempDir(), "cp.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	broker := brokertest.Start(t)
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	agorad, agoractl := buildTool(t, "github.com/agora/agorad/cmd/agorad"), buildTool(t, "github.com/agora/agorad/cmd/agoractl")

	stateDir := t.TempDir()
	br := fleetsim.NewProc("bridge", "", nil, binPath, "run", "--broker", broker.URL(), "--agui-url", g.URL(),
		"--state-dir", stateDir, "--log-level", "debug")
	if err := br.Start(); err != nil {
		t.Fatal(err)
	}
	defer br.Stop()

	dir := t.TempDir()
	cfg := configs.Default()
	cfg.DeviceID = "inspector-7"
	cfg.Mode = "listen"
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Control.Socket = filepath.Join(dir, "agorad.sock")
	cfg.MQTT.Broker = broker.URL()
	cfg.MQTT.BatchAckRequired = true
	cfg.MQTT.ReconnectMin = configs.Duration(100 * time.Millisecond)
	cfg.MQTT.ReconnectMax = configs.Duration(500 * time.Millisecond)
	cfg.Input.Source = "none"
	cfg.Sounds.Enabled = false
	cfg.Metrics.Listen = ""
	cfg.Models.VAD = testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin")
	cfg.Models.Whisper = testaudio.Model(t, "for-tests-ggml-tiny.bin")
	yb, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "agorad.yaml")
	os.WriteFile(cfgPath, yb, 0o600)
	var dlog bytes.Buffer
	d := exec.Command(agorad, "run", "-c", cfgPath)
	d.Stdout, d.Stderr = &dlog, &dlog
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { d.Process.Signal(syscall.SIGTERM); d.Wait() }()
	ctl := func(args ...string) string {
		t.Helper()
		var out []byte
		var err error
		for i := 0; i < 600; i++ { // until the control socket answers (the model loads first)
			out, err = exec.Command(agoractl, append([]string{"--socket", cfg.Control.Socket}, args...)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "not running") && !strings.Contains(string(out), "connect") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("agoractl %v: %v: %s\nagorad log:\n%s", args, err, out, dlog.String())
		}
		return string(out)
	}
	notes := []string{"Scheur in de balk bij as drie.", "Roest aan de noordgevel.", "Vochtplek in het plafond."}
	for _, n := range notes {
		ctl("say", n)
	}
	ctl("say", "AGORA, wat vind je ervan?")
	ctl("say", "Is de balk nog veilig?")

	var replies []protocol.ReplyCommand
	acked := map[string]bool{}
	_, ok := cmds.WaitFor(60*time.Second, func(m []brokertest.Message) bool {
		replies, acked = replies[:0], map[string]bool{}
		for _, msg := range m {
			var c struct {
				protocol.ReplyCommand
				IDs []string `json:"ids"`
			}
			json.Unmarshal(msg.Payload, &c)
			if c.Type == "reply" {
				replies = append(replies, c.ReplyCommand)
			}
			for _, id := range c.IDs {
				acked[id] = true
			}
		}
		return len(replies) >= 2 && len(acked) >= 3
	})
	if !ok {
		t.Fatalf("replies %+v, acked %v\nbridge log:\n%s\nagorad log:\n%s", replies, acked, br.Log(), dlog.String())
	}
	if len(replies) != 2 {
		t.Fatalf("%d replies, want 2 (none for the batch): %+v", len(replies), replies)
	}
	for _, n := range notes {
		if !strings.Contains(replies[0].Text, strings.TrimSuffix(n, ".")) {
			t.Errorf("the reply to the question does not name the note %q: %q", n, replies[0].Text)
		}
	}
	if !strings.Contains(replies[0].Text, "wat vind je ervan") || !strings.Contains(replies[1].Text, "Is de balk nog veilig") {
		t.Errorf("replies %q / %q", replies[0].Text, replies[1].Text)
	}
	// The graph's own record: one batch run, then the two questions, once each.
	th, err := g.Thread("inspector-7")
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := th["runs"].([]any)
	var kinds []string
	for _, r := range runs {
		kinds = append(kinds, r.(map[string]any)["kind"].(string))
	}
	if strings.Join(kinds, ",") != "batch,utterance,utterance" {
		t.Errorf("graph runs %v, want batch,utterance,utterance", kinds)
	}
	for id, n := range th["runs_by_message"].(map[string]any) {
		if n.(float64) != 1 {
			t.Errorf("message %s ran %v times", id, n)
		}
	}
	// The answer used the notes once; they stay for reports in report_notes.
	rn, _ := json.Marshal(th["report_notes"])
	for _, n := range notes {
		if !strings.Contains(string(rn), strings.TrimSuffix(n, ".")) {
			t.Errorf("report_notes lack %q: %s", n, rn)
		}
	}
	// A message the graph rejects is parked with its reason; the device's
	// next message goes on.
	ctl("say", "[refgraph:reject] dit wordt geweigerd")
	ctl("say", "En de kolom daarnaast?")
	if _, ok := cmds.WaitFor(60*time.Second, func(m []brokertest.Message) bool {
		for _, msg := range m {
			if strings.Contains(string(msg.Payload), "En de kolom daarnaast") {
				return true
			}
		}
		return false
	}); !ok {
		t.Fatalf("no reply after a rejected message:\n%s", br.Log())
	}
	if !strings.Contains(br.Log(), "message parked as a dead letter") || !strings.Contains(br.Log(), "reject") {
		t.Errorf("no park log for the rejected message:\n%s", br.Log())
	}
	// The device deletes the batch only on the bridge's ack (batch_ack_required).
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := ctl("--json", "status")
		var st struct {
			Outbox int `json:"outbox"`
		}
		json.Unmarshal([]byte(out), &st)
		if st.Outbox == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("device outbox still %d: %s", st.Outbox, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	br.Stop()
	out, err := exec.Command(binPath, "deadletters", "--state-dir", stateDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "inspector-7") || !strings.Contains(string(out), "RUN_ERROR") {
		t.Errorf("deadletters: %v\n%s", err, out)
	}
}
