package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/configs"
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
	g := e2eGraph(t)
	broker := brokertest.Start(t)
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	br, stateDir := e2eBridge(t, broker.URL(), g.URL())
	dev := e2eAgorad(t, broker.URL(), "inspector-7", func(c *configs.Config) { c.MQTT.BatchAckRequired = true })
	ctl := dev.Ctl
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
		t.Fatalf("replies %+v, acked %v\nbridge log:\n%s\nagorad log:\n%s", replies, acked, br.Log(), dev.Log())
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
