package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/agui/aguitest"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// A listen buffer far larger than one message (issue 27), on the built
// agora-bridge, mosquitto and the reference graph, with the device's real
// store and uplink: the bridge is killed (-9) while the batch's parts
// arrive, restarted, and the graph holds every note once, in order, from
// one batch run, under both delivery modes; the device's outbox empties.
// AGORA_BIG_BATCH_NOTES sets the size (default 10,000, issue 27's; about 7 s).
func TestEndToEndBigBatchBridgeKill9(t *testing.T) {
	n := envInt("AGORA_BIG_BATCH_NOTES", 10000)
	g := e2eGraph(t)
	note := func(i int) string {
		return fmt.Sprintf("Notitie %05d: scheur in de las bij spant vier, noordkolom, tweede verdieping.", i)
	}
	for _, delivery := range []string{uplink.DeliveryBroker, uplink.DeliveryBackend} {
		t.Run(delivery, func(t *testing.T) {
			broker := brokertest.Start(t)
			br, stateDir := e2eBridge(t, broker.URL(), g.URL())
			deviceID := "big-" + delivery
			st := e2eStore(t)
			for i := range n {
				if _, err := st.AppendListen(buffer.Record{Text: note(i), Lang: "nl", StartedAt: time.Now(), DurationMS: 1500, Source: "typed"}); err != nil {
					t.Fatal(err)
				}
			}
			batch, flushed, err := st.FlushListen(false)
			if err != nil || flushed != n {
				t.Fatalf("flush: %d notes, %v", flushed, err)
			}
			up := e2eUplink(t, uplink.Options{DeviceID: deviceID, BrokerURL: broker.URL(), Delivery: delivery, AckTimeout: 5 * time.Second,
				Status: func() protocol.Status { return protocol.Status{Mode: "listen", Version: "test"} }}, st)

			// Kill the bridge as soon as it has kept a part.
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(br.Log(), "batch part kept") {
				if time.Now().After(deadline) {
					t.Fatalf("no batch part reached the bridge:\n%s", tail(br.Log(), 4000))
				}
				time.Sleep(2 * time.Millisecond)
			}
			br.Kill9()
			killedAt := strings.Count(br.Log(), "batch part kept")
			if err := br.Start(); err != nil {
				t.Fatal(err)
			}
			deadline = time.Now().Add(120 * time.Second)
			for {
				c, _ := st.OutboxCount()
				th, _ := g.Thread(deviceID)
				if c == 0 && th != nil {
					if rbm, _ := th["runs_by_message"].(map[string]any); rbm[batch.ID] != nil {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("outbox %d, thread %v\nbridge log:\n%s", c, th != nil, tail(br.Log(), 4000))
				}
				time.Sleep(100 * time.Millisecond)
			}
			th, err := g.Thread(deviceID)
			if err != nil {
				t.Fatal(err)
			}
			rbm := th["runs_by_message"].(map[string]any)
			if len(rbm) != 1 || rbm[batch.ID].(float64) != 1 {
				t.Errorf("graph runs by message %v, want the batch %s once", rbm, batch.ID)
			}
			buf, _ := th["message_buffer"].([]any)
			if len(buf) != n {
				t.Fatalf("graph holds %d notes, want %d", len(buf), n)
			}
			for i, m := range buf {
				if c, _ := m.(map[string]any)["content"].(string); c != note(i) {
					t.Fatalf("graph note %d is %q, want %q", i, c, note(i))
				}
			}
			t.Logf("%d notes, killed after %d part(s) kept; device: %+v", n, killedAt, up.Stats())
			if up.Stats().Confirmed < 1 { // parts wait for the bridge's ack in both modes
				t.Errorf("the bridge never confirmed the batch to the device")
			}
			br.Stop()
			out, err := exec.Command(binPath, "deadletters", "--state-dir", stateDir).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "" {
				t.Errorf("dead letters after a clean batch: %v %s", err, out)
			}
		})
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// A message the bridge refuses is parked whole and `agora-bridge
// deadletters` lists it while the bridge runs (and after it stopped).
func TestDeadLettersWhileRunning(t *testing.T) {
	broker := brokertest.Start(t)
	agent := aguitest.Start()
	defer agent.Close()
	br, stateDir := e2eBridge(t, broker.URL(), agent.URL)
	c := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("raw-dl"))
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer c.Disconnect(100)
	payload, _ := json.Marshal(protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance,
		ID: "019c0000-0000-7000-8000-0000000000dl", Seq: 1, DeviceID: "dl-1", CreatedAt: protocol.FormatTime(time.Now())},
		Text: strings.Repeat("far too long ", protocol.MaxMessageBytes/13+100)})
	if tok := c.Publish("agora/v1/dl-1/utterances", 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish: %v", tok.Error())
	}
	list := func() string {
		out, err := exec.Command(binPath, "deadletters", "--state-dir", stateDir).CombinedOutput()
		if err != nil {
			t.Fatalf("deadletters: %v\n%s", err, out)
		}
		return string(out)
	}
	want := []string{"dl-1", "019c0000-0000-7000-8000-0000000000dl", fmt.Sprintf("%d bytes", len(payload)), "oversize"}
	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		out = list()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(out, w)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deadletters while running:\n%s\nbridge log:\n%s", out, tail(br.Log(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(out, "listing") {
		t.Errorf("deadletters did not say it read the files of a running bridge:\n%s", out)
	}
	br.Stop()
	if out := list(); !strings.Contains(out, "019c0000-0000-7000-8000-0000000000dl") {
		t.Errorf("deadletters after the stop:\n%s", out)
	}
	if len(agent.Runs()) != 0 {
		t.Errorf("the refused message ran")
	}
}

// An answer of over 200 KB (the reference graph's echo model answers with
// the notes it holds) reaches the device whole: the built bridge sends it
// as numbered reply commands, each accepted by the device's own command
// parser, which together are the graph's final_written.
func TestEndToEndLongAnswer(t *testing.T) {
	g := e2eGraph(t)
	broker := brokertest.Start(t)
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	br, _ := e2eBridge(t, broker.URL(), g.URL())
	const deviceID = "long-answer-1"
	st := e2eStore(t)
	for i := range 2700 {
		if _, err := st.AppendListen(buffer.Record{Text: fmt.Sprintf("Notitie %04d: roest aan de noordgevel bij de tweede kolom, foto genomen.", i),
			Lang: "nl", StartedAt: time.Now(), Source: "typed"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.FlushListen(false); err != nil {
		t.Fatal(err)
	}
	q, err := st.EnqueueUtterance(buffer.Record{Text: "AGORA, wat heb ik allemaal genoteerd?", Lang: "nl", StartedAt: time.Now(), Source: "typed"})
	if err != nil {
		t.Fatal(err)
	}
	up := e2eUplink(t, uplink.Options{DeviceID: deviceID, BrokerURL: broker.URL(), Delivery: uplink.DeliveryBackend, AckTimeout: 30 * time.Second,
		Status: func() protocol.Status { return protocol.Status{Mode: "feedback", Version: "test"} }}, st)

	isAck := func(m brokertest.Message) bool {
		cmd, err := protocol.ParseCommand(deviceID, m.Payload)
		return err == nil && cmd.Type == protocol.CmdAck && cmd.IDs[0] == q.ID
	}
	msgs, ok := cmds.WaitFor(120*time.Second, func(m []brokertest.Message) bool {
		for _, x := range m {
			if isAck(x) {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no ack of the question\n%s", tail(br.Log(), 4000))
	}
	th, err := g.Thread(deviceID)
	if err != nil {
		t.Fatal(err)
	}
	written, _ := th["final_written"].(string)
	if len(written) < 200<<10 {
		t.Fatalf("the graph answered %d bytes; the test needs over 200 KB", len(written))
	}
	var text strings.Builder
	seen := map[string]bool{}
	n := 0
	for _, m := range msgs {
		cmd, err := protocol.ParseCommand(deviceID, m.Payload)
		if err != nil {
			t.Fatalf("the device refuses a command of %d bytes: %v", len(m.Payload), err)
		}
		if cmd.Type != protocol.CmdReply || cmd.Reply.InReplyTo != q.ID || seen[cmd.ID] {
			continue
		}
		seen[cmd.ID] = true
		n++
		if !strings.HasPrefix(cmd.ID, fmt.Sprintf("reply-%s.p%dof", q.ID, n)) {
			t.Fatalf("reply part %d has id %s", n, cmd.ID)
		}
		text.WriteString(cmd.Reply.Text)
	}
	if strings.Join(strings.Fields(text.String()), " ") != strings.Join(strings.Fields(written), " ") {
		t.Fatalf("%d reply parts carry %d bytes; the graph's answer is %d", n, text.Len(), len(written))
	}
	t.Logf("answer of %d bytes in %d reply commands", len(written), n)
	if s := up.Stats(); s.RejectedCommands != 0 {
		t.Errorf("device rejected %d commands", s.RejectedCommands)
	}
}
