package bridge

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// warnIfOpen connects once without credentials (a throwaway clean session)
// and logs a warning when the broker lets it in: then any client on the
// network can publish as any device (forge its sequence, its notes) and
// publish commands (make any device speak, ack or park its entries). It
// is what the bridge can see for itself; whether each device is confined
// to its own topics, `agorad doctor` checks from the device (its
// credentials). A refused connect is logged at info, an unreachable broker
// not at all (the connection's own log says so).
func warnIfOpen(o MQTTOptions, log *slog.Logger) {
	opts := paho.NewClientOptions().AddBroker(o.BrokerURL).
		SetClientID(fmt.Sprintf("agora-bridge-opencheck-%d", os.Getpid())).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).SetConnectTimeout(5 * time.Second)
	if o.TLS != nil {
		opts.SetTLSConfig(o.TLS)
	}
	cli := paho.NewClient(opts)
	tok := cli.Connect()
	if !tok.WaitTimeout(6 * time.Second) {
		return
	}
	if err := tok.Error(); err != nil {
		log.Info("broker refuses clients without credentials (device isolation is its ACL's: agorad doctor checks it)", "err", err)
		return
	}
	cli.Disconnect(50)
	log.Warn("BROKER IS OPEN: it accepts clients without credentials, so anyone on the network can publish as any device "+
		"and publish commands to any device; give every device its own user and the broker the shipped ACL "+
		"(configs/mosquitto/, docs/bridge.md \"Security set-up\")", "broker", o.BrokerURL)
}
