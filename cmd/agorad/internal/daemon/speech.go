package daemon

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/cmd/agorad/internal/evdev"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/model"
)

// Transcriber turns one utterance into text (*transcribe.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, samples []float32) (transcribe.Result, error)
	Close() error
}

// speech is the speech path: audio in (microphone, file, push-to-talk key)
// → segmentation → audio journal → whisper → the router. Every utterance is
// journaled on disk before whisper sees it; a slow transcription
// back-pressures capture through the job queue instead of dropping audio.
type speech struct {
	*core
	refusals   *status // counts what the store refused
	openSource func(ctx context.Context) (audio.Source, error)

	whisper Transcriber
	model   string // whisper model file, for status

	pttMu   sync.Mutex
	ptt     atomic.Bool
	pttEdge chan bool // push-to-talk presses and releases, from evdev and agoractl

	jobs    chan job // journaled utterances waiting for whisper
	pending sync.WaitGroup
	heard   atomic.Uint64 // whisper calls that returned
}

// job is one journaled utterance on its way to whisper.
type job struct {
	audioID  string
	samples  []float32
	started  time.Time
	duration time.Duration
	source   string
}

func (sp *speech) close() {
	if sp.whisper != nil {
		sp.whisper.Close()
	}
}

// needsWhisper reports whether anything will produce audio for whisper: a
// microphone, a file, push-to-talk, or journaled audio left by a crash.
func (sp *speech) needsWhisper(kind inputKind) bool {
	if kind != inputNone || sp.cfg.Input.PTT.Enabled {
		return true
	}
	st, err := sp.store.Stats() // counts only: recoverJournal reads the audio itself
	return err == nil && st.JournalPending > 0
}

func (sp *speech) loadWhisper() error {
	path, err := model.ResolveIn("whisper", sp.cfg.Models.Whisper, sp.cfg.ModelsDir())
	if err != nil {
		return err
	}
	sp.model = filepath.Base(path)
	w, err := transcribe.New(transcribe.Options{
		ModelPath: path, Language: sp.cfg.Transcribe.Language, Threads: sp.cfg.Transcribe.Threads,
		InitialPrompt: sp.cfg.Transcribe.InitialPrompt, Terms: sp.cfg.Transcribe.Contexts,
		Logger: sp.log.With("component", "whisper"),
	})
	if err != nil {
		return err
	}
	sp.whisper = w
	return nil
}

// start runs the speech path in g: capture (unless the input is none),
// transcription (when whisper is loaded; journaled audio first) and
// push-to-talk key events. With a file input, fileDone gets capture's result
// once the file is read.
func (sp *speech) start(ctx context.Context, g *errgroup.Group, kind inputKind) (fileDone <-chan error) {
	captureDone := make(chan struct{})
	done := make(chan error, 1)
	if kind != inputNone {
		g.Go(func() error {
			defer close(captureDone)
			err := sp.captureLoop(ctx, kind)
			if kind == inputFile {
				done <- err
			}
			return err
		})
	} else {
		close(captureDone)
	}
	if sp.whisper != nil {
		// Audio journaled before a crash or a power cut is transcribed
		// before anything new.
		recovered, err := sp.recoverJournal()
		if err != nil {
			sp.log.Error("recover journaled audio", "err", err)
		}
		g.Go(func() error { return sp.transcribeLoop(ctx, recovered, captureDone) })
	}
	if ptt := sp.cfg.Input.PTT; ptt.Enabled && ptt.EvdevDevice != "" {
		g.Go(func() error {
			return evdev.Run(ctx, ptt.EvdevDevice, evdev.Options{Code: uint16(ptt.KeyCode), Logger: sp.log.With("component", "ptt")},
				func(e evdev.Event) { sp.pushToTalk(e.Down) })
		})
	}
	return done
}

func (sp *speech) recoverJournal() ([]job, error) {
	pend, err := sp.store.PendingAudio()
	if err != nil {
		return nil, err
	}
	if len(pend) > 0 {
		sp.log.Info("transcribing audio journaled before the last stop", "utterances", len(pend))
	}
	jobs := make([]job, len(pend))
	for i, p := range pend {
		sp.pending.Add(1)
		jobs[i] = job{audioID: p.ID, samples: p.Samples, started: p.StartedAt, duration: samplesDur(int64(len(p.Samples))), source: "journal"}
	}
	return jobs, nil
}

// ShutdownGrace bounds how long a stopping daemon keeps transcribing what
// was already heard; what is left stays journaled for the next start.
const ShutdownGrace = 10 * time.Second

// StopLimit bounds a whole stop of the speech path: ShutdownGrace, then
// time to abort the whisper call running at its end, close the capture
// stream and route the last transcript. Past it the stop is abandoned (the
// audio stays journaled). It stays well inside the unit's TimeoutStopSec
// (30 s), so systemd never has to kill a stopping daemon.
const StopLimit = ShutdownGrace + 10*time.Second

// transcribeLoop runs whisper on journaled utterances, one at a time, and
// routes the text. On shutdown it waits for capture to hand over the
// utterance being spoken, then finishes the queue within ShutdownGrace.
func (sp *speech) transcribeLoop(ctx context.Context, recovered []job, captureDone <-chan struct{}) error {
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
				sp.pending.Done() // still journaled
			}
			break
		}
		sp.transcribeOne(work, j)
	}
	for {
		select {
		case j := <-sp.jobs:
			sp.transcribeOne(work, j)
		case <-ctx.Done():
			<-captureDone
			sp.log.Debug("capture stopped; finishing the transcription queue", "queued", len(sp.jobs))
			left := 0
			for {
				select {
				case j := <-sp.jobs:
					if work.Err() != nil {
						left++
						sp.pending.Done() // still journaled
						continue
					}
					sp.transcribeOne(work, j)
				default:
					if left > 0 {
						sp.log.Info("shutdown grace over; utterances stay journaled for the next start", "utterances", left)
					}
					return nil
				}
			}
		}
	}
}

func (sp *speech) transcribeOne(ctx context.Context, j job) {
	defer sp.pending.Done()
	res, err := sp.whisper.Transcribe(ctx, j.samples)
	if err != nil {
		sp.met.WhisperCallFailed()
		sp.sounds.Play("error")
		sp.log.Error("transcription failed; audio stays journaled", "audio_id", j.audioID, "err", err)
		return
	}
	sp.met.Transcribed(res.ProcessingTime, res.AudioDuration)
	sp.heard.Add(1)
	if res.Rejected != "" {
		sp.log.Debug("transcript rejected", "reason", res.Rejected)
	}
	mode := sp.router.Mode()
	out, err := sp.router.Handle(ctx, Heard{
		Text: res.Text, Lang: res.Lang, Confidence: res.Confidence,
		StartedAt: j.started, Duration: j.duration, Source: j.source, AudioID: j.audioID,
	})
	if err != nil {
		sp.refusals.noteRefusal(err)
		sp.log.Error("utterance not stored; audio stays journaled", "err", err)
		return
	}
	if out.Stored+out.Sent > 0 {
		sp.met.Utterance(mode)
	}
	sp.langs.put(res.Lang, out.ID, out.BatchID)
	sp.log.Info("utterance", "mode", out.ModeAfter, "stored", out.Stored, "sent", out.Sent, "wake", string(out.Wake),
		"chars", len(res.Text), "rtf", rtf(res))
}

func rtf(r transcribe.Result) float64 {
	if r.AudioDuration <= 0 {
		return 0
	}
	return r.ProcessingTime.Seconds() / r.AudioDuration.Seconds()
}
