package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/transcribe/model"
)

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

func (sp *speech) source(ctx context.Context, kind inputKind) (audio.Source, error) {
	if sp.openSource != nil {
		return sp.openSource(ctx)
	}
	src := sp.cfg.Input.Source
	if kind == inputFile {
		a, err := audio.OpenWAVSource(src, 0, time.Now())
		if err != nil {
			return nil, fmt.Errorf("input file: %w", err)
		}
		return a, nil
	}
	a, err := audio.OpenCapture(ctx, audio.CaptureOptions{Device: src, Logger: sp.log.With("component", "capture")})
	if err != nil {
		// Often a machine without a sound card (a server, a container):
		// say how to run without one.
		return nil, fmt.Errorf("microphone %q: %w; without a microphone run with input none (--input none, make run INPUT=none: typed notes through agoractl) or a WAV file (--input FILE.wav, make run INPUT=FILE.wav)", src, err)
	}
	return a, nil
}

// captureLoop reads audio and cuts it into utterances: by voice activity
// when hands-free, and by the push-to-talk key while it is held.
func (sp *speech) captureLoop(ctx context.Context, kind inputKind) error {
	vadPath, err := model.ResolveIn("vad", sp.cfg.Models.VAD, sp.cfg.ModelsDir())
	if err != nil {
		return err
	}
	det, err := vad.Open(vadPath, vad.Options{Threads: 1})
	if err != nil {
		return err
	}
	defer det.Close()
	seg, err := segment.New(det, sp.segmentConfig())
	if err != nil {
		return fmt.Errorf("segmentation config: %w", err)
	}
	gate, err := wearer.NewTracker(sp.wearerConfig())
	if err != nil {
		return fmt.Errorf("wearer config: %w", err)
	}
	sp.levels.Store(gate)
	src, err := sp.source(ctx, kind)
	if err != nil {
		return err
	}
	sp.markOpened()
	defer func() {
		began := time.Now()
		src.Close()
		sp.log.Debug("capture closed", "took", time.Since(began))
	}()
	source := "mic"
	if kind == inputFile {
		source = "file:" + filepath.Base(sp.cfg.Input.Source)
	}
	handsFree := sp.cfg.Input.HandsFree || kind == inputFile
	ptt := sp.cfg.Input.PTT
	// Look for a pause in the last quarter of a piece (at most as far back as
	// hands-free splitting looks), so pieces stay close to the maximum.
	hold, err := segment.NewHold(ptt.MaxUtterance.D(), min(segment.DefaultConfig().SplitSearch, ptt.MaxUtterance.D()/4))
	if err != nil {
		return fmt.Errorf("input.ptt.max_utterance: %w", err)
	}
	var last segment.Stats
	var lastLevels time.Time
	stuckWarned := false
	emit := func(p segment.Piece) {
		if p.Index > 0 || !p.Last {
			sp.log.Debug("push-to-talk piece", "index", p.Index, "last", p.Last, "seconds", float64(len(p.Samples))/audio.SampleRate)
		}
		sp.enqueueUtterance(ctx, p.Samples, p.Start, samplesDur(int64(len(p.Samples))), "ptt")
	}
	for {
		c, err := src.Read(ctx)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err() // a source with audio always ready must not outrun a stop
		}
		if err != nil {
			if handsFree {
				for _, g := range gate.Flush() {
					us, err := seg.Push(g)
					if err != nil {
						sp.log.Warn("segmentation", "err", err)
					}
					sp.keepWearers(ctx, gate, us, source)
				}
				sp.keepWearers(ctx, gate, seg.Flush(), source)
			}
			if p, ok := hold.Release(); ok {
				emit(p)
			}
			sp.noteSegStats(seg.Stats(), &last)
			if errors.Is(err, context.Canceled) || isEOF(err) {
				return nil
			}
			return fmt.Errorf("read audio: %w", err)
		}
		// Push-to-talk: capture only while held; release ends the utterance.
		for drained := false; !drained; {
			select {
			case down := <-sp.pttEdge:
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
				sp.met.PTTCut()
				emit(p)
			}
			if !stuckWarned && ptt.StuckAfter > 0 && hold.HeldFor() >= ptt.StuckAfter.D() {
				stuckWarned = true
				sp.met.PTTStuck()
				sp.log.Warn("push-to-talk held unusually long; is the key stuck? audio keeps being cut into pieces and stored",
					"held", hold.HeldFor().Round(time.Second), "stuck_after", ptt.StuckAfter.D(), "piece_max", ptt.MaxUtterance.D())
			}
			continue
		}
		if !handsFree {
			continue
		}
		// The wearer gate hands the segmenter the stream Delay late, with
		// what is quieter than the wearer silenced.
		for _, g := range gate.Push(sp.muteEcho(c)) {
			us, err := seg.Push(g)
			if err != nil {
				sp.log.Warn("segmentation", "err", err)
			}
			sp.keepWearers(ctx, gate, us, source)
		}
		if c.Time.Sub(lastLevels) >= time.Second {
			gate.Update(c.Time) // doctor's levels move in silence too
			lastLevels = c.Time
		}
		sp.speculate(ctx, seg, gate)
		if u, ok := sp.endComplete(seg); ok {
			sp.keepWearers(ctx, gate, []segment.Utterance{u}, source)
		}
		sp.noteSegStats(seg.Stats(), &last)
	}
}

// keepWearers hands the utterances the wearer gate keeps to whisper; the
// others cost nothing more.
func (sp *speech) keepWearers(ctx context.Context, gate *wearer.Tracker, us []segment.Utterance, source string) {
	for _, u := range us {
		d := gate.Decide(u.Samples[u.SpeechStart-u.PadStart:u.SpeechEnd-u.PadStart], u.Start)
		if !d.Keep {
			spec := sp.claimSpec(keyOfUtterance(u))
			if spec != nil {
				spec.cancel()
			}
			sp.met.WearerDropped()
			sp.log.Debug("utterance not the wearer's: not transcribed", "why", d.Why, "level_dbfs", round1(d.Level),
				"wearer_dbfs", round1(d.Wearer), "floor_dbfs", round1(d.Floor), "seconds", samplesDur(u.SpeechEnd-u.SpeechStart).Seconds())
			continue
		}
		sp.enqueueGated(ctx, u.Samples, u.Start, samplesDur(u.SpeechEnd-u.SpeechStart), source, sp.claimSpec(keyOfUtterance(u)), d.Ref)
	}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

// wearerConfig is the wearer gate's configuration (configs' wearer section).
func (sp *speech) wearerConfig() wearer.Config {
	w := sp.cfg.Wearer
	return wearer.Config{Enabled: w.Enabled, ExpectedDBFS: w.ExpectedDBFS, BelowDB: w.BelowDB, FrameBelowDB: w.FrameBelowDB,
		WordBelowDB: w.WordBelowDB, MinSNRDB: w.MinSNRDB, MaxDriftDB: w.MaxDriftDB, Lookahead: w.Lookahead.D(), Hold: w.Hold.D()}
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) }

func samplesDur(n int64) time.Duration { return time.Duration(n) * time.Second / audio.SampleRate }

func (sp *speech) noteSegStats(s segment.Stats, last *segment.Stats) {
	sp.met.VADFrames(int(s.Gated-last.Gated), int(s.Probed-last.Probed))
	*last = s
}

func (sp *speech) segmentConfig() segment.Config {
	c := segment.DefaultConfig()
	s := sp.cfg.Segment
	c.GateFloorDBFS = s.EnergyGateDBFS
	c.OnsetThreshold, c.OffsetThreshold = s.VADOnset, s.VADOffset
	c.MinSpeech, c.MinSilence = s.MinSpeech.D(), s.Hangover.D()
	c.PreRoll, c.PostPad, c.MaxUtterance = s.PreRoll.D(), s.PostPad.D(), s.MaxUtterance.D()
	return c
}

// enqueueUtterance journals the audio (so a crash before its transcript is
// stored loses nothing) and hands it to whisper. A full journal is refused
// loudly: the inspector hears the error sound.
func (sp *speech) enqueueUtterance(ctx context.Context, samples []float32, start time.Time, dur time.Duration, source string) {
	sp.enqueueUtteranceSpec(ctx, samples, start, dur, source, nil)
}

// enqueueUtteranceSpec is enqueueUtterance with the speculative run that
// previewed the utterance (nil: none).
func (sp *speech) enqueueUtteranceSpec(ctx context.Context, samples []float32, start time.Time, dur time.Duration, source string, spec *specRun) {
	sp.enqueueGated(ctx, samples, start, dur, source, spec, math.NaN())
}

// enqueueGated is enqueueUtteranceSpec for an utterance the wearer gate
// kept: ref is the level its words are checked against after whisper (NaN:
// no check, as for push-to-talk).
func (sp *speech) enqueueGated(ctx context.Context, samples []float32, start time.Time, dur time.Duration, source string, spec *specRun, ref float64) {
	if len(samples) == 0 {
		return
	}
	decided := time.Now() // the turn's end, before the journal's fsync
	id, err := sp.store.JournalAudio(samples, start)
	if err != nil && sp.refusals.storage.canKeep(err, sp.router.Mode()) {
		// The store failed but its text can be kept otherwise (sent
		// unstored, held in memory: health.go): transcribe from memory
		// rather than lose what was said.
		sp.refusals.noteRefusal(err)
		sp.log.Warn("utterance audio not journaled (the store failed): transcribing it from memory", "err", err)
		id, err = "", nil
	}
	if err != nil {
		if spec != nil {
			spec.cancel()
		}
		sp.refusals.noteRefusal(err)
		sp.sounds.Play("error")
		sp.log.Error("utterance refused: could not journal its audio", "err", err, "seconds", float64(len(samples))/audio.SampleRate)
		return
	}
	sp.pending.Add(1)
	j := job{audioID: id, samples: samples, started: start, duration: dur, source: source, spec: spec, wearerRef: ref}
	if source == "mic" || source == "ptt" {
		// start is the wall clock of the first speech sample and dur the
		// speech (VAD) or the press (push-to-talk).
		j.speechEnd, j.turnEnd = start.Add(dur), decided
	}
	if ctx.Err() != nil {
		// Stopping: hand over the last utterance if there is room; the
		// transcriber drains the queue before it stops.
		select {
		case sp.jobs <- j:
		default:
			sp.pending.Done() // stays journaled; transcribed on the next start
		}
		return
	}
	select {
	case sp.jobs <- j:
	case <-ctx.Done():
		sp.pending.Done() // stays journaled; transcribed on the next start
	}
}

// pushToTalk takes key edges from evdev and agoractl.
func (sp *speech) pushToTalk(down bool) {
	if sp.replies != nil {
		sp.replies.SetPTT(down) // barge-in: speech stops at the press
	}
	sp.pttMu.Lock()
	defer sp.pttMu.Unlock()
	if sp.ptt.Load() == down {
		return // repeated edge
	}
	select {
	case sp.pttEdge <- down:
		sp.ptt.Store(down) // after the send: whoever sees the state sees the edge queued
	default:
		sp.log.Warn("push-to-talk events arriving faster than audio; edge dropped", "down", down)
	}
}
