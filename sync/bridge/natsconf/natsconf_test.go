package natsconf

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"

	"github.com/agora/agorad/sync/brokertest"
)

func TestRenderRefuses(t *testing.T) {
	good := "$2a$06$abcdefghijklmnopqrstuu"
	for _, tc := range []struct {
		name  string
		o     Options
		error string
	}{
		{"no bridge", Options{Partitions: 4, Users: []User{{"dev1", good}}}, `no user "agora-bridge"`},
		{"partitions", Options{Partitions: 0, Users: []User{{BridgeUser, good}}}, "partitions: 0"},
		{"not a device id", Options{Partitions: 4, Users: []User{{BridgeUser, good}, {"dev/1", good}}}, `user "dev/1": device_id`},
		{"a dot", Options{Partitions: 4, Users: []User{{BridgeUser, good}, {"site.7", good}}}, "subject separator"},
		{"plaintext", Options{Partitions: 4, Users: []User{{BridgeUser, "hunter2"}}}, "not a bcrypt hash"},
		{"twice", Options{Partitions: 4, Users: []User{{BridgeUser, good}, {"d", good}, {"d", good}}}, "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Fatalf("err = %v, want it to name %q", err, tc.error)
			}
		})
	}
}

func TestReadPasswd(t *testing.T) {
	for _, tc := range []struct {
		in, error string
		n         int
	}{
		{"# fleet\n\nagora-bridge:$2a$x\ndev1:$2a$y\n", "", 2},
		{"dev1\n", "line 1: want name:bcrypt-hash", 0},
		{"dev1:\n", "line 1: want name:bcrypt-hash", 0},
	} {
		users, err := ReadPasswd(strings.NewReader(tc.in))
		if tc.error != "" {
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.error)
			}
			continue
		}
		if err != nil || len(users) != tc.n {
			t.Errorf("%q: %d users, %v; want %d", tc.in, len(users), err, tc.n)
		}
	}
}

func TestSetPasswordReplaces(t *testing.T) {
	p := filepath.Join(t.TempDir(), "passwd")
	for _, pw := range []string{"first", "second"} {
		if err := SetPassword(p, "dev1", pw); err != nil {
			t.Fatal(err)
		}
	}
	if err := SetPassword(p, "dev2", "x"); err != nil {
		t.Fatal(err)
	}
	if err := SetPassword(p, "bad/name", "x"); err == nil {
		t.Fatal("a name that is no device id was written")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	users, err := ReadPasswd(f)
	if err != nil || len(users) != 2 || users[0].Name != "dev1" || users[1].Name != "dev2" {
		t.Fatalf("users %v, %v; want dev1 then dev2", users, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestFleetAuthorization runs nats-server with the rendered configuration
// and tries, as a device on the MQTT listener, what the shipped mosquitto
// ACL forbids: publishing as another device, publishing commands, reading
// another device's commands, connecting without or with a wrong password.
// The device's own data reaches the bridge (through the partition
// mapping) and its own commands reach it at QoS 1.
func TestFleetAuthorization(t *testing.T) {
	if testing.Short() {
		t.Skip("real nats-server")
	}
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	pw := map[string]string{}
	for _, u := range []string{BridgeUser, "dev1", "dev2"} {
		p, err := NewPassword()
		if err != nil {
			t.Fatal(err)
		}
		if err := SetPassword(passwd, u, p); err != nil {
			t.Fatal(err)
		}
		pw[u] = p
	}
	f, err := os.Open(passwd)
	if err != nil {
		t.Fatal(err)
	}
	users, err := ReadPasswd(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	srv := brokertest.StartNATSWith(t, func(port, mqttPort int, storeDir string) (string, error) {
		return Render(Options{Listen: "127.0.0.1:" + strconv.Itoa(port), MQTTListen: "127.0.0.1:" + strconv.Itoa(mqttPort), StoreDir: storeDir,
			Partitions: 4, Users: users})
	})

	// The bridge's view: every device's data, mapped into partitions.
	nc, err := nats.Connect(srv.URL(), nats.UserInfo(BridgeUser, pw[BridgeUser]))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan *nats.Msg, 16)
	if _, err := nc.ChanSubscribe("agora.in.>", got); err != nil {
		t.Fatal(err)
	}
	status := make(chan *nats.Msg, 16)
	if _, err := nc.ChanSubscribe("agora.v1.*.status", status); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	connect := func(user, password, id string) (paho.Client, error) {
		o := paho.NewClientOptions().AddBroker(srv.MQTTURL()).SetClientID(id).SetCleanSession(false).
			SetConnectTimeout(5 * time.Second).SetAutoReconnect(false)
		if user != "" {
			o.SetUsername(user).SetPassword(password)
		}
		c := paho.NewClient(o)
		tok := c.Connect()
		if !tok.WaitTimeout(10 * time.Second) {
			return nil, os.ErrDeadlineExceeded
		}
		return c, tok.Error()
	}
	for _, tc := range []struct{ name, user, password string }{
		{"anonymous", "", ""},
		{"wrong password", "dev1", pw["dev2"]},
	} {
		if c, err := connect(tc.user, tc.password, "x-"+tc.name[:4]); err == nil {
			c.Disconnect(0)
			t.Errorf("%s: connected", tc.name)
		}
	}
	dev1, err := connect("dev1", pw["dev1"], "agorad-dev1")
	if err != nil {
		t.Fatal(err)
	}
	defer dev1.Disconnect(100)
	cmds := make(chan paho.Message, 16)
	for _, topic := range []string{"agora/v1/dev1/commands", "agora/v1/dev2/commands"} {
		tok := dev1.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) { cmds <- m })
		tok.WaitTimeout(5 * time.Second)
	}
	pub := func(topic, body string) {
		tok := dev1.Publish(topic, 1, false, body)
		tok.WaitTimeout(5 * time.Second)
	}
	pub("agora/v1/dev2/utterances", "forged")
	pub("agora/v1/dev2/status", "forged")
	pub("agora/v1/dev2/commands", "forged")
	pub("agora/v1/dev1/utterances", "own")
	pub("agora/v1/dev1/status", "own status")

	// The bridge publishes a command to each device (as the bridge does,
	// over MQTT); dev1 must get its own only.
	br, err := connect(BridgeUser, pw[BridgeUser], "agora-bridge")
	if err != nil {
		t.Fatal(err)
	}
	defer br.Disconnect(100)
	for _, d := range []string{"dev1", "dev2"} {
		tok := br.Publish("agora/v1/"+d+"/commands", 1, false, "for "+d)
		tok.WaitTimeout(5 * time.Second)
		if tok.Error() != nil {
			t.Fatalf("bridge command to %s: %v", d, tok.Error())
		}
	}

	deadline := time.After(3 * time.Second)
	var data, statuses, commands []string
	for done := false; !done; {
		select {
		case m := <-got:
			data = append(data, m.Subject+"="+string(m.Data))
		case m := <-status:
			statuses = append(statuses, m.Subject+"="+string(m.Data))
		case m := <-cmds:
			commands = append(commands, m.Topic()+"="+string(m.Payload()))
		case <-deadline:
			done = true
		}
	}
	if len(data) != 1 || !strings.HasSuffix(data[0], ".dev1.utterances=own") {
		t.Errorf("the bridge got data %q, want dev1's own utterance only", data)
	}
	if len(statuses) != 1 || statuses[0] != "agora.v1.dev1.status=own status" {
		t.Errorf("the bridge got status %q, want dev1's own only", statuses)
	}
	if len(commands) != 1 || commands[0] != "agora/v1/dev1/commands=for dev1" {
		t.Errorf("dev1 got commands %q, want its own only", commands)
	}
	log := srv.Log()
	for _, want := range []string{`Publish Violation - User "dev1", Subject "agora.in.`, `Subject "agora.v1.dev2.status"`, `Subject "agora.v1.dev2.commands"`} {
		if !strings.Contains(log, want) {
			t.Errorf("server log lacks %q", want)
		}
	}
}
