package daemon

import (
	"math"
	"strings"

	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/transcribe"
)

// wearersWords keeps the words of res loud enough to be the wearer's (the
// wearer gate's word check, against the level the utterance was kept by):
// quieter speech of others inside a kept utterance is not kept as a note.
// Results without a reference (push-to-talk, the journal) or without word
// times pass unchanged.
func (sp *speech) wearersWords(j job, res transcribe.Result) transcribe.Result {
	if math.IsNaN(j.wearerRef) || j.wearerRef == 0 || len(res.Words) == 0 {
		return res
	}
	cfg := sp.wearerConfig()
	spans := make([]wearer.Span, len(res.Words))
	for i, w := range res.Words {
		spans[i] = wearer.Span{Start: w.Start, End: w.End}
	}
	keep := cfg.KeepWords(wearer.FrameLevels(j.samples), spans, j.wearerRef)
	var kept []transcribe.Word
	var dropped []string
	for i, w := range res.Words {
		if keep[i] {
			kept = append(kept, w)
		} else {
			dropped = append(dropped, w.Text)
		}
	}
	if len(dropped) == 0 {
		return res
	}
	sp.met.WearerWordsDropped(len(dropped))
	sp.log.Debug("words not the wearer's: dropped", "words", len(dropped), "of", len(res.Words))
	texts := make([]string, len(kept))
	for i, w := range kept {
		texts[i] = w.Text
	}
	res.Words, res.Text = kept, strings.Join(texts, " ")
	return res
}

// levelsOf is the wearer gate's snapshot as agoractl status and doctor get it.
func levelsOf(s wearer.Snapshot, gate bool) *control.Levels {
	l := &control.Levels{Gate: gate, Seconds: s.Seconds, FloorDBFS: round1(s.Floor), ExpectedDBFS: s.Expected,
		Utterances: s.Utterances, Dropped: s.Dropped, Clipped: s.Clipped}
	if !math.IsNaN(s.Heard) {
		h := round1(s.Heard)
		l.WearerDBFS = &h
	}
	if !math.IsNaN(s.DroppedLevel) {
		d := round1(s.DroppedLevel)
		l.DroppedDBFS = &d
	}
	return l
}
