package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/brokertest"
)

// ackAll acknowledges, as agora-bridge does under delivery: backend, every
// utterance, batch and event sub received, until the test ends.
func ackAll(t *testing.T, b *brokertest.Broker, sub *brokertest.Subscriber, device, user, password string) {
	cli := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("bridge-" + device).SetUsername(user).SetPassword(password))
	if tok := cli.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("bridge connect: %v", tok.Error())
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	t.Cleanup(func() { cancel(); <-stopped; cli.Disconnect(100) })
	go func() {
		defer close(stopped)
		done := map[string]bool{}
		for n := 0; ctx.Err() == nil; n++ {
			time.Sleep(20 * time.Millisecond)
			var ids []string
			for _, m := range sub.Messages() {
				var v struct{ ID, Type string }
				if json.Unmarshal(m.Payload, &v) != nil || done[v.ID] {
					continue
				}
				if v.Type == "utterance" || v.Type == "batch" || v.Type == "event" {
					done[v.ID] = true
					ids = append(ids, v.ID)
				}
			}
			if len(ids) > 0 {
				body, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("bridge-%d", n), "type": "ack", "ids": ids})
				cli.Publish("agora/v1/"+device+"/commands", 1, false, body).WaitTimeout(5 * time.Second)
			}
		}
	}()
}

// Issue 9 "Done when": an ACL denies the device's data topics; with
// delivery: backend nothing is lost, agoractl status and /metrics show the
// unconfirmed count during the denial, and once the ACL is fixed (broker
// reloaded with SIGHUP) every utterance arrives, in seq order.
func TestRunACLDenialDeliveryBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: mosquitto with an ACL, agoractl build")
	}
	const dev = "inspector-7"
	denied := []string{"user " + dev,
		"topic read agora/v1/" + dev + "/commands",
		"topic write agora/v1/" + dev + "/status",
		"topic write agora/v1/" + dev + "/acks",
		"user backend", "topic readwrite agora/v1/#"}
	broker := brokertest.Start(t, brokertest.WithPassword(dev, "pw-dev"), brokertest.WithPassword("backend", "pw-be"), brokertest.WithACL(denied...))
	sub := broker.Subscribe(t, "agora/v1/"+dev+"/+", brokertest.WithAuth("backend", "pw-be"))
	ackAll(t, broker, sub, dev, "backend", "pw-be")

	cfg := baseConfig(t, broker.URL())
	cfg.Mode = "feedback"
	cfg.MQTT.Username, cfg.MQTT.Password = dev, "pw-dev"
	cfg.MQTT.Delivery, cfg.MQTT.AckTimeout = "backend", configs.Duration(time.Second)
	cfg.Metrics.Listen = freeLoopback(t)
	d := startDaemon(t, writeConfig(t, cfg), cfg.Control.Socket)

	texts := []string{"first question", "second question", "third question", "fourth question", "fifth question"}
	for _, s := range texts {
		if out, code := agoractl(t, d.socket, "say", s); code != 0 {
			t.Fatalf("agoractl say: exit %d: %s", code, out)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := status(t, d.socket)
		if st.Unconfirmed > 0 && metricValue(t, cfg.Metrics.Listen, "agorad_unconfirmed") > 0 {
			if st.Outbox != len(texts) {
				t.Errorf("outbox %d during the denial, want %d", st.Outbox, len(texts))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unconfirmed never shown: status %+v:\n%s", st, d.log.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("denial shown after %v", time.Since(deadline.Add(-20*time.Second)).Round(time.Millisecond))
	if out, _ := agoractl(t, d.socket, "status"); !strings.Contains(out, "check ACLs and the bridge") {
		t.Errorf("agoractl status does not explain the unconfirmed entries:\n%s", out)
	}
	if !strings.Contains(d.log.String(), "check ACLs and the bridge") {
		t.Errorf("daemon log has no hint:\n%s", d.log.String())
	}
	if n := len(dataMessages(sub.Messages())); n != 0 {
		t.Fatalf("%d data messages passed a denying ACL", n)
	}

	if err := broker.SetACL("user "+dev, "topic readwrite agora/v1/"+dev+"/#", "user backend", "topic readwrite agora/v1/#"); err != nil {
		t.Fatal(err)
	}
	if err := broker.Reload(); err != nil {
		t.Fatal(err)
	}
	// Usually seconds; once in a few runs mosquitto stops reading a session
	// it is about to drop, and the write times out after the 30 s publish
	// timeout before the next session delivers.
	deadline = time.Now().Add(60 * time.Second)
	for {
		st := status(t, d.socket)
		if st.Outbox == 0 && st.Unconfirmed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered after the ACL fix: status %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("delivered %v after the fix", time.Since(deadline.Add(-60*time.Second)).Round(time.Millisecond))
	var got []string
	last := -1.0
	for _, m := range firstByID(dataMessages(sub.Messages())) { // re-publications share the id
		if s := m["seq"].(float64); s <= last {
			t.Errorf("seq %v after %v", s, last)
		} else {
			last = s
		}
		got = append(got, describe(m))
	}
	if strings.Join(got, "|") != strings.Join(texts, "|") {
		t.Errorf("backend got %q, want %q", got, texts)
	}
}
