package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/turnend"
	"github.com/agora/agorad/wake/kws"
)

// Speculative transcription (issue 22): whisper starts on an utterance as
// soon as segment.speculate_after of silence followed it, inside the
// end-of-turn wait (segment.hangover), instead of after it. The segmenter's
// preview (segment.Tentative) is exactly the utterance it returns if the
// silence lasts, so when the turn ends on it the text is already there (or
// on its way) and nothing runs twice; when speech resumes first, the run is
// cancelled and its result dropped (whisper.cpp sees the abort only after
// its encoder, so a dropped run costs most of a call: hence the measured
// speculate_after, not the earliest possible).
//
// Ownership: the capture goroutine makes runs, cancels them and hands one to
// the job of the utterance it became (sp.specMu guards sp.spec, the run not
// yet handed over); only the transcribe goroutine runs whisper, so a run's
// result fields are its alone.

// specKey identifies an utterance of the segmenter.
type specKey struct{ pad, start, end int64 }

func keyOfUtterance(u segment.Utterance) specKey {
	return specKey{u.PadStart, u.SpeechStart, u.SpeechEnd}
}

// specRun is one speculative transcription.
type specRun struct {
	key     specKey
	samples []float32
	ctx     context.Context
	cancel  context.CancelFunc

	mu      sync.Mutex
	state   specState
	dropped bool // speech resumed: counted as dropped when whisper returns
	took    time.Duration
	res     transcribe.Result
	hit     *kws.Hit
	err     error
}

type specState int

const (
	specQueued   specState = iota
	specRunning            // whisper is on it (transcribe goroutine)
	specFinished           // res/err are set
	specSkipped            // dropped before it ran, or its job ran whisper itself
)

// speculate looks at the segmenter after each chunk: a new preview starts a
// run, speech going on drops the one outstanding. ctx is capture's.
func (sp *speech) speculate(ctx context.Context, seg *segment.Segmenter, gate *wearer.Tracker) {
	after := sp.cfg.Segment.SpeculateAfter.D()
	if after <= 0 || sp.whisper == nil {
		return
	}
	pad, start, end, ok := seg.TentativeKey(after)
	k := specKey{pad, start, end}
	sp.specMu.Lock()
	defer sp.specMu.Unlock()
	if cur := sp.spec; cur != nil && (!ok || cur.key != k) {
		sp.spec = nil
		sp.drop(cur)
	}
	if !ok || sp.spec != nil || len(sp.specs) == cap(sp.specs) {
		return // nothing new, or the transcriber has not taken the last one yet
	}
	u, _ := seg.Tentative(after) // only this goroutine drives seg: the same preview
	if !gate.Judge(u.Samples[u.SpeechStart-u.PadStart : u.SpeechEnd-u.PadStart]).Keep {
		return // the gate will drop it: no whisper call on it
	}
	rctx, cancel := context.WithCancel(ctx)
	run := &specRun{key: k, samples: u.Samples, ctx: rctx, cancel: cancel}
	select {
	case sp.specs <- run:
		sp.spec = run
	default:
		cancel() // cannot happen (only this goroutine sends); tried again on the next chunk
	}
}

// drop ends a run the speaker talked over: a longer utterance is coming.
// Its whisper time counts as the cost of speculating.
func (sp *speech) drop(run *specRun) {
	run.mu.Lock()
	switch run.state {
	case specQueued:
		run.state = specSkipped
		sp.specMet.Dropped(0)
	case specRunning:
		run.dropped = true // runSpec counts it
	case specFinished:
		sp.specMet.Dropped(run.took)
	}
	run.mu.Unlock()
	run.cancel() // whisper stops at its next abort check (after the encoder)
	sp.log.Debug("speculative transcription dropped: speech resumed", "speech_end", run.key.end)
}

// claimSpec hands the run previewing the utterance k (if any) to its job.
func (sp *speech) claimSpec(k specKey) *specRun {
	sp.specMu.Lock()
	defer sp.specMu.Unlock()
	run := sp.spec
	if run == nil || run.key != k {
		return nil
	}
	sp.spec = nil
	return run
}

// runSpec runs a speculative transcription (transcribe goroutine), unless
// it was dropped or its job came first.
func (sp *speech) runSpec(run *specRun) {
	run.mu.Lock()
	if run.state != specQueued || run.ctx.Err() != nil {
		run.mu.Unlock()
		return
	}
	run.state = specRunning
	run.mu.Unlock()
	began := time.Now()
	spotted := sp.spot([]job{{samples: run.samples, audioID: "speculative"}})
	res, err := sp.whisper.Transcribe(run.ctx, run.samples)
	hit := spotted()[0]
	run.mu.Lock()
	defer run.mu.Unlock()
	run.state, run.took, run.res, run.hit, run.err = specFinished, time.Since(began), res, hit, err
	if run.dropped {
		sp.specMet.Dropped(run.took)
	}
}

// specResult returns the speculative result for j when its run finished
// with one (transcribe goroutine); a run not yet started never will.
func (sp *speech) specResult(j job) (transcribe.Result, *kws.Hit, bool) {
	run := j.spec
	if run == nil {
		return transcribe.Result{}, nil, false
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.state != specFinished {
		run.state = specSkipped
		run.cancel()
		return transcribe.Result{}, nil, false
	}
	if run.err != nil {
		return transcribe.Result{}, nil, false
	}
	sp.specMet.Used()
	return run.res, run.hit, true
}

// endComplete ends the turn before the hangover (issue 47) when the
// speculative transcript of the utterance in progress is complete
// (transcribe/turnend, by segment.complete_rule) and segment.complete_wait of silence followed it:
// the utterance is the one the run transcribed, so its job takes that
// result. An unfinished text, a failed run or one still going keeps the
// hangover (the run is polled again on the next chunk).
func (sp *speech) endComplete(seg *segment.Segmenter) (segment.Utterance, bool) {
	wait := sp.cfg.Segment.CompleteWait.D()
	if wait <= 0 {
		return segment.Utterance{}, false
	}
	sp.specMu.Lock()
	run := sp.spec
	sp.specMu.Unlock()
	if run == nil {
		return segment.Utterance{}, false
	}
	run.mu.Lock()
	text := run.res.Text
	rule := turnend.Rule(sp.cfg.Segment.CompleteRule) // validated: question or sentence
	complete := run.state == specFinished && run.err == nil && run.res.Rejected == "" && rule != nil && rule(text)
	run.mu.Unlock()
	if !complete {
		return segment.Utterance{}, false
	}
	u, ok := seg.EndNow(run.key.pad, run.key.start, run.key.end, wait)
	if ok {
		sp.log.Debug("turn ended early: the speculative transcript is complete", "text", text, "wait", wait)
	}
	return u, ok
}
