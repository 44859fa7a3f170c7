package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/protocol"
)

// cmdResetSeq clears one device's sequence record, so that a forged or
// mistaken seq the bridge took no longer makes the device's real messages
// look old (parked as seq_regression). In mosquitto mode a running bridge
// holds the database: the reset is then requested in the state directory
// and applied at the device's next message.
func cmdResetSeq(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agora-bridge reset-seq", flag.ContinueOnError)
	fs.SetOutput(stderr)
	device := fs.String("device", "", "device id whose sequence record is cleared")
	stateDir := fs.String("state-dir", "", "state directory of a mosquitto-mode bridge (running or stopped)")
	natsURL := fs.String("nats", "", "NATS URL of a fleet")
	partitions := fs.Int("partitions", 16, "JetStream partitions")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if err := protocol.ValidateDeviceID(*device); err != nil {
		fmt.Fprintf(stderr, "agora-bridge reset-seq: --device: %v\n", err)
		return exitUsage
	}
	var store interface{ ResetSeq(device string) error }
	switch {
	case *natsURL != "":
		js, err := bridge.ConnectJetStream(bridge.JetStreamOptions{URL: *natsURL, Partitions: *partitions})
		if err != nil {
			fmt.Fprintf(stderr, "agora-bridge: %v\n", err)
			return exitFailed
		}
		defer js.Close()
		store = js.Store()
	case *stateDir != "":
		bs, err := bridge.OpenBadger(*stateDir, true, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			p, rerr := bridge.RequestResetSeq(*stateDir, *device)
			if rerr != nil {
				fmt.Fprintf(stderr, "agora-bridge: %v; %v\n", err, rerr)
				return exitFailed
			}
			fmt.Fprintf(stdout, "state database busy (the bridge runs): reset of %s requested (%s), applied at its next message\n", *device, p)
			return exitOK
		}
		defer bs.Close()
		store = bs
	default:
		fmt.Fprintln(stderr, "agora-bridge reset-seq: --state-dir or --nats required")
		return exitUsage
	}
	if err := store.ResetSeq(*device); err != nil {
		fmt.Fprintf(stderr, "agora-bridge: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "sequence record of %s cleared\n", *device)
	return exitOK
}
