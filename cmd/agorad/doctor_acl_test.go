package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/configs/configtest"
	"github.com/agora/agorad/sync/brokertest"
)

// shippedACL is configs/mosquitto/acl, the ACL the README's set-up installs.
func shippedACL(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", "mosquitto", "acl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// securedBroker is a real mosquitto with the shipped ACL, no anonymous
// clients, and a password (made by scripts/mosquitto-user.sh) for each user.
func securedBroker(t *testing.T, users ...string) (*brokertest.Broker, map[string]string) {
	t.Helper()
	pw := map[string]string{}
	opts := []brokertest.Option{brokertest.WithACL(shippedACL(t)...),
		// As configs/mosquitto/agora.conf: mosquitto before 2.0.22 closes a
		// client whose publish the ACL refuses under max_queued_messages 0.
		brokertest.WithConfig("max_queued_messages 1000000")}
	file := filepath.Join(t.TempDir(), "passwd")
	for _, u := range users {
		out, err := exec.Command("bash", filepath.Join("..", "..", "scripts", "mosquitto-user.sh"), file, u).Output()
		if err != nil {
			t.Fatalf("mosquitto-user.sh %s: %v", u, err)
		}
		pw[u] = strings.TrimSpace(string(out))
		opts = append(opts, brokertest.WithPassword(u, pw[u]))
	}
	if b, _ := os.ReadFile(file); strings.Count(string(b), "\n") != len(users) {
		t.Fatalf("mosquitto-user.sh wrote %q", b)
	}
	return brokertest.Start(t, opts...), pw
}

// securedDaemon is a device configuration on its own secured broker (the
// shipped ACL), with its credentials: the doctor's isolation check passes.
func securedDaemon(t *testing.T, id string) *configs.Config {
	b, pw := securedBroker(t, id)
	cfg := configtest.Daemon(t, id, b.URL())
	cfg.MQTT.Username, cfg.MQTT.Password = id, pw[id]
	return cfg
}

type mqttClient struct {
	paho.Client
	mu  sync.Mutex
	got []string // topic: payload
}

func connectAs(t *testing.T, b *brokertest.Broker, user, pass string) *mqttClient {
	t.Helper()
	c := &mqttClient{}
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID(fmt.Sprintf("%s-%d", user, time.Now().UnixNano())).
		SetUsername(user).SetPassword(pass).SetAutoReconnect(false).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			c.mu.Lock()
			c.got = append(c.got, m.Topic()+": "+string(m.Payload()))
			c.mu.Unlock()
		})
	c.Client = paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("connect as %q: %v", user, tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(50) })
	return c
}

func (c *mqttClient) sub(t *testing.T, filter string) byte {
	t.Helper()
	tok := c.Subscribe(filter, 1, nil)
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe %s: %v", filter, tok.Error())
	}
	return tok.(*paho.SubscribeToken).Result()[filter]
}

func (c *mqttClient) pub(t *testing.T, topic, payload string) {
	t.Helper()
	// Refused publishes are PUBACKed too (MQTT 3.1.1): only receivers tell.
	c.Publish(topic, 1, false, payload).WaitTimeout(5 * time.Second)
}

func (c *mqttClient) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// Issue 49: with the shipped ACL on a real mosquitto, a device speaks only
// for itself. dev1 cannot publish on dev2's topics, cannot read dev2's
// commands, cannot publish commands; the bridge reads all and alone
// commands; anonymous clients are refused. Before (no ACL, as the docs set
// it up), every one of these went through.
func TestShippedACL(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	b, pw := securedBroker(t, "agora-bridge", "dev1", "dev2")
	bridge := connectAs(t, b, "agora-bridge", pw["agora-bridge"])
	dev1 := connectAs(t, b, "dev1", pw["dev1"])
	dev2 := connectAs(t, b, "dev2", pw["dev2"])
	for _, f := range []string{"agora/v1/+/utterances", "agora/v1/+/status", "agora/v1/+/acks"} {
		if code := bridge.sub(t, f); code >= 0x80 {
			t.Fatalf("the bridge may not read %s (SUBACK %#x)", f, code)
		}
	}
	if code := dev2.sub(t, "agora/v1/dev2/commands"); code >= 0x80 {
		t.Fatalf("dev2 may not read its own commands (SUBACK %#x)", code)
	}
	// mosquitto grants these (SUBACK) and withholds every message: what
	// dev1 receives below is the test.
	dev1.sub(t, "agora/v1/dev2/commands")
	dev1.sub(t, "agora/v1/+/utterances")
	dev1.pub(t, "agora/v1/dev2/utterances", `{"forged":"seq 999999999"}`)
	dev1.pub(t, "agora/v1/dev2/commands", `{"id":"x","type":"reply","text":"forged"}`)
	dev1.pub(t, "agora/v1/dev1/commands", `{"id":"y","type":"ping"}`)
	dev1.pub(t, "agora/v1/dev1/utterances", `{"own":true}`)
	dev2.pub(t, "agora/v1/dev2/utterances", `{"dev2":true}`)
	bridge.pub(t, "agora/v1/dev2/commands", `{"id":"real","type":"ping"}`)
	time.Sleep(500 * time.Millisecond)
	if anon := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("anon").SetAutoReconnect(false)); anon.Connect().WaitTimeout(3*time.Second) && anon.IsConnected() {
		t.Errorf("an anonymous client was let in")
		anon.Disconnect(50)
	}
	want := map[string][]string{
		"bridge": {`agora/v1/dev1/utterances: {"own":true}`, `agora/v1/dev2/utterances: {"dev2":true}`},
		"dev2":   {`agora/v1/dev2/commands: {"id":"real","type":"ping"}`},
		"dev1":   nil,
	}
	for name, c := range map[string]*mqttClient{"bridge": bridge, "dev1": dev1, "dev2": dev2} {
		if got := c.received(); strings.Join(got, "|") != strings.Join(want[name], "|") {
			t.Errorf("%s received %q, want %q", name, got, want[name])
		}
	}
}

// agorad doctor's isolation check: FAIL with a fix on an open broker (the
// set-up the docs gave before), ok on the shipped ACL with the device's own
// credentials.
func TestDoctorIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("real mosquitto")
	}
	open := brokertest.Start(t)
	secured, pw := securedBroker(t, "dev-iso", "dev-iso-2")
	for _, tc := range []struct {
		name   string
		url    string
		user   string
		status string
		detail string
	}{
		{"open broker", open.URL(), "", "fail", "accepts this device without credentials"},
		{"shipped ACL", secured.URL(), "dev-iso", "ok", "are refused"},
		{"user is not the device id", secured.URL(), "dev-iso-2", "warn", "is not the device_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configtest.Daemon(t, "dev-iso", tc.url)
			cfg.MQTT.Username, cfg.MQTT.Password = tc.user, pw[tc.user]
			c := checkIsolation(cfg, 2*time.Second)
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) || (c.Status == "fail" && c.Fix == "") {
				t.Fatalf("%+v, want %s with %q", c, tc.status, tc.detail)
			}
			if tc.status == "fail" {
				for _, w := range []string{"read every device's commands", "publish as another device", "publish commands", "read its notes"} {
					if !strings.Contains(c.Detail, w) {
						t.Errorf("detail does not say the broker lets it %s: %s", w, c.Detail)
					}
				}
			}
			t.Logf("%s: %s", c.Status, c.Detail)
		})
	}
}
