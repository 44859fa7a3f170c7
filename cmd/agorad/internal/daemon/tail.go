package daemon

import (
	"context"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/wake"
)

// hearTail transcribes the short stretch after a name the spotter heard
// again, on its own, when the wake rules ask for it (wake.Rules.TailFrom):
// whisper, derailed by the name it does not know, garbles the listen words
// after it ("I will have a reason." for "Agora, listen."), and the
// inspector's switch back would go to the backend as a question. It runs
// on the transcription goroutine, whisper being free by then; a failure,
// or a transcription longer than wake.Budget, leaves the verdict to
// whisper's first text. Where that text is empty (whisper's guard dropped
// what it wrote) and the spotter is sure of the name, everything after the
// name is heard again: it is the question; when that too gives nothing,
// once more from a later cut (wake.HearTail, wake.AgainFrom).
func (sp *speech) hearTail(ctx context.Context, j job, res transcribe.Result, s *wake.Spot) *wake.Spot {
	if s == nil {
		return nil
	}
	from, ok := sp.rules.TailFrom(res.Text, res.Words, *s)
	if !ok {
		return s
	}
	start := time.Now()
	var rejected string // of the last hearing, for the log
	tail, from, err := wake.HearTail(ctx, func(ctx context.Context, samples []float32) (string, error) {
		tr, err := sp.whisper.Transcribe(ctx, samples)
		rejected = tr.Rejected
		return tr.Text, err
	}, j.samples, audio.SampleRate, res.Text, *s, from)
	if err != nil {
		sp.log.Warn("the words after the name were not transcribed again; whisper's first text decides", "audio_id", j.audioID, "err", err)
		return s
	}
	sp.log.Debug("words after the name transcribed again", "audio_id", j.audioID, "tail", tail, "rejected", rejected,
		"from", from, "took", time.Since(start).Round(time.Millisecond))
	heard := *s
	heard.Tail = tail
	return &heard
}
