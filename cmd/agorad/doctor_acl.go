package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

// probeDevice is a device id no device has: the isolation check acts as if
// it were this device, never as a real one.
const probeDevice = "agorad-doctor-probe"

// checkIsolation tries, with this device's own credentials, what the
// broker must refuse it (issue 49): reading every device's commands,
// publishing on another device's topics, and publishing commands (which
// would let it make any device speak, or ack and park its entries). A
// broker that allows any of it gets FAIL with the fix. It sees a right
// only by its echo: a refused publish is acknowledged all the same (MQTT
// 3.1.1) and a refused read is granted as a subscription, so a broker that
// refuses this device's publishes but lets it read others' topics passes;
// the shipped ACL refuses both.
func checkIsolation(cfg *configs.Config, wait time.Duration) check {
	const name = "broker isolation"
	fix := "give every device its own user (its device_id) and password and the broker the shipped ACL: " +
		"configs/mosquitto/ (docs/bridge.md, \"Security set-up\")"
	u, useTLS, err := uplink.ParseBrokerURL(cfg.MQTT.Broker)
	if err != nil {
		return check{name, "skip", "mqtt.broker " + err.Error(), ""}
	}
	o, err := doctorClient(cfg, u, useTLS, fmt.Sprintf("agorad-doctor-acl-%s-%d", cfg.DeviceID, os.Getpid()), wait)
	if err != nil {
		return check{name, "skip", err.Error(), ""}
	}
	var mu sync.Mutex
	got := map[string]bool{}
	o.SetCleanSession(true).SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
		mu.Lock()
		got[m.Topic()] = true
		mu.Unlock()
	})
	cli := paho.NewClient(o)
	tok := cli.Connect()
	if !tok.WaitTimeout(wait+time.Second) || tok.Error() != nil {
		return check{name, "skip", "not connected (see the broker check)", ""}
	}
	defer cli.Disconnect(100)
	var open []string
	if cfg.MQTT.Username == "" {
		open = append(open, "accepts this device without credentials, so anyone on the network can act as any device")
	}
	// mosquitto grants a subscription the ACL refuses reads on (SUBACK
	// says nothing) and then withholds each message: only an echo tells.
	// The probes go to a device no one is, at QoS 0, so no real device's
	// session ever gets one.
	notes := protocol.Topic(probeDevice, protocol.TopicUtterances)
	cmds := protocol.Topic(probeDevice, protocol.TopicCommands)
	sub := cli.SubscribeMultiple(map[string]byte{"agora/v1/+/commands": 0, notes: 0}, nil)
	if !sub.WaitTimeout(wait) || sub.Error() != nil {
		return check{name, "warn", fmt.Sprintf("subscribe: %v", orTimeout(sub.Error())), fix}
	}
	probe := []byte(`{"agorad_doctor_probe":true}`)
	for _, t := range []string{notes, cmds} {
		cli.Publish(t, 0, false, probe).WaitTimeout(wait)
	}
	// A loopback or LAN broker echoes within milliseconds; 1 s keeps the
	// doctor quick on a secured broker, where no echo comes.
	deadline := time.Now().Add(min(wait, time.Second))
	for time.Now().Before(deadline) {
		mu.Lock()
		done := got[notes] && got[cmds]
		mu.Unlock()
		if done || !cli.IsConnectionOpen() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if got[notes] {
		open = append(open, "lets this device publish as another device and read its notes ("+notes+")")
	}
	if got[cmds] {
		open = append(open, "lets this device publish commands to another device and read every device's commands ("+cmds+"), "+
			"so any client with its rights can make a device speak or drop its notes")
	}
	mu.Unlock()
	if len(open) > 0 {
		return check{name, "fail", "the broker " + strings.Join(open, "; "), fix}
	}
	if cfg.MQTT.Username != cfg.DeviceID {
		// The shipped ACL's %u: user X may publish only agora/v1/X/...; a
		// refused publish is acknowledged all the same, so the device
		// would lose everything without an error.
		return check{name, "warn", fmt.Sprintf("mqtt.username %q is not the device_id %q: under the shipped ACL this device may publish only agora/v1/%s/…",
			cfg.MQTT.Username, cfg.DeviceID, cfg.MQTT.Username), "set mqtt.username to the device_id (and its password), or the broker's ACL to this user"}
	}
	return check{name, "ok", fmt.Sprintf("as %s: publishing as another device and publishing commands are refused", cfg.MQTT.Username), ""}
}

func orTimeout(err error) error {
	if err == nil {
		return errors.New("timed out")
	}
	return err
}
