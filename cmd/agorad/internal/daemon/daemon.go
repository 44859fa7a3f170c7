package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/cmd/agorad/internal/evdev"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
	"github.com/agora/agorad/cmd/agorad/internal/sdnotify"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/wake"
)

// Exit codes of Run, also the process's.
const (
	ExitOK        = 0
	ExitFailure   = 1 // the daemon could not start or failed while running
	ExitUsage     = 2 // bad flags or configuration
	ExitUndrained = 3 // file input: processed, but the outbox was not drained in time (entries stay stored)
)

// Options are what `agorad run` passes in after flags override the config.
type Options struct {
	Config       *configs.Config
	ConfigPath   string        // re-read on SIGHUP; "" means defaults only
	DrainTimeout time.Duration // file input: how long to wait for the outbox to drain
	Version      string
	Logger       *slog.Logger
	LevelVar     *slog.LevelVar // changed on SIGHUP when log.level changes
	Reload       <-chan struct{}

	// OpenSource, when set, replaces the configured audio input (tests
	// script the stream with it to line key presses up with samples).
	OpenSource func(ctx context.Context) (audio.Source, error)
	// Transcriber, when set, is used instead of loading the whisper model.
	Transcriber Transcriber
}

// Transcriber turns one utterance into text (*transcribe.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, samples []float32) (transcribe.Result, error)
	Close() error
}

// inputKind is what the configured input source is.
type inputKind int

const (
	inputNone inputKind = iota
	inputDevice
	inputFile
)

func classifyInput(src string) inputKind {
	switch {
	case src == "none":
		return inputNone
	case strings.HasSuffix(strings.ToLower(src), ".wav") || strings.ContainsRune(src, os.PathSeparator):
		return inputFile
	default:
		return inputDevice
	}
}

// Daemon is one running agorad.
type Daemon struct {
	opts    Options
	cfg     *configs.Config
	log     *slog.Logger
	store   *buffer.Store
	router  *Router
	up      *uplink.Client
	met     *metrics.Metrics
	sounds  *sounder
	whisper Transcriber
	model   string
	started time.Time

	rulesMu sync.Mutex
	rules   *wake.Rules

	pttMu   sync.Mutex
	ptt     atomic.Bool
	pttEdge chan bool // push-to-talk presses and releases, from evdev and agoractl

	jobs    chan job // journaled utterances waiting for whisper
	pending sync.WaitGroup
	refused atomic.Uint64
	heard   atomic.Uint64 // whisper calls that returned

	abandoned bool // a stop overran its grace: close nothing under running goroutines
}

// job is one journaled utterance on its way to whisper.
type job struct {
	audioID  string
	samples  []float32
	started  time.Time
	duration time.Duration
	source   string
}

// Run starts the daemon and blocks until ctx ends (or, with a file input,
// until the file is processed and the outbox drained). It returns an exit code.
func Run(ctx context.Context, o Options) int {
	d, code, err := newDaemon(o)
	if err != nil {
		o.Logger.Error("agorad could not start", "err", err)
		return code
	}
	defer d.close()
	code, err = d.run(ctx)
	if err != nil {
		d.log.Error("agorad stopped on an error", "err", err)
	}
	return code
}

func newDaemon(o Options) (*Daemon, int, error) {
	cfg := o.Config
	log := o.Logger
	d := &Daemon{opts: o, cfg: cfg, log: log, started: time.Now(), pttEdge: make(chan bool, 16), jobs: make(chan job, 64), whisper: o.Transcriber}
	d.met = metrics.New(o.Version)

	rules, err := wake.New(cfg.Wake.Rules())
	if err != nil {
		return nil, ExitUsage, fmt.Errorf("wake rules: %w", err)
	}
	d.rules = rules

	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, ExitFailure, fmt.Errorf("create state dir %s: %w", cfg.StateDir, err)
	}
	d.store, err = buffer.Open(filepath.Join(cfg.StateDir, "store"), buffer.Options{
		MaxBytes: cfg.Storage.MaxBytes, MaxItems: cfg.Storage.MaxItems,
		Sync: cfg.Storage.Sync, AudioRetention: cfg.Storage.AudioRetention,
		Logger: log,
	})
	if err != nil {
		return nil, ExitFailure, fmt.Errorf("open store: %w", err)
	}

	d.sounds = newSounder(cfg.Sounds, log)

	d.up, err = uplink.New(uplink.Options{
		DeviceID: cfg.DeviceID, BrokerURL: cfg.MQTT.Broker,
		Username: cfg.MQTT.Username, Password: cfg.MQTT.Password,
		CAFile: cfg.MQTT.TLS.CAFile, CertFile: cfg.MQTT.TLS.CertFile, KeyFile: cfg.MQTT.TLS.KeyFile,
		KeepAlive: cfg.MQTT.Keepalive.D(), BackoffMin: cfg.MQTT.ReconnectMin.D(), BackoffMax: cfg.MQTT.ReconnectMax.D(),
		BatchAckRequired: cfg.MQTT.BatchAckRequired,
		Delivery:         cfg.MQTT.Delivery, AckTimeout: cfg.MQTT.AckTimeout.D(), StuckAfter: cfg.MQTT.StuckAfter.D(),
		Status: d.protocolStatus,
		Logger: log,
	}, d.store, d)
	if err != nil {
		d.close()
		return nil, ExitUsage, fmt.Errorf("mqtt: %w", err)
	}

	d.router, err = NewRouter(RouterOptions{
		Store: d.store, Rules: matcherFunc(d.match), Sounds: d.sounds,
		Online: d.up.Online, DefaultMode: cfg.Mode,
		OnMode: func(m string) { d.log.Info("mode changed", "mode", m); d.up.PublishStatus() },
	})
	if err != nil {
		d.close()
		return nil, ExitFailure, err
	}
	return d, ExitOK, nil
}

type matcherFunc func(string) wake.Match

func (f matcherFunc) Match(s string) wake.Match { return f(s) }

func (d *Daemon) match(text string) wake.Match {
	d.rulesMu.Lock()
	r := d.rules
	d.rulesMu.Unlock()
	return r.Match(text)
}

func (d *Daemon) close() {
	if d.abandoned {
		return // goroutines may still use whisper and the store
	}
	if d.whisper != nil {
		d.whisper.Close()
	}
	if d.sounds != nil {
		d.sounds.Close()
	}
	if d.store != nil {
		if err := d.store.Close(); err != nil {
			d.log.Error("close store", "err", err)
		}
	}
}

// needsSpeech reports whether anything will produce audio for whisper: a
// microphone, a file, push-to-talk, or journaled audio left by a crash.
func (d *Daemon) needsSpeech(kind inputKind) bool {
	if kind != inputNone || d.cfg.Input.PTT.Enabled {
		return true
	}
	st, err := d.store.Stats() // counts only: recoverJournal reads the audio itself
	return err == nil && st.JournalPending > 0
}

func (d *Daemon) loadWhisper() error {
	path, err := transcribe.ResolveModelIn("whisper", d.cfg.Models.Whisper, d.cfg.ModelsDir())
	if err != nil {
		return err
	}
	d.model = filepath.Base(path)
	w, err := transcribe.New(transcribe.Options{
		ModelPath: path, Language: d.cfg.Transcribe.Language, Threads: d.cfg.Transcribe.Threads,
		InitialPrompt: d.cfg.Transcribe.InitialPrompt, Terms: d.cfg.Transcribe.Contexts,
		Logger: d.log.With("component", "whisper"),
	})
	if err != nil {
		return err
	}
	d.whisper = w
	return nil
}

func (d *Daemon) run(ctx context.Context) (int, error) {
	cfg := d.cfg
	kind := classifyInput(cfg.Input.Source)
	if d.whisper == nil && d.needsSpeech(kind) {
		if err := d.loadWhisper(); err != nil {
			return ExitFailure, err
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
		return ExitFailure, fmt.Errorf("control socket: %w", err)
	}
	svc.Go(func() error {
		return control.Serve(svcCtx, ln, &controlHandler{d: d}, control.ServeOptions{Logger: d.log.With("component", "control"),
			OnAcceptError: func(error) { d.met.ListenerError("control") }})
	})
	if cfg.Metrics.Listen != "" {
		svc.Go(func() error {
			return d.met.ListenAndServe(svcCtx, cfg.Metrics.Listen, d.health, d.log.With("component", "metrics"))
		})
	}
	svc.Go(func() error { return d.up.Run(svcCtx) })
	svc.Go(func() error { d.watchOnline(svcCtx); return nil })
	svc.Go(func() error { d.refreshGauges(svcCtx); return nil })
	svc.Go(func() error { d.reloadLoop(svcCtx); return nil })
	svc.Go(func() error {
		// No watchdog ping while the store does not answer: systemd then
		// restarts a daemon that can no longer keep what it hears.
		return sdnotify.Watchdog(svcCtx, func() error { _, err := d.store.ListenCount(); return err }, d.log)
	})

	speechCtx, stopSpeech := context.WithCancel(ctx)
	defer stopSpeech()
	sp, speechCtx := errgroup.WithContext(speechCtx)
	captureDone := make(chan struct{})
	fileDone := make(chan error, 1)
	if kind != inputNone {
		sp.Go(func() error {
			defer close(captureDone)
			err := d.captureLoop(speechCtx, kind)
			if kind == inputFile {
				fileDone <- err
			}
			return err
		})
	} else {
		close(captureDone)
	}
	if d.whisper != nil {
		// Audio journaled before a crash or a power cut is transcribed
		// before anything new.
		recovered, err := d.recoverJournal()
		if err != nil {
			d.log.Error("recover journaled audio", "err", err)
		}
		sp.Go(func() error { return d.transcribeLoop(speechCtx, recovered, captureDone) })
	}
	if cfg.Input.PTT.Enabled && cfg.Input.PTT.EvdevDevice != "" {
		sp.Go(func() error {
			return evdev.Run(speechCtx, cfg.Input.PTT.EvdevDevice, evdev.Options{Code: uint16(cfg.Input.PTT.KeyCode), Logger: d.log.With("component", "ptt")},
				func(e evdev.Event) { d.pushToTalk(e.Down) })
		})
	}

	_ = sdnotify.Ready(fmt.Sprintf("mode %s, input %s", d.router.Mode(), cfg.Input.Source))
	d.log.Info("agorad running", "device_id", cfg.DeviceID, "mode", d.router.Mode(), "input", cfg.Input.Source,
		"state_dir", cfg.StateDir, "broker", redactURL(cfg.MQTT.Broker), "socket", cfg.Control.Socket, "model", d.model)

	code := ExitOK
	var runErr error
	if kind == inputFile {
		select {
		case err := <-fileDone:
			if err != nil {
				runErr, code = err, ExitFailure
			} else {
				d.pending.Wait() // every utterance of the file transcribed and stored
				if !d.waitDrained(ctx, d.opts.DrainTimeout) {
					n, _ := d.store.OutboxCount()
					d.log.Warn("outbox not drained before the drain timeout; entries stay stored", "outbox", n, "timeout", d.opts.DrainTimeout)
					code = ExitUndrained
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
		return ExitFailure, errors.New("speech path did not stop within the shutdown grace")
	}
	if err != nil && !errors.Is(err, context.Canceled) && runErr == nil {
		runErr, code = err, ExitFailure
	}
	// Last status says offline; the uplink publishes it on a clean disconnect.
	stopServices()
	if err := svc.Wait(); err != nil && !errors.Is(err, context.Canceled) && runErr == nil {
		runErr, code = err, ExitFailure
	}
	return code, runErr
}

// StopLimit bounds a whole stop of the speech path: ShutdownGrace, then
// time to abort the whisper call running at its end, close the capture
// stream and route the last transcript. Past it the stop is abandoned (the
// audio stays journaled). It stays well inside the unit's TimeoutStopSec
// (30 s), so systemd never has to kill a stopping daemon.
const StopLimit = ShutdownGrace + 10*time.Second

// waitWithin runs wait and reports whether it returned within limit. On a
// timeout wait's goroutine is left behind: the process is about to exit.
func waitWithin(wait func() error, limit time.Duration) (returned bool, err error) {
	done := make(chan error, 1)
	go func() { done <- wait() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case err := <-done:
		return true, err
	case <-t.C:
		return false, nil
	}
}

// waitDrained waits until the outbox is empty, or timeout, or ctx ends.
func (d *Daemon) waitDrained(ctx context.Context, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if n, err := d.store.OutboxCount(); err == nil && n == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}

func (d *Daemon) openSource(ctx context.Context, kind inputKind) (audio.Source, error) {
	if d.opts.OpenSource != nil {
		return d.opts.OpenSource(ctx)
	}
	src := d.cfg.Input.Source
	if kind == inputFile {
		s, err := audio.OpenWAVSource(src, 0, time.Now())
		if err != nil {
			return nil, fmt.Errorf("input file: %w", err)
		}
		return s, nil
	}
	s, err := audio.OpenCapture(ctx, audio.CaptureOptions{Device: src, Logger: d.log.With("component", "capture")})
	if err != nil {
		return nil, fmt.Errorf("microphone: %w", err)
	}
	return s, nil
}

// captureLoop reads audio and cuts it into utterances: by voice activity
// when hands-free, and by the push-to-talk key while it is held.
func (d *Daemon) captureLoop(ctx context.Context, kind inputKind) error {
	vadPath, err := transcribe.ResolveModelIn("vad", d.cfg.Models.VAD, d.cfg.ModelsDir())
	if err != nil {
		return err
	}
	det, err := vad.Open(vadPath, vad.Options{Threads: 1})
	if err != nil {
		return err
	}
	defer det.Close()
	seg, err := segment.New(det, d.segmentConfig())
	if err != nil {
		return fmt.Errorf("segmentation config: %w", err)
	}
	src, err := d.openSource(ctx, kind)
	if err != nil {
		return err
	}
	defer func() {
		began := time.Now()
		src.Close()
		d.log.Debug("capture closed", "took", time.Since(began))
	}()
	source := "mic"
	if kind == inputFile {
		source = "file:" + filepath.Base(d.cfg.Input.Source)
	}
	handsFree := d.cfg.Input.HandsFree || kind == inputFile
	ptt := d.cfg.Input.PTT
	// Look for a pause in the last quarter of a piece (at most as far back as
	// hands-free splitting looks), so pieces stay close to the maximum.
	hold, err := segment.NewHold(ptt.MaxUtterance.D(), min(segment.DefaultConfig().SplitSearch, ptt.MaxUtterance.D()/4))
	if err != nil {
		return fmt.Errorf("input.ptt.max_utterance: %w", err)
	}
	var last segment.Stats
	stuckWarned := false
	emit := func(p segment.Piece) {
		if p.Index > 0 || !p.Last {
			d.log.Debug("push-to-talk piece", "index", p.Index, "last", p.Last, "seconds", float64(len(p.Samples))/audio.SampleRate)
		}
		d.enqueueUtterance(ctx, p.Samples, p.Start, samplesDur(int64(len(p.Samples))), "ptt")
	}
	for {
		c, err := src.Read(ctx)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err() // a source with audio always ready must not outrun a stop
		}
		if err != nil {
			if handsFree {
				for _, u := range seg.Flush() {
					d.enqueueUtterance(ctx, u.Samples, u.Start, samplesDur(u.SpeechEnd-u.SpeechStart), source)
				}
			}
			if p, ok := hold.Release(); ok {
				emit(p)
			}
			d.noteSegStats(seg.Stats(), &last)
			if errors.Is(err, context.Canceled) || isEOF(err) {
				return nil
			}
			return fmt.Errorf("read audio: %w", err)
		}
		// Push-to-talk: capture only while held; release ends the utterance.
		for drained := false; !drained; {
			select {
			case down := <-d.pttEdge:
				if down && !hold.Held() {
					hold.Press(c.Time)
					stuckWarned = false
				} else if !down {
					if p, ok := hold.Release(); ok {
						emit(p)
					}
				}
			default:
				drained = true
			}
		}
		if hold.Held() {
			// The key overrides voice activity while held. A long press is
			// cut into pieces (memory stays bounded, nothing is too large to
			// journal), each delivered in order.
			for _, p := range hold.Push(c) {
				d.met.PTTCut()
				emit(p)
			}
			if !stuckWarned && ptt.StuckAfter > 0 && hold.HeldFor() >= ptt.StuckAfter.D() {
				stuckWarned = true
				d.met.PTTStuck()
				d.log.Warn("push-to-talk held unusually long; is the key stuck? audio keeps being cut into pieces and stored",
					"held", hold.HeldFor().Round(time.Second), "stuck_after", ptt.StuckAfter.D(), "piece_max", ptt.MaxUtterance.D())
			}
			continue
		}
		if !handsFree {
			continue
		}
		us, err := seg.Push(c)
		if err != nil {
			d.log.Warn("segmentation", "err", err)
		}
		for _, u := range us {
			d.enqueueUtterance(ctx, u.Samples, u.Start, samplesDur(u.SpeechEnd-u.SpeechStart), source)
		}
		d.noteSegStats(seg.Stats(), &last)
	}
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

func samplesDur(n int64) time.Duration { return time.Duration(n) * time.Second / audio.SampleRate }

func (d *Daemon) noteSegStats(s segment.Stats, last *segment.Stats) {
	d.met.VADFrames(int(s.Gated-last.Gated), int(s.Probed-last.Probed))
	*last = s
}

func (d *Daemon) segmentConfig() segment.Config {
	c := segment.DefaultConfig()
	s := d.cfg.Segment
	c.GateFloorDBFS = s.EnergyGateDBFS
	c.OnsetThreshold, c.OffsetThreshold = s.VADOnset, s.VADOffset
	c.MinSpeech, c.MinSilence = s.MinSpeech.D(), s.Hangover.D()
	c.PreRoll, c.PostPad, c.MaxUtterance = s.PreRoll.D(), s.PostPad.D(), s.MaxUtterance.D()
	return c
}

// enqueueUtterance journals the audio (so a crash before its transcript is
// stored loses nothing) and hands it to whisper. A full journal is refused
// loudly: the inspector hears the error sound.
func (d *Daemon) enqueueUtterance(ctx context.Context, samples []float32, start time.Time, dur time.Duration, source string) {
	if len(samples) == 0 {
		return
	}
	id, err := d.store.JournalAudio(samples, start)
	if err != nil {
		d.noteRefusal(err)
		d.sounds.Play("error")
		d.log.Error("utterance refused: could not journal its audio", "err", err, "seconds", float64(len(samples))/audio.SampleRate)
		return
	}
	d.pending.Add(1)
	j := job{audioID: id, samples: samples, started: start, duration: dur, source: source}
	if ctx.Err() != nil {
		// Stopping: hand over the last utterance if there is room; the
		// transcriber drains the queue before it stops.
		select {
		case d.jobs <- j:
		default:
			d.pending.Done() // stays journaled; transcribed on the next start
		}
		return
	}
	select {
	case d.jobs <- j:
	case <-ctx.Done():
		d.pending.Done() // stays journaled; transcribed on the next start
	}
}

func (d *Daemon) recoverJournal() ([]job, error) {
	pend, err := d.store.PendingAudio()
	if err != nil {
		return nil, err
	}
	if len(pend) > 0 {
		d.log.Info("transcribing audio journaled before the last stop", "utterances", len(pend))
	}
	jobs := make([]job, len(pend))
	for i, p := range pend {
		d.pending.Add(1)
		jobs[i] = job{audioID: p.ID, samples: p.Samples, started: p.StartedAt, duration: samplesDur(int64(len(p.Samples))), source: "journal"}
	}
	return jobs, nil
}

// ShutdownGrace bounds how long a stopping daemon keeps transcribing what
// was already heard; what is left stays journaled for the next start.
const ShutdownGrace = 10 * time.Second

// transcribeLoop runs whisper on journaled utterances, one at a time, and
// routes the text. On shutdown it waits for capture to hand over the
// utterance being spoken, then finishes the queue within ShutdownGrace.
func (d *Daemon) transcribeLoop(ctx context.Context, recovered []job, captureDone <-chan struct{}) error {
	// work ends ShutdownGrace after ctx: the call running at the stop and the
	// queue behind it share the grace, and a call still running then is
	// aborted (its audio stays journaled).
	work, endWork := context.WithCancel(context.WithoutCancel(ctx))
	defer endWork()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(ShutdownGrace, endWork) })
	defer stopGrace()
	for i, j := range recovered {
		if ctx.Err() != nil {
			for range recovered[i:] {
				d.pending.Done() // still journaled
			}
			break
		}
		d.transcribeOne(work, j)
	}
	for {
		select {
		case j := <-d.jobs:
			d.transcribeOne(work, j)
		case <-ctx.Done():
			<-captureDone
			d.log.Debug("capture stopped; finishing the transcription queue", "queued", len(d.jobs))
			left := 0
			for {
				select {
				case j := <-d.jobs:
					if work.Err() != nil {
						left++
						d.pending.Done() // still journaled
						continue
					}
					d.transcribeOne(work, j)
				default:
					if left > 0 {
						d.log.Info("shutdown grace over; utterances stay journaled for the next start", "utterances", left)
					}
					return nil
				}
			}
		}
	}
}

func (d *Daemon) transcribeOne(ctx context.Context, j job) {
	defer d.pending.Done()
	res, err := d.whisper.Transcribe(ctx, j.samples)
	if err != nil {
		d.met.WhisperCallFailed()
		d.sounds.Play("error")
		d.log.Error("transcription failed; audio stays journaled", "audio_id", j.audioID, "err", err)
		return
	}
	d.met.Transcribed(res.ProcessingTime, res.AudioDuration)
	d.heard.Add(1)
	if res.Rejected != "" {
		d.log.Debug("transcript rejected", "reason", res.Rejected)
	}
	mode := d.router.Mode()
	out, err := d.router.Handle(ctx, Heard{
		Text: res.Text, Lang: res.Lang, Confidence: res.Confidence,
		StartedAt: j.started, Duration: j.duration, Source: j.source, AudioID: j.audioID,
	})
	if err != nil {
		d.noteRefusal(err)
		d.log.Error("utterance not stored; audio stays journaled", "err", err)
		return
	}
	if out.Stored+out.Sent > 0 {
		d.met.Utterance(mode)
	}
	d.log.Info("utterance", "mode", out.ModeAfter, "stored", out.Stored, "sent", out.Sent, "wake", string(out.Wake),
		"chars", len(res.Text), "rtf", rtf(res))
}

func rtf(r transcribe.Result) float64 {
	if r.AudioDuration <= 0 {
		return 0
	}
	return r.ProcessingTime.Seconds() / r.AudioDuration.Seconds()
}

// noteRefusal counts what the store refused. Cap refusals are counted by
// the store itself (Stats.Refused); a full disk is counted here.
func (d *Daemon) noteRefusal(err error) {
	switch {
	case errors.Is(err, buffer.ErrDiskFull):
		d.refused.Add(1)
		d.met.Refused("disk_full")
	case errors.Is(err, buffer.ErrFull):
		d.met.Refused("cap")
	}
}

// pushToTalk takes key edges from evdev and agoractl.
func (d *Daemon) pushToTalk(down bool) {
	d.pttMu.Lock()
	defer d.pttMu.Unlock()
	if d.ptt.Load() == down {
		return // repeated edge
	}
	select {
	case d.pttEdge <- down:
		d.ptt.Store(down) // after the send: whoever sees the state sees the edge queued
	default:
		d.log.Warn("push-to-talk events arriving faster than audio; edge dropped", "down", down)
	}
}

// watchOnline turns link changes into status, metrics and a sound.
func (d *Daemon) watchOnline(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case up := <-d.up.OnlineChanged():
			d.met.SetOnline(up)
			if !up {
				d.sounds.Play("offline")
				d.log.Warn("backend link down; buffering on the device")
			} else {
				d.log.Info("backend link up")
			}
		}
	}
}

func (d *Daemon) refreshGauges(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	var reconnects uint64
	for {
		d.updateGauges()
		for n := d.up.Stats().Reconnects; reconnects < n; reconnects++ {
			d.met.Reconnect()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Daemon) updateGauges() {
	if n, err := d.store.ListenCount(); err == nil {
		d.met.SetListenBuffer(n)
	}
	if n, err := d.store.OutboxCount(); err == nil {
		d.met.SetOutbox(n)
	}
	if st, err := d.store.Stats(); err == nil {
		d.met.SetAudioJournal(st.JournalPending)
	}
	d.met.SetOnline(d.up.Online())
	us := d.up.Stats()
	d.met.SetUnconfirmed(us.Unconfirmed)
	d.met.SetOutboxStuck(us.StuckFor)
}

// problems lists degraded parts that do not stop the voice path.
func (d *Daemon) problems() []string {
	var p []string
	if m := d.met.Problem(); m != "" {
		p = append(p, "metrics endpoint: "+m)
	}
	if n := d.up.Stats().Unconfirmed; n > 0 {
		p = append(p, fmt.Sprintf("%d outbox entries accepted by the broker but not confirmed by the backend: check ACLs and the bridge", n))
	}
	return p
}

func (d *Daemon) health() metrics.Health {
	h := metrics.Health{OK: true, Online: d.up.Online(), Mode: d.router.Mode()}
	if _, err := d.store.ListenCount(); err != nil {
		h.OK, h.Reason = false, "store: "+err.Error()
	}
	h.Problems = d.problems()
	return h
}

func (d *Daemon) protocolStatus() protocol.Status {
	n, _ := d.store.ListenCount()
	return protocol.Status{Mode: d.router.Mode(), Buffered: n, Version: d.opts.Version, Model: d.model, UpdatedAt: time.Now()}
}

// HandleCommand acts on the backend's set_mode and ping (uplink.CommandHandler).
func (d *Daemon) HandleCommand(ctx context.Context, cmd protocol.Command) error {
	switch cmd.Type {
	case "set_mode":
		_, err := d.router.SetMode(ctx, cmd.Mode)
		return err
	case "ping":
		return nil
	default:
		return fmt.Errorf("command type %q not handled by the daemon", cmd.Type)
	}
}

// reloadLoop applies SIGHUP: the fields that can change safely change now;
// the others are reported as needing a restart.
func (d *Daemon) reloadLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.opts.Reload:
			d.reload()
		}
	}
}

func (d *Daemon) reload() {
	_ = sdnotify.Reloading()
	defer func() { _ = sdnotify.Ready("reloaded") }()
	next, err := configs.Load(d.opts.ConfigPath)
	if err != nil {
		d.log.Error("reload: configuration rejected; keeping the running one", "err", err)
		return
	}
	changed, restart := d.cfg.ReloadableDiff(next)
	for _, f := range changed {
		switch {
		case f == "log.level" && d.opts.LevelVar != nil:
			d.opts.LevelVar.Set(next.Log.SlogLevel())
			d.cfg.Log.Level = next.Log.Level
		case strings.HasPrefix(f, "wake."):
			r, err := wake.New(next.Wake.Rules())
			if err != nil {
				d.log.Error("reload: wake rules rejected", "err", err)
				continue
			}
			d.rulesMu.Lock()
			d.rules = r
			d.rulesMu.Unlock()
			d.cfg.Wake = next.Wake
		case strings.HasPrefix(f, "sounds."):
			d.sounds.Configure(next.Sounds)
			d.cfg.Sounds = next.Sounds
		case f == "mode":
			if _, err := d.router.SetMode(context.Background(), next.Mode); err != nil {
				d.log.Error("reload: mode", "err", err)
			}
			d.cfg.Mode = next.Mode
		}
	}
	d.log.Info("configuration reloaded", "applied", changed, "need_restart", restart)
}

// redactURL hides credentials in a broker URL for the log.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable broker URL)"
}
