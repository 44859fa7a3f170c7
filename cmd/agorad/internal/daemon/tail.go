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
// once more from a later cut (wake.AgainFrom).
func (sp *speech) hearTail(ctx context.Context, j job, res transcribe.Result, s *wake.Spot) *wake.Spot {
	if s == nil {
		return nil
	}
	from, ok := sp.rules.TailFrom(res.Text, res.Words, *s)
	if !ok {
		return s
	}
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, wake.Budget(res.Text))
	defer cancel()
	tr, err := sp.whisper.Transcribe(tctx, wake.TailAudio(j.samples, audio.SampleRate, from))
	if again, ok := wake.AgainFrom(res.Text, *s, from, tr.Text); ok && err == nil {
		// Within the same budget; on a failure the empty first hearing stands.
		if tr2, err2 := sp.whisper.Transcribe(tctx, wake.TailAudio(j.samples, audio.SampleRate, again)); err2 == nil {
			tr, from = tr2, again
		}
	}
	if err != nil {
		sp.log.Warn("the words after the name were not transcribed again; whisper's first text decides", "audio_id", j.audioID, "err", err)
		return s
	}
	sp.log.Debug("words after the name transcribed again", "audio_id", j.audioID, "tail", tr.Text, "rejected", tr.Rejected,
		"from", from, "took", time.Since(start).Round(time.Millisecond))
	heard := *s
	heard.Tail = tr.Text
	return &heard
}
