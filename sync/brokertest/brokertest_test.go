package brokertest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

func pub(t *testing.T, b *Broker, topic string, payloads ...string) {
	t.Helper()
	cli := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID(fmt.Sprintf("pub-%d", time.Now().UnixNano())))
	if tok := cli.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer cli.Disconnect(50)
	for _, p := range payloads {
		if tok := cli.Publish(topic, 1, false, p); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
}

func TestBrokerRestartKeepsPortAndSession(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := Start(t)
	if !strings.HasPrefix(b.URL(), "tcp://127.0.0.1:") || !b.Running() {
		t.Fatalf("URL %s running %v", b.URL(), b.Running())
	}
	sub := b.Subscribe(t, "x/#")
	pub(t, b, "x/1", "a", "b")
	if _, ok := sub.WaitCount(2, 5*time.Second); !ok {
		t.Fatal("subscriber did not get 2 messages")
	}
	port := b.Port()
	b.Stop()
	if b.Running() {
		t.Fatal("still running after Stop")
	}
	if c, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("port still accepting after Stop")
	}
	b.Start()
	if b.Port() != port {
		t.Fatalf("port changed %d -> %d", port, b.Port())
	}
	// Published while the subscriber is still reconnecting: its persistent
	// session (saved by mosquitto at SIGTERM) queues them.
	pub(t, b, "x/2", "c", "d")
	// QoS 1 is at-least-once: a message whose PUBACK the broker had not
	// processed before SIGTERM comes again, so compare first occurrences.
	firsts := func(msgs []Message) string {
		var got []string
		seen := map[string]bool{}
		for _, m := range msgs {
			if p := string(m.Payload); !seen[p] {
				seen[p] = true
				got = append(got, p)
			}
		}
		return strings.Join(got, "")
	}
	msgs, ok := sub.WaitFor(10*time.Second, func(m []Message) bool { return len(firsts(m)) >= 4 })
	if !ok || firsts(msgs) != "abcd" {
		t.Fatalf("first occurrences %q after restart, want abcd in order", firsts(msgs))
	}
}

func TestPasswordRequired(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b := Start(t, WithPassword("u", "p"))
	connect := func(user, pass string) error {
		cli := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetUsername(user).SetPassword(pass).SetClientID("c"))
		tok := cli.Connect()
		tok.WaitTimeout(5 * time.Second)
		if tok.Error() == nil {
			cli.Disconnect(50)
		}
		return tok.Error()
	}
	if err := connect("", ""); err == nil {
		t.Error("anonymous connect accepted")
	}
	if err := connect("u", "wrong"); err == nil {
		t.Error("wrong password accepted")
	}
	if err := connect("u", "p"); err != nil {
		t.Errorf("right password refused: %v", err)
	}
}
