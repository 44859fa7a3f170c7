package main

import (
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/model"
	"github.com/agora/agorad/wake"
	"github.com/agora/agorad/wake/kws"
)

// wakeJudge decides what an utterance asks: whisper's text through the
// wake rules, and, when the keyword spotter runs, the name heard in the
// audio itself, fused with what whisper wrote there (wake.Rules.MatchSpot).
type wakeJudge struct {
	rules *wake.Rules
	spot  *kws.Spotter // nil: text alone
}

// match returns the verdict on one utterance, whisper's text alone's
// verdict (the same when the spotter did not hear the name) and the
// spotter's best window (nil without a spotter).
func (j wakeJudge) match(samples []float32, res transcribe.Result) (m, text wake.Match, hit *kws.Hit, err error) {
	text = j.rules.Match(res.Text)
	if j.spot == nil || res.Text == "" {
		return text, text, nil, nil
	}
	h, err := j.spot.Spot(samples)
	if err != nil {
		return wake.Match{}, wake.Match{}, nil, err
	}
	return j.rules.MatchSpot(res.Text, res.Words, wake.Spot{Score: h.Score, End: h.End, Heard: h.Heard}), text, &h, nil
}

// openSpotter opens the keyword spotter with the built-in head: its front
// end from dir (a directory holding kws/ or the files themselves), or found
// in the model places when dir is empty.
func openSpotter(dir string, threshold float64) (*kws.Spotter, error) {
	if dir == "" {
		return kws.OpenDefault(threshold, model.Dirs()...)
	}
	head, err := kws.DefaultHead()
	if err != nil {
		return nil, err
	}
	return kws.Open(dir, head, threshold)
}
