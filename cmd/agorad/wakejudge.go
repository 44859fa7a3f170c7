package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/cmd/agorad/internal/daemon"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/model"
	"github.com/agora/agorad/wake"
	"github.com/agora/agorad/wake/kws"
)

// wakeJudge decides what an utterance asks: whisper's text through the
// wake rules, and, when the keyword spotter runs, the name heard in the
// audio itself, fused with what whisper wrote there (wake.Rules.MatchSpot),
// and a short tail after a spotted name transcribed again for listen words
// (wake.Rules.TailFrom), as the daemon does.
type wakeJudge struct {
	rules *wake.Rules
	spot  *kws.Spotter         // nil: text alone
	tail  utteranceTranscriber // hears tails again; nil: never
}

// judged is the verdict on one utterance.
type judged struct {
	m, text wake.Match // the verdict, and whisper's text alone's
	hit     *kws.Hit   // the spotter's best window, nil without a spotter
	tail    *tailHeard // the tail heard again, nil when none was
}

// tailHeard is a tail after a spotted name transcribed on its own.
type tailHeard struct {
	from time.Duration // where it starts in the utterance
	text string
	took time.Duration
	err  error // why it has no text
}

// match judges one utterance.
func (j wakeJudge) match(ctx context.Context, samples []float32, res transcribe.Result) (judged, error) {
	text := j.rules.Match(res.Text)
	if j.spot == nil {
		return judged{m: text, text: text}, nil
	}
	h, err := j.spot.Spot(samples)
	if err != nil {
		return judged{}, err
	}
	out := judged{text: text, hit: &h}
	s := *daemon.SpotOf(&h)
	if from, ok := j.rules.TailFrom(res.Text, res.Words, s); ok && j.tail != nil {
		start := time.Now()
		tail, from, err := wake.HearTail(ctx, func(ctx context.Context, samples []float32) (string, error) {
			tr, err := j.tail.Transcribe(ctx, samples)
			return tr.Text, err
		}, samples, audio.SampleRate, res.Text, s, from)
		if err != nil && ctx.Err() != nil {
			return judged{}, fmt.Errorf("transcribe the %s after the name again: %w", time.Duration(len(samples))*time.Second/audio.SampleRate-from, err)
		}
		// As in the daemon, a tail that failed or took too long leaves the
		// verdict to whisper's first text (HearTail returns none then).
		out.tail = &tailHeard{from: from, text: tail, took: time.Since(start), err: err}
		s.Tail = tail
	}
	out.m = j.rules.MatchSpot(res.Text, res.Words, s)
	return out, nil
}

// openSpotter opens the keyword spotter with the built-in heads, or those
// of headDir when set (kws.OpenHeadDir): its front end from dir (a
// directory holding kws/ or the files themselves), or found in the model
// places when dir is empty.
func openSpotter(dir, headDir string, threshold float64) (*kws.Spotter, error) {
	if headDir != "" {
		if dir == "" {
			return kws.OpenHeadDirFound(headDir, threshold, model.Dirs()...)
		}
		return kws.OpenHeadDir(dir, headDir, threshold)
	}
	if dir == "" {
		return kws.OpenDefault(threshold, model.Dirs()...)
	}
	return kws.OpenWith(dir, threshold)
}
