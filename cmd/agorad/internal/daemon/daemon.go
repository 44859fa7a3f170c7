package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agora/agorad/audio/tts"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
	"github.com/agora/agorad/cmd/agorad/internal/replies"
	"github.com/agora/agorad/cmd/agorad/internal/sdnotify"
	"github.com/agora/agorad/cmd/agorad/internal/turns"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/uplink"
	"github.com/agora/agorad/wake"
)

// Daemon is one running agorad: it wires the parts together and owns their
// lifetimes. The work is done by the parts beside it: the speech path
// (speech.go, capture.go), status and metrics (status.go), commands from
// agoractl and the backend (commands.go) and SIGHUP (reload.go).
type Daemon struct {
	*core
	opts   Options
	tts    tts.Engine // closed with the daemon
	speech *speech
	status *status
	cmds   *commands

	netChanged chan struct{} // network.go: link/address/route changes, to the uplink

	abandoned bool      // a stop overran its grace: close nothing under running goroutines
	stopBegan time.Time // when the stop began (stoplimits.go)
}

// core is what the daemon's parts share. newDaemon fills it in before
// anything runs; afterwards only reload changes what cfg points to (the
// fields it applies).
type core struct {
	cfg    *configs.Config
	log    *slog.Logger
	store  *buffer.Store
	router *Router
	up     *uplink.Client
	met    *metrics.Metrics
	sounds *sounder
	rules  *wakeRules // wake rules in use; reload swaps them
	// replies speaks the backend's answers (replies.go); the speech path
	// asks it for the half-duplex gate and hands it push-to-talk presses.
	replies *replies.Player
	langs   *langMemo    // language of recent utterances, for replies without lang
	turns   *turns.Clock // times each spoken turn (turns.go)
}

// Run starts the daemon and blocks until ctx ends (or, with a file input,
// until the file is processed and the outbox drained). The error says why it
// stopped: a *ConfigError, ErrUndrained, or anything else that failed.
func Run(ctx context.Context, o Options) (err error) {
	d, err := newDaemon(o)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	// A store that could not be closed cleanly (buffer.ErrCloseFailed) is
	// part of how the daemon stopped.
	defer func() { err = errors.Join(err, d.close()) }()
	return d.run(ctx)
}

func newDaemon(o Options) (*Daemon, error) {
	cfg, log := o.Config, o.Logger
	d := &Daemon{opts: o, core: &core{cfg: cfg, log: log, met: metrics.New(o.Version), rules: &wakeRules{}, langs: &langMemo{}}}
	rules, err := wake.New(cfg.Wake.Rules())
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("wake rules: %w", err)}
	}
	d.rules.set(rules)

	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir %s: %w", cfg.StateDir, err)
	}
	var key []byte
	if cfg.Storage.EncryptionKeyFile != "" {
		if key, err = buffer.ReadKeyFile(cfg.Storage.EncryptionKeyFile); err != nil {
			return nil, fmt.Errorf("storage.encryption_key_file: %w: %w", buffer.ErrKey, err)
		}
	}
	d.store, err = buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{
		MaxBytes: cfg.Storage.MaxBytes, MaxItems: cfg.Storage.MaxItems,
		Sync: cfg.Storage.Sync, AudioRetention: cfg.Storage.AudioRetention,
		EncryptionKey: key,
		Logger:        log,
	})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	d.sounds = newSounder(cfg.Sounds, log)

	// The uplink and the router in core are filled in below, before
	// anything runs.
	d.status = &status{core: d.core, version: o.Version, started: time.Now()}
	d.status.reported.Store(-1)
	d.speech = &speech{core: d.core, refusals: d.status, openSource: o.OpenSource, whisper: o.Transcriber,
		pttEdge: make(chan bool, 16), jobs: make(chan job, 64),
		specs: make(chan *specRun, 1), specMet: d.met.NewSpeculative()}
	d.status.speech = d.speech
	d.cmds = &commands{core: d.core, opts: o, speech: d.speech, status: d.status}

	d.netChanged = make(chan struct{}, 1)
	d.turns = newTurnClock(d.core)
	d.up, err = uplink.New(uplink.Options{
		DeviceID: cfg.DeviceID, BrokerURL: cfg.MQTT.Broker,
		Username: cfg.MQTT.Username, Password: cfg.MQTT.Password,
		CAFile: cfg.MQTT.TLS.CAFile, CertFile: cfg.MQTT.TLS.CertFile, KeyFile: cfg.MQTT.TLS.KeyFile,
		KeepAlive: cfg.MQTT.Keepalive.D(), BackoffMin: cfg.MQTT.ReconnectMin.D(), BackoffMax: cfg.MQTT.ReconnectMax.D(),
		BatchAckRequired: cfg.MQTT.BatchAckRequired,
		Delivery:         cfg.MQTT.Delivery, AckTimeout: cfg.MQTT.AckTimeout.D(), StuckAfter: cfg.MQTT.StuckAfter.D(),
		NetChanged: d.netChanged, OnPublished: d.publishedTurn,
		Status: d.status.protocol,
		Logger: log,
	}, d.store, d.cmds)
	if err != nil {
		d.close()
		return nil, &ConfigError{fmt.Errorf("mqtt: %w", err)}
	}
	if d.status.storage, err = newStorageHealth(d.core, d.up.PublishStatus); err != nil {
		d.close()
		return nil, fmt.Errorf("storage health: %w", err)
	}

	d.router, err = NewRouter(RouterOptions{
		Store: d.store, Rules: d.rules, Sounds: d.sounds,
		Online: d.up.Online, DefaultMode: cfg.Mode, Keep: d.status.storage.keep, StoreFailed: isFailure,
		OnMode: func(m buffer.Mode) {
			d.log.Info("mode changed", "mode", m)
			d.up.PublishStatus()
			if d.replies != nil {
				d.replies.Wake() // held replies are spoken in feedback mode
			}
		},
	})
	if err != nil {
		d.close()
		return nil, err
	}
	d.status.storage.settle = d.router.Settle
	if d.replies, d.tts, err = newReplies(d.core); err != nil {
		d.close()
		return nil, &ConfigError{err}
	}
	return d, nil
}

func (d *Daemon) close() error {
	if d.abandoned {
		return nil // goroutines may still use whisper and the store
	}
	if d.speech != nil {
		d.speech.close()
	}
	if d.tts != nil {
		d.tts.Close()
	}
	d.turns.Close() // before the sounds: no cue after
	if d.sounds != nil {
		d.sounds.Close()
	}
	if why := d.status.storageLeaveUnclosed(); why != "" {
		d.log.Error("store left unclosed: its directory is no longer where it was; what it acknowledged is in its write-ahead log, replayed at the next start there", "why", why)
		return fmt.Errorf("%w: left unclosed: %s", buffer.ErrCloseFailed, why)
	}
	if d.store != nil {
		// Bounded: Badger's close blocks for good on a failed disk; the
		// store logs what it left where.
		return d.store.CloseWithin(storeCloseLimit(d.stopBegan))
	}
	return nil
}

func (d *Daemon) run(ctx context.Context) error {
	cfg := d.cfg
	kind := classifyInput(cfg.Input.Source)
	if d.speech.whisper == nil && d.speech.needsWhisper(kind) {
		if err := d.speech.loadWhisper(); err != nil {
			return err
		}
		if err := d.speech.loadSpotter(); err != nil {
			return err
		}
	}

	// The speech path stops first on shutdown (so the utterance being spoken
	// is finished and stored); the services stop after it.
	svcCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServices()
	svc, svcCtx := errgroup.WithContext(svcCtx)

	// The control socket first, so a socket in use fails the start before
	// any goroutine runs. The metrics endpoint is auxiliary: a port in use
	// is an error in the log, health and metrics, retried, never a stop.
	ln, err := control.Listen(cfg.Control.Socket)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	svc.Go(func() error {
		return control.Serve(svcCtx, ln, d.cmds, control.ServeOptions{Logger: d.log.With("component", "control"),
			OnAcceptError: func(error) { d.met.ListenerError("control") }})
	})
	if cfg.Metrics.Listen != "" {
		svc.Go(func() error {
			return d.met.ListenAndServe(svcCtx, cfg.Metrics.Listen, d.status.health, d.log.With("component", "metrics"))
		})
	}
	svc.Go(func() error { return d.up.Run(svcCtx) })
	if cfg.MQTT.Broker != "" {
		svc.Go(func() error { d.watchNetwork(svcCtx, d.netChanged); return nil })
	}
	svc.Go(func() error { d.status.watchOnline(svcCtx); return nil })
	svc.Go(func() error { d.status.refreshGauges(svcCtx); return nil })
	svc.Go(func() error { d.status.watchBuffer(svcCtx); return nil })
	svc.Go(func() error { return d.status.storage.run(svcCtx) })
	svc.Go(func() error { d.cmds.reloadLoop(svcCtx); return nil })
	svc.Go(func() error { return d.replies.Run(svcCtx) })
	svc.Go(func() error {
		// No watchdog ping while the store does not answer: systemd then
		// restarts a daemon that can no longer keep what it hears.
		return sdnotify.Watchdog(svcCtx, func() error { _, err := d.store.ListenCount(); return err }, d.log)
	})

	speechCtx, stopSpeech := context.WithCancel(ctx)
	defer stopSpeech()
	sp, speechCtx := errgroup.WithContext(speechCtx)
	fileDone := d.speech.start(speechCtx, sp, kind)

	// READY=1 means the voice path runs: the microphone (or file) is open.
	// A source that fails to open ends the start before readiness, so
	// `systemctl start` reports the failure instead of a restart loop.
	// With input "none" the daemon has decided to run without a microphone
	// and says so in its status.
	readyStatus := fmt.Sprintf("mode %s, input %s", d.router.Mode(), cfg.Input.Source)
	if kind == inputNone {
		readyStatus = fmt.Sprintf("mode %s, no microphone (input none): typed notes and sync only", d.router.Mode())
	} else {
		_ = sdnotify.Status("opening " + cfg.Input.Source)
		select {
		case <-d.speech.opened:
		case <-speechCtx.Done():
		case <-svcCtx.Done():
		case <-ctx.Done():
		}
	}
	select {
	case <-d.speech.opened:
		_ = sdnotify.Ready(readyStatus)
	default:
		if kind == inputNone {
			_ = sdnotify.Ready(readyStatus)
		}
	}
	d.log.Info("agorad running", "device_id", cfg.DeviceID, "mode", d.router.Mode(), "input", cfg.Input.Source,
		"state_dir", cfg.StateDir, "broker", redactURL(cfg.MQTT.Broker), "socket", cfg.Control.Socket, "model", d.speech.model)
	select {
	case <-d.speech.opened:
		// The line a person starting the daemon waits for (make run).
		d.log.Info("listening", "input", cfg.Input.Source, "mode", d.router.Mode())
	default:
	}

	var runErr error
	undrained := false
	if kind == inputFile {
		select {
		case err := <-fileDone:
			if err != nil {
				runErr = err
			} else {
				d.speech.pending.Wait() // every utterance of the file transcribed and stored
				if !d.waitDrained(ctx, d.opts.DrainTimeout) {
					n, _ := d.store.OutboxCount()
					d.log.Warn("outbox not drained before the drain timeout; entries stay stored", "outbox", n, "timeout", d.opts.DrainTimeout)
					undrained = true
				}
			}
		case <-ctx.Done():
		case <-svcCtx.Done(): // a service failed: stop, and let systemd restart us
		}
	} else {
		// Until SIGTERM, or until a part fails (a microphone unplugged for
		// good, the control socket gone): then stop with an error so that
		// systemd restarts the daemon.
		select {
		case <-ctx.Done():
		case <-svcCtx.Done():
		case <-speechCtx.Done():
		}
	}

	_ = sdnotify.Stopping()
	d.stopBegan = time.Now()
	d.log.Info("stopping: finishing the current utterance")
	stopSpeech()
	stopped, err := waitWithin(sp.Wait, StopLimit)
	if !stopped {
		// Something in the speech path ignores cancellation (a driver stuck
		// in a read). Leave it to the process exit: what it holds is
		// journaled, and whisper and the store must not be closed under it.
		d.abandoned = true
		d.log.Error("speech path did not stop within the shutdown grace; leaving journaled audio for the next start",
			"limit", StopLimit)
		return errors.New("speech path did not stop within the shutdown grace")
	}
	if err != nil && !errors.Is(err, context.Canceled) && runErr == nil {
		runErr = err
	}
	// Last status says offline; the uplink publishes it on a clean disconnect.
	stopServices()
	stopped, err = waitWithin(svc.Wait, ServicesStopLimit)
	if !stopped {
		// A service stuck in a store call on a failed disk: the store's
		// bounded close says what it holds.
		d.log.Error("services did not stop within their limit", "limit", ServicesStopLimit)
		if runErr == nil {
			runErr = errors.New("services did not stop within their limit")
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) && runErr == nil {
		runErr = err
	}
	if runErr == nil && undrained {
		runErr = ErrUndrained
	}
	return runErr
}

// redactURL hides credentials in a broker URL for the log.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable broker URL)"
}
