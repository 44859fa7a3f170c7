package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/daemon"
	"github.com/agora/agorad/cmd/agorad/internal/sdnotify"
	"github.com/agora/agorad/configs"
)

// runDaemon is `agorad run`: load the configuration, let flags override it,
// validate the result, and run the daemon until SIGTERM/SIGINT (or, with a
// WAV file as input, until the file is processed and the outbox drained).
func runDaemon(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agorad run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath  = fs.String("c", "", "configuration file (YAML); defaults only when empty")
		input    = fs.String("input", "", `audio input: "default", a device name or index, a WAV file path, or "none" (typed notes only)`)
		stateDir = fs.String("state-dir", "", "state directory (Badger store, models)")
		broker   = fs.String("broker", "", "MQTT broker URL, e.g. tcp://127.0.0.1:1883")
		deviceID = fs.String("device-id", "", "device id (MQTT topics, client id)")
		socket   = fs.String("socket", "", "control socket path (agoractl --socket takes the same)")
		model    = fs.String("model", "", "whisper model: a catalog name or a file (overrides models.whisper)")
		drain    = fs.Duration("drain-timeout", 30*time.Second, "with a file input: how long to wait for the outbox to drain before exiting")
		verbose  = fs.Bool("v", false, "debug logging (overrides log.level)")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agorad run [-c FILE] [--input SRC] [--state-dir DIR] [--broker URL] [--device-id ID] [--socket PATH] [--model M] [--drain-timeout D]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agorad run: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	cfg, err := configs.Load(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "agorad run: %v\n", err)
		return exitUsage
	}
	overrides := []struct {
		val string
		dst *string
	}{
		{*input, &cfg.Input.Source}, {*stateDir, &cfg.StateDir}, {*broker, &cfg.MQTT.Broker},
		{*deviceID, &cfg.DeviceID}, {*socket, &cfg.Control.Socket}, {*model, &cfg.Models.Whisper},
	}
	for _, o := range overrides {
		if o.val != "" {
			*o.dst = o.val
		}
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "agorad run: %v\n", err)
		return exitUsage
	}
	if *drain <= 0 {
		fmt.Fprintln(stderr, "agorad run: --drain-timeout must be positive")
		return exitUsage
	}

	level := new(slog.LevelVar)
	level.Set(cfg.Log.SlogLevel())
	if *verbose {
		level.Set(slog.LevelDebug)
	}
	logger := cfg.Log.NewLogger(stderr, level)
	slog.SetDefault(logger)
	for _, w := range cfg.SecretWarnings(*cfgPath) {
		logger.Warn("configuration: secret readable by others", "problem", w)
	}

	defer sdnotify.HandleWatchdogAbort(logger)()

	reload := make(chan struct{}, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()

	err = daemon.Run(ctx, daemon.Options{
		Config: cfg, ConfigPath: *cfgPath, DrainTimeout: *drain, Version: version,
		Logger: logger, LevelVar: level, Reload: reload,
	})
	if err != nil {
		logger.Error("agorad stopped", "err", err)
	}
	return runExitCode(err)
}

// runExitCode maps how the daemon stopped to the process's exit code.
func runExitCode(err error) int {
	var cfgErr *daemon.ConfigError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, daemon.ErrStorageReplaced): // the restart it asks for opens the new directory
		return exitStorageReplaced
	case errors.Is(err, buffer.ErrCloseFailed): // before the rest: it joins how the run ended
		return exitStoreFailed
	case errors.As(err, &cfgErr):
		return exitUsage
	case errors.Is(err, daemon.ErrUndrained):
		return exitUndrained
	case errors.Is(err, buffer.ErrDamaged), errors.Is(err, buffer.ErrRolledBack), errors.Is(err, buffer.ErrKey):
		return exitStore
	default:
		return exitFailed
	}
}
