package daemon

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/cmd/agorad/internal/evdev"
	"github.com/agora/agorad/cmd/agorad/internal/metrics"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/model"
	"github.com/agora/agorad/wake"
	"github.com/agora/agorad/wake/kws"
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
	model   string  // whisper model file, for status
	spotter Spotter // hears the name in the audio; nil: whisper's text alone

	pttMu   sync.Mutex
	ptt     atomic.Bool
	pttEdge chan bool // push-to-talk presses and releases, from evdev and agoractl

	// opened is closed once the audio source is open (READY=1 waits for it).
	opened     chan struct{}
	openedOnce sync.Once

	// Speculative runs (speculate.go): specs to the transcribe goroutine,
	// spec the one not yet handed to its job.
	specs   chan *specRun
	specMu  sync.Mutex
	spec    *specRun
	specMet *metrics.Speculative

	jobs    chan job // journaled utterances waiting for whisper
	pending sync.WaitGroup
	heard   atomic.Uint64 // whisper calls that returned

	// levels is the capture loop's wearer gate, for the levels doctor and
	// agoractl status show (nil until capture runs hands-free).
	levels atomic.Pointer[wearer.Tracker]
}

// job is one journaled utterance on its way to whisper.
type job struct {
	audioID  string
	samples  []float32
	started  time.Time
	duration time.Duration
	source   string
	// speechEnd (the last speech sample) and turnEnd (when the segmenter
	// ended the turn) time a live turn (turns.go); zero for a file or the
	// journal, whose clock is not the inspector's.
	speechEnd, turnEnd time.Time
	spec               *specRun // the speculative run previewing it, if any
	// wearerRef is the level the wearer gate checks its words against
	// after whisper (words.go); NaN or 0 (recovered from the journal): none.
	wearerRef float64
}

// markOpened records that the voice path runs: audio is being read.
func (sp *speech) markOpened() { sp.openedOnce.Do(func() { close(sp.opened) }) }

func (sp *speech) close() {
	if sp.whisper != nil {
		sp.whisper.Close()
	}
	if sp.spotter != nil {
		sp.spotter.Close()
	}
}

// Spotter hears the name in an utterance's audio (wake/kws.Spotter).
type Spotter interface {
	Spot(samples []float32) (kws.Hit, error)
	Close() error
}

// loadSpotter opens the keyword spotter as wake.spotter asks: "auto" goes
// on without it (whisper's text alone finds the name) when its front end is
// missing, "on" does not.
func (sp *speech) loadSpotter() error {
	mode := sp.cfg.Wake.SpotterMode()
	if mode == "off" {
		return nil
	}
	var s *kws.Spotter
	var err error
	if head := sp.cfg.Wake.SpotterHead; head != "" {
		s, err = kws.OpenHeadDirFound(head, sp.cfg.Wake.SpotterThreshold, model.Dirs(sp.cfg.ModelsDir())...)
	} else {
		s, err = kws.OpenDefault(sp.cfg.Wake.SpotterThreshold, model.Dirs(sp.cfg.ModelsDir())...)
	}
	if err != nil {
		if mode == "on" {
			return fmt.Errorf("wake.spotter is on: %w", err)
		}
		sp.log.Warn("keyword spotter unavailable: the name is found in whisper's text alone", "err", err)
		return nil
	}
	sp.spotter = s
	sp.log.Info("keyword spotter ready", "threshold", s.Threshold(), "kernels", s.Kernels(), "heads", cmp.Or(sp.cfg.Wake.SpotterHead, "built-in"))
	return nil
}

// spot runs the spotter on each job's audio while whisper works on them
// (it needs one core for a fraction of whisper's time); wait returns one
// hit per job, nil where there is no spotter or it failed (then whisper's
// text alone decides, as without a spotter).
func (sp *speech) spot(jobs []job) (wait func() []*kws.Hit) {
	hits := make([]*kws.Hit, len(jobs))
	if sp.spotter == nil {
		return func() []*kws.Hit { return hits }
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, j := range jobs {
			h, err := sp.spotter.Spot(j.samples)
			if err != nil {
				sp.log.Warn("keyword spotter failed; whisper's text alone decides", "audio_id", j.audioID, "err", err)
				continue
			}
			hits[i] = &h
		}
	}()
	return func() []*kws.Hit { <-done; return hits }
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
	rules := sp.cfg.Wake.Rules()
	vocab, err := sp.cfg.Transcribe.VocabularyTerms()
	if err != nil {
		return err
	}
	w, err := transcribe.New(transcribe.Options{
		ModelPath: path, Language: sp.cfg.Transcribe.Language, Languages: sp.cfg.Transcribe.Languages,
		SwitchP: sp.cfg.Transcribe.LanguageSwitch, Threads: sp.cfg.Transcribe.Threads,
		InitialPrompt: sp.cfg.Transcribe.InitialPrompt, Terms: sp.cfg.Transcribe.Contexts, Vocabulary: vocab,
		Hotwords: rules.Hotwords(), HotwordBias: rules.Bias, Window: transcribe.Window(sp.cfg.Transcribe.Window),
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
	sp.opened = make(chan struct{})
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

// batchTranscriber packs utterances that wait together into shared whisper
// windows (*transcribe.Transcriber): one encoder pass for the lot.
type batchTranscriber interface {
	TranscribeBatch(ctx context.Context, utts [][]float32) ([]transcribe.Result, error)
}

// transcribeLoop runs whisper on journaled utterances and routes the text,
// in the order they were heard. An utterance that arrives to an idle worker
// goes to whisper at once, alone; when a backlog has built up (journaled
// audio at start, or speech arriving faster than whisper keeps up) the
// utterances already waiting share whisper windows. It never waits for more
// audio to fill a window. On shutdown it waits for capture to hand over the
// utterance being spoken, then finishes the queue within ShutdownGrace.
func (sp *speech) transcribeLoop(ctx context.Context, recovered []job, captureDone <-chan struct{}) error {
	// work ends ShutdownGrace after ctx: the call running at the stop and the
	// queue behind it share the grace, and a call still running then is
	// aborted (its audio stays journaled).
	work, endWork := context.WithCancel(context.WithoutCancel(ctx))
	defer endWork()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(ShutdownGrace, endWork) })
	defer stopGrace()
	for len(recovered) > 0 {
		if ctx.Err() != nil {
			for range recovered {
				sp.pending.Done() // still journaled
			}
			break
		}
		n := sp.window(recovered)
		sp.transcribeJobs(work, recovered[:n])
		recovered = recovered[n:]
	}
	var queue []job // taken from sp.jobs, not yet transcribed
	for {
		if len(queue) == 0 {
			select {
			case j := <-sp.jobs: // a finished turn goes before a speculative run
				queue = append(queue, j)
			default:
				select {
				case j := <-sp.jobs:
					queue = append(queue, j)
				case run := <-sp.specs:
					sp.runSpec(run)
					continue
				case <-ctx.Done():
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		queue = sp.takeWaiting(queue)
		n := sp.window(queue)
		sp.transcribeJobs(work, queue[:n])
		queue = queue[n:]
	}
	<-captureDone
	sp.log.Debug("capture stopped; finishing the transcription queue", "queued", len(queue)+len(sp.jobs))
	for {
		select {
		case j := <-sp.jobs:
			queue = append(queue, j)
			continue
		default:
		}
		break
	}
	left := 0
	for len(queue) > 0 {
		if work.Err() != nil {
			left += len(queue)
			for range queue {
				sp.pending.Done() // still journaled
			}
			break
		}
		n := sp.window(queue)
		sp.transcribeJobs(work, queue[:n])
		queue = queue[n:]
	}
	if left > 0 {
		sp.log.Info("shutdown grace over; utterances stay journaled for the next start", "utterances", left)
	}
	return nil
}

// takeWaiting adds to queue the jobs already waiting in sp.jobs, until the
// queue holds a whisper window's worth; it never blocks.
func (sp *speech) takeWaiting(queue []job) []job {
	if _, ok := sp.whisper.(batchTranscriber); !ok {
		return queue
	}
	for sp.window(queue) == len(queue) {
		select {
		case j := <-sp.jobs:
			queue = append(queue, j)
		default:
			return queue
		}
	}
	return queue
}

// window is how many jobs at the head of queue go to whisper together: as
// many as fit one packed window (transcribe.PackWindow, PackGap between
// them), at least one; one when whisper does not pack.
func (sp *speech) window(queue []job) int {
	if _, ok := sp.whisper.(batchTranscriber); !ok || len(queue) < 2 {
		return min(1, len(queue))
	}
	gap, limit := samplesIn(transcribe.PackGap), samplesIn(transcribe.PackWindow)
	n, total := 1, len(queue[0].samples)
	for n < len(queue) && total+gap+len(queue[n].samples) <= limit {
		total += gap + len(queue[n].samples)
		n++
	}
	return n
}

func samplesIn(d time.Duration) int { return int(d * audio.SampleRate / time.Second) }

// transcribeJobs transcribes jobs (one, or a backlog packed into one window)
// and routes each result in order, one Heard per utterance, exactly as one
// call per utterance would.
func (sp *speech) transcribeJobs(ctx context.Context, jobs []job) {
	for len(jobs) > 1 && jobs[0].spec != nil {
		sp.transcribeOne(ctx, jobs[0]) // its text may be there already
		jobs = jobs[1:]
	}
	if len(jobs) == 1 {
		sp.transcribeOne(ctx, jobs[0])
		return
	}
	utts := make([][]float32, len(jobs))
	for i, j := range jobs {
		utts[i] = j.samples
	}
	spotted := sp.spot(jobs)
	results, err := sp.whisper.(batchTranscriber).TranscribeBatch(ctx, utts)
	hits := spotted()
	for i, res := range results {
		sp.route(ctx, jobs[i], res, hits[i])
	}
	if err != nil {
		rest := jobs[len(results):]
		if ctx.Err() != nil {
			for _, j := range rest {
				sp.failed(j, err)
			}
			return
		}
		// One utterance's whisper call failed inside the window: each of the
		// rest gets its own call, so one bad utterance costs only itself.
		sp.log.Warn("packed transcription failed; transcribing the utterances one by one", "utterances", len(rest), "err", err)
		for _, j := range rest {
			sp.transcribeOne(ctx, j)
		}
	}
}

func (sp *speech) transcribeOne(ctx context.Context, j job) {
	if res, hit, ok := sp.specResult(j); ok {
		sp.route(ctx, j, res, hit)
		return
	}
	spotted := sp.spot([]job{j})
	res, err := sp.whisper.Transcribe(ctx, j.samples)
	hit := spotted()[0]
	if err != nil {
		sp.failed(j, err)
		return
	}
	sp.route(ctx, j, res, hit)
}

// failed records a whisper call that did not return text for j.
func (sp *speech) failed(j job, err error) {
	defer sp.pending.Done()
	sp.met.WhisperCallFailed()
	sp.sounds.Play("error")
	sp.log.Error("transcription failed; audio stays journaled", "audio_id", j.audioID, "err", err)
}

// route hands j's transcript to the router, which releases its journal
// entry once the text is stored or sent.
func (sp *speech) route(ctx context.Context, j job, res transcribe.Result, hit *kws.Hit) {
	defer sp.pending.Done()
	sp.met.Transcribed(res.ProcessingTime, res.AudioDuration)
	kept := sp.wearersWords(j, res)
	spot := sp.hearTail(ctx, j, kept, spotFor(res, kept, hit))
	res = kept
	transcribed := time.Now() // the tail heard again is part of the turn's wait
	sp.heard.Add(1)
	if res.Rejected != "" {
		sp.log.Debug("transcript rejected", "reason", res.Rejected)
	}
	mode := sp.router.Mode()
	out, err := sp.router.Handle(ctx, Heard{
		Text: res.Text, Lang: res.Lang, Confidence: res.Confidence,
		StartedAt: j.started, Duration: j.duration, Source: j.source, AudioID: j.audioID,
		Spot: spot, Words: res.Words,
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
	question := ""
	if out.Sent > 0 {
		question = out.ID
	}
	sp.turns.Heard(question, j.speechEnd, j.turnEnd, transcribed)
	sp.log.Info("utterance", "mode", out.ModeAfter, "stored", out.Stored, "sent", out.Sent, "wake", string(out.Wake),
		"chars", len(res.Text), "rtf", rtf(res))
}

func rtf(r transcribe.Result) float64 {
	if r.AudioDuration <= 0 {
		return 0
	}
	return r.ProcessingTime.Seconds() / r.AudioDuration.Seconds()
}

// spotFor is the spotter's verdict for the router on an utterance whisper
// wrote text for and the wearer gate kept of it: nil when the gate took
// every word. Someone else spoke then, and a name in it is theirs; an
// utterance whisper itself wrote nothing for keeps the verdict (a name the
// spotter is sure of wakes without text, wake.Rules.MatchSpot).
func spotFor(whisper, kept transcribe.Result, h *kws.Hit) *wake.Spot {
	if strings.TrimSpace(kept.Text) == "" && strings.TrimSpace(whisper.Text) != "" {
		return nil
	}
	return SpotOf(h)
}

// SpotOf is the spotter's verdict for the wake rules, nil when it did not
// run: the router's here, `agorad transcribe`'s in cmd/agorad.
func SpotOf(h *kws.Hit) *wake.Spot {
	if h == nil {
		return nil
	}
	return &wake.Spot{Score: h.Score, End: h.End, Heard: h.Heard, Late: h.Late}
}
