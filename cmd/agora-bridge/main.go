// Command agora-bridge consumes what agorad devices publish on the broker,
// runs it through the AGORA agent graph over AG-UI, and answers the devices
// (reply and ack commands). docs/bridge.md describes its guarantees and the
// fleet mode on nats-server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/agora/agorad/sync/agui"
	"github.com/agora/agorad/sync/bridge"
	"github.com/agora/agorad/sync/uplink"
)

var version = "dev"

const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

const usageText = `usage: agora-bridge <command> [flags]

commands:
  run           run the bridge until SIGTERM (agora-bridge run -h for flags)
  deadletters   list parked messages (mosquitto mode: --state-dir; fleet: --nats)
  reset-seq     clear one device's sequence record: reset-seq --device ID (--state-dir DIR | --nats URL)
  nats-passwd   add a fleet user or change its password: nats-passwd FILE NAME (prints the password)
  nats-config   print the fleet's nats-server configuration: nats-config --passwd FILE [--partitions N]
  version       print the version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stderr)
	case "deadletters":
		return cmdDeadLetters(args[1:], stdout, stderr)
	case "reset-seq":
		return cmdResetSeq(args[1:], stdout, stderr)
	case "nats-passwd":
		return cmdNATSPasswd(args[1:], stdout, stderr)
	case "nats-config":
		return cmdNATSConfig(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "agora-bridge %s\n", version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "agora-bridge: unknown command %q\n%s", args[0], usageText)
	return exitUsage
}

// configFromFlags loads -c and applies the flags given on the command line
// over it.
func configFromFlags(name string, args []string, stderr io.Writer) (Config, error) {
	fs := flag.NewFlagSet("agora-bridge "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "YAML configuration file")
	brokerURL := fs.String("broker", "", "MQTT broker URL (broker.url)")
	aguiURL := fs.String("agui-url", "", "AG-UI endpoint of the agent graph (agent.url)")
	stateDir := fs.String("state-dir", "", "state directory (state.dir)")
	natsURL := fs.String("nats", "", "NATS URL: fleet mode through JetStream (jetstream.url)")
	partitions := fs.Int("partitions", 0, "JetStream partitions, as in the server mapping (jetstream.partitions)")
	clientID := fs.String("client-id", "", "MQTT client id (broker.client_id)")
	metrics := fs.String("metrics", "", "serve Prometheus metrics on this address, e.g. 127.0.0.1:9469 (metrics.listen)")
	logLevel := fs.String("log-level", "", "debug, info, warn or error (log.level)")
	stream := fs.String("stream", "", "what of an answer goes out while the graph writes it: spoken, written or off (agent.stream)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	c, err := load(*cfgPath)
	if err != nil {
		return c, err
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Broker.URL, *brokerURL)
	set(&c.Agent.URL, *aguiURL)
	set(&c.State.Dir, *stateDir)
	set(&c.JetStream.URL, *natsURL)
	set(&c.Broker.ClientID, *clientID)
	set(&c.Metrics.Listen, *metrics)
	set(&c.Log.Level, *logLevel)
	set(&c.Agent.Stream, *stream)
	if *partitions > 0 {
		c.JetStream.Partitions = *partitions
	}
	return c, c.validate()
}

func newLogger(c Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Log.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func cmdRun(ctx context.Context, args []string, stderr io.Writer) int {
	c, err := configFromFlags("run", args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "agora-bridge: %v\n", err)
		return exitUsage
	}
	log := newLogger(c, stderr)
	if err := run(ctx, c, log); err != nil {
		log.Error("agora-bridge stopped", "err", err)
		return exitFailed
	}
	return exitOK
}

func run(ctx context.Context, c Config, log *slog.Logger) error {
	if err := os.MkdirAll(c.State.Dir, 0o750); err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	mqttOpts := bridge.MQTTOptions{BrokerURL: c.Broker.URL, ClientID: c.Broker.ClientID, Username: c.Broker.Username, Logger: log,
		QueuePerDevice: c.Limits.QueuePerDevice, MaxBacklog: c.Limits.MaxBacklog, MaxBacklogBytes: c.Limits.MaxBacklogBytes,
		WorkerIdle: time.Duration(c.Limits.WorkerIdle)}
	if c.Broker.PasswordFile != "" {
		pw, err := readPasswordFile(c.Broker.PasswordFile)
		if err != nil {
			return err
		}
		mqttOpts.Password = pw
	}
	if strings.HasPrefix(c.Broker.URL, "ssl") || strings.HasPrefix(c.Broker.URL, "tls") || strings.HasPrefix(c.Broker.URL, "mqtts") || c.Broker.CAFile != "" {
		tc, err := uplink.TLSConfig(c.Broker.CAFile, c.Broker.CertFile, c.Broker.KeyFile, "")
		if err != nil {
			return err
		}
		mqttOpts.TLS = tc
	}
	var store bridge.Store
	var js *bridge.JetStream
	if c.JetStream.URL != "" {
		var err error
		// One user for both of the server's listeners (natsconf).
		js, err = bridge.ConnectJetStream(bridge.JetStreamOptions{URL: c.JetStream.URL, Partitions: c.JetStream.Partitions,
			AckWait: time.Duration(c.JetStream.AckWait), Replicas: c.JetStream.Replicas, Logger: log,
			DeviceHold: time.Duration(c.JetStream.DeviceHold), MaxAsideDevices: c.JetStream.MaxAsideDevices,
			MaxBacklog: c.Limits.MaxBacklog, MaxBacklogBytes: c.Limits.MaxBacklogBytes,
			User: c.Broker.Username, Password: mqttOpts.Password})
		if err != nil {
			return err
		}
		defer js.Close()
		store = js.Store()
		mqttOpts.NoSubscribe = true // publishes commands only; JetStream feeds the bridge
		if mqttOpts.ClientID == defaults().Broker.ClientID {
			// Several bridges with one client id would take each other's
			// session over in a loop; a publish-only session needs no
			// stable id.
			host, _ := os.Hostname()
			mqttOpts.ClientID = fmt.Sprintf("%s-%s-%d", mqttOpts.ClientID, host, os.Getpid())
		}
	} else {
		sync := c.State.SyncWrites == nil || *c.State.SyncWrites
		bs, err := bridge.OpenBadger(c.State.Dir, sync, log)
		if err != nil {
			return err
		}
		defer bs.Close()
		store = bs
		mqttOpts.Spill = bs
	}
	mq, err := bridge.NewMQTT(mqttOpts)
	if err != nil {
		return err
	}
	m := bridge.NewMetrics()
	agent := agui.New(c.Agent.URL, c.Agent.MaxConns, time.Duration(c.Agent.Timeout))
	b, err := bridge.New(bridge.Options{Agent: agent, Store: store, Publisher: mq, Metrics: m, Logger: log,
		ThreadPrefix: c.Agent.ThreadPrefix, PerDeviceLag: c.Metrics.PerDevice, MaxConcurrentRuns: c.Agent.MaxRuns,
		MaxSeqJump: c.Limits.MaxSeqJump, MaxBatchBytes: c.Limits.MaxBatchBytes, JoinBudget: c.Limits.JoinBudget,
		PartTTL: time.Duration(c.Limits.PartTTL), StreamReplies: c.Agent.Stream,
		Retry: bridge.Retry{Initial: time.Duration(c.Retry.Initial), Max: time.Duration(c.Retry.Max),
			MaxElapsed: time.Duration(c.Retry.MaxElapsed), RejectAttempts: c.Retry.RejectAttempts, RunTimeout: time.Duration(c.Agent.Timeout)}})
	if err != nil {
		return err
	}
	handle := func(ctx context.Context, topic string, payload []byte) error {
		return b.Handle(ctx, topic, payload, nil)
	}
	g, gctx := errgroup.WithContext(ctx)
	if c.Metrics.Listen != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		if err := m.Register(reg); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", c.Metrics.Listen)
		if err != nil {
			return fmt.Errorf("metrics.listen %s: %w", c.Metrics.Listen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		g.Go(func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error { <-gctx.Done(); return srv.Close() })
		log.Info("metrics", "listen", ln.Addr().String())
	}
	g.Go(func() error {
		b.SweepParts(gctx, max(min(time.Duration(c.Limits.PartTTL)/4, time.Minute), 100*time.Millisecond))
		return nil
	})
	mode := "mosquitto"
	if js != nil {
		mode = "jetstream"
		g.Go(func() error { return mq.Run(gctx, nil, nil) })
		g.Go(func() error { return js.Run(gctx, handle) })
	} else {
		g.Go(func() error {
			return mq.Run(gctx, handle, func(n int) { m.DevicesSeen.Set(float64(n)) })
		})
	}
	log.Info("agora-bridge running", "version", version, "mode", mode, "broker", c.Broker.URL, "agent", c.Agent.URL,
		"state_dir", c.State.Dir)
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)
	err = g.Wait()
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	if err != nil && ctx.Err() == nil {
		return err
	}
	log.Info("agora-bridge stopped")
	return nil
}

func cmdDeadLetters(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agora-bridge deadletters", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", "", "state directory of a mosquitto-mode bridge (running or stopped)")
	natsURL := fs.String("nats", "", "NATS URL of a fleet")
	partitions := fs.Int("partitions", 16, "JetStream partitions")
	limit := fs.Int("n", 100, "at most this many")
	content := fs.Bool("content", false, "also print each dead letter's full content (the device message as received), indented on the next line")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	show := func(dls []bridge.DeadLetter) {
		printDeadLetters(stdout, dls)
		if *content {
			printDeadLetterContent(stdout, dls)
		}
	}
	var store bridge.Store
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
		bs, err := bridge.OpenBadger(*stateDir, false, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			// Most likely the bridge is running and holds the database:
			// every dead letter is also a file in the state directory.
			dls, ferr := bridge.ReadDeadLetterFiles(*stateDir, *limit)
			if ferr != nil {
				fmt.Fprintf(stderr, "agora-bridge: %v; %v\n", err, ferr)
				return exitFailed
			}
			fmt.Fprintf(stderr, "agora-bridge: state database busy (%v): listing %s\n", err, bridge.DeadLetterDir(*stateDir))
			show(dls)
			return exitOK
		}
		defer bs.Close()
		store = bs
	default:
		fmt.Fprintln(stderr, "agora-bridge deadletters: --state-dir or --nats required")
		return exitUsage
	}
	dls, err := store.DeadLetters(*limit)
	if err != nil {
		fmt.Fprintf(stderr, "agora-bridge: %v\n", err)
		return exitFailed
	}
	show(dls)
	return exitOK
}

func printDeadLetters(w io.Writer, dls []bridge.DeadLetter) {
	for _, d := range dls {
		fmt.Fprintf(w, "%s\t%s\tseq %d\t%s\tattempts %d\t%d bytes\t%s\n", d.At.UTC().Format(time.RFC3339), d.DeviceID, d.Seq, d.ID,
			d.Attempts, len(d.Payload), strconv.Quote(d.Reason))
	}
}
