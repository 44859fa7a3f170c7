package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agora/agorad/sync/bridge/natsconf"
)

// cmdNATSPasswd adds a fleet user (a device id, or agora-bridge) to a
// passwd file, or changes its password, and prints the password once: it
// goes into that device's mqtt.password_file (or the bridge's
// broker.password_file).
func cmdNATSPasswd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agora-bridge nats-passwd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agora-bridge nats-passwd FILE NAME\n\nNAME is a device id (its mqtt.username) or agora-bridge; a random password is made and printed once.")
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil || fs.NArg() != 2 {
		fs.Usage()
		return exitUsage
	}
	pw, err := natsconf.NewPassword()
	if err == nil {
		err = natsconf.SetPassword(fs.Arg(0), fs.Arg(1), pw)
	}
	if err != nil {
		fmt.Fprintf(stderr, "agora-bridge nats-passwd: %v\n", err)
		return exitFailed
	}
	fmt.Fprintln(stdout, pw)
	return exitOK
}

// cmdNATSConfig prints the nats-server configuration of a fleet whose
// users are in the passwd file (natsconf.Render).
func cmdNATSConfig(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agora-bridge nats-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	passwd := fs.String("passwd", "", "the users (agora-bridge nats-passwd writes it)")
	var o natsconf.Options
	fs.IntVar(&o.Partitions, "partitions", 16, "JetStream partitions (every bridge's --partitions)")
	fs.StringVar(&o.ServerName, "server-name", "agora-1", "server_name")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:4222", "NATS client listener (the bridges)")
	fs.StringVar(&o.MQTTListen, "mqtt-listen", "0.0.0.0:1883", "MQTT listener (the devices; add TLS on a LAN)")
	fs.StringVar(&o.StoreDir, "store-dir", "/var/lib/nats", "JetStream store directory")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return exitOK
	} else if err != nil || *passwd == "" || fs.NArg() != 0 {
		if *passwd == "" {
			fmt.Fprintln(stderr, "agora-bridge nats-config: --passwd FILE is required")
		}
		return exitUsage
	}
	f, err := os.Open(*passwd)
	if err != nil {
		fmt.Fprintf(stderr, "agora-bridge nats-config: %v\n", err)
		return exitFailed
	}
	o.Users, err = natsconf.ReadPasswd(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "agora-bridge nats-config: %s: %v\n", *passwd, err)
		return exitFailed
	}
	conf, err := natsconf.Render(o)
	if err != nil {
		fmt.Fprintf(stderr, "agora-bridge nats-config: %s: %v\n", *passwd, err)
		return exitFailed
	}
	fmt.Fprint(stdout, conf)
	return exitOK
}
