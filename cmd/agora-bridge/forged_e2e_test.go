package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
)

// Issue 49, end to end: a stranger on the broker reads the daemon's
// store_id from its retained status and publishes one utterance as the
// daemon with seq 999999999. The built bridge parks it (seq_jump) and the
// daemon's next real question is answered by the reference graph (before,
// every later message of the device was parked as seq_regression).
func TestEndToEndForgedSeqJump(t *testing.T) {
	g := e2eGraph(t)
	broker := brokertest.Start(t)
	cmds := broker.Subscribe(t, "agora/v1/+/commands")
	br, stateDir := e2eBridge(t, broker.URL(), g.URL())
	const devID = "inspector-49"
	dev := e2eAgorad(t, broker.URL(), devID, func(c *configs.Config) { c.Mode = "feedback" })
	replied := func(text string) bool {
		_, ok := cmds.WaitFor(60*time.Second, func(m []brokertest.Message) bool {
			for _, msg := range m {
				var c protocol.ReplyCommand
				if json.Unmarshal(msg.Payload, &c) == nil && c.Type == protocol.CmdReply && strings.Contains(c.Text, text) {
					return true
				}
			}
			return false
		})
		return ok
	}
	dev.Ctl("say", "Is de eerste balk droog?")
	if !replied("eerste balk") {
		t.Fatalf("no answer to the first question\nbridge log:\n%s", tail(br.Log(), 3000))
	}
	status := brokertest.SubscribeURL(t, broker.URL(), protocol.Topic(devID, protocol.TopicStatus))
	msgs, ok := status.WaitCount(1, 10*time.Second)
	if !ok {
		t.Fatal("no retained status")
	}
	var st protocol.StatusMessage
	if err := json.Unmarshal(msgs[0].Payload, &st); err != nil || st.StoreID == "" {
		t.Fatalf("status %s: %v", msgs[0].Payload, err)
	}
	stranger := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("stranger"))
	if tok := stranger.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	defer stranger.Disconnect(100)
	forged, _ := json.Marshal(protocol.Utterance{Envelope: protocol.Envelope{V: 1, Type: protocol.TypeUtterance,
		ID: "forged-019c0000", Seq: 999999999, DeviceID: devID, StoreID: st.StoreID, CreatedAt: protocol.FormatTime(time.Now())},
		Text: "forged", Lang: "nl"})
	if tok := stranger.Publish(protocol.Topic(devID, protocol.TopicUtterances), 1, false, forged); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	time.Sleep(time.Second)
	dev.Ctl("say", "En de tweede balk?")
	if !replied("tweede balk") {
		t.Fatalf("the daemon's next question was not answered after the forged seq\nbridge log:\n%s", tail(br.Log(), 3000))
	}
	out, err := exec.Command(binPath, "deadletters", "--state-dir", stateDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "forged-019c0000") || !strings.Contains(string(out), "seq_jump") {
		t.Errorf("deadletters: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "seq_regression") {
		t.Errorf("a real message parked as seq_regression:\n%s", out)
	}
}
