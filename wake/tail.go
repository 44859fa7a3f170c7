package wake

import (
	"context"
	"strings"
	"time"
)

// Hearing the listen words again. When whisper does not know the name it
// is derailed by it, and a short "Agora, listen." comes out as "I don't
// like this.", "I will have a reason." or "Agralism.": the spotter heard
// the name, but no listen word follows it in the text, so the device
// would take the switch back for a question. The audio after the name,
// transcribed on its own, has no unknown word in it: on the wake
// benchmark's English listen files tiny.en switched back on 18 of 24 with
// the tail heard again, 13 of 24 without (issue 21's third round,
// docs/wake.md "Listen words after a spotted name").

// MaxTail is the longest speech after a spotted name that is heard again
// for listen words. Listen phrases ("listen", "listen up", "luister
// maar") took at most 0.96 s after the name on the wake benchmark (130 to
// 180 words a minute); a question is longer. A longer tail is never
// re-transcribed: it costs a second whisper call, and the answer waits for
// it.
const MaxTail = 1200 * time.Millisecond

// TailFrom reports whether the utterance's audio after a name the spotter
// heard should be transcribed again on its own (Spot.Tail), and from
// where in the utterance: when the spotter placed the name (a score from
// the fuse band up), MatchSpot takes it as a question, not the switch
// back, and the words after it end within MaxTail of the name's end.
// Whisper's words give that end; without word times there is no place to
// cut. Where whisper wrote nothing at all and the spotter is sure of the
// name, everything after the name is heard again, however long: it is the
// question (MatchSpot), and the first text has none.
func (r *Rules) TailFrom(text string, words []Word, s Spot) (from time.Duration, ok bool) {
	s.Tail = ""
	if strings.TrimSpace(text) == "" {
		if !s.Heard {
			return 0, false
		}
		return max(s.End-spotLag, 0), true
	}
	placed := s.Heard || (r.fuse > 0 && s.Score >= r.fuse) // else s.End is no name's place
	if len(words) == 0 || r.MatchSpot(text, words, s).Action != Feedback {
		return 0, false
	}
	last := words[len(words)-1].End
	if last < 0 {
		return 0, false
	}
	if placed {
		if from = max(s.End-spotLag, 0); last-from <= MaxTail {
			return from, true
		}
	}
	return r.soundedFrom(text, words)
}

// soundedFrom is where the words that end an utterance start when they
// only sound like a listen word after a written name ("Agora, lesson.",
// "Adora, Lee Sin"): Match takes them for a question, and only a second
// hearing of them that writes the listen word switches back (issue 45:
// "Agora, later?" sounds as close). The cut is spotSlack before the
// first of them, for word times that run late; a last letter of the name
// heard again is skipped (heardTail).
func (r *Rules) soundedFrom(text string, words []Word) (time.Duration, bool) {
	m := r.Match(text)
	rest := tokens(m.Remainder)
	if m.Action != Feedback || !r.soundsListen(rest) {
		return 0, false
	}
	n := 0 // tokens of words counted back from the end
	for i := len(words) - 1; i >= 0; i-- {
		n += len(tokens(words[i].Text))
		if n < len(rest) {
			continue
		}
		if words[i].Start < 0 || words[len(words)-1].End-words[i].Start > MaxTail {
			return 0, false
		}
		return max(words[i].Start-spotSlack, 0), true
	}
	return 0, false
}

// AgainFrom reports whether the question after a sure spot should be
// heard once more, and from where, when the first hearing of it (from
// TailFrom's place) gave nothing for an utterance whisper wrote nothing
// for: handed the last of the name, whisper is derailed as on the whole
// utterance ("Hey Agora, is this beam safe?" by espeak-ng's
// en-gb-scotland+m7 with the third head's place, the same from 80 to 330
// ms later: "Let's be safe.", "It's the same safe."). The second cut is
// the spotter's end itself, spotLag after the first, within the same
// budget (Budget).
func AgainFrom(text string, s Spot, from time.Duration, tail string) (time.Duration, bool) {
	if strings.TrimSpace(text) != "" || strings.TrimSpace(tail) != "" || !s.Heard || s.End <= from {
		return 0, false
	}
	return s.End, true
}

// HearTail transcribes the audio after a spotted name again with hear
// (TailAudio from from, at rate samples a second, within Budget(text)) and,
// where AgainFrom says so, once more from the later cut. It returns the
// text heard and the cut it came from. An error of the first hearing is
// returned (whisper's first text then decides); a failed second hearing
// leaves the empty first.
func HearTail(ctx context.Context, hear func(context.Context, []float32) (string, error), samples []float32, rate int, text string, s Spot, from time.Duration) (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, Budget(text))
	defer cancel()
	tail, err := hear(ctx, TailAudio(samples, rate, from))
	if err != nil {
		return "", from, err
	}
	if again, ok := AgainFrom(text, s, from, tail); ok {
		if t, err := hear(ctx, TailAudio(samples, rate, again)); err == nil {
			return t, again, nil
		}
	}
	return tail, from, nil
}

// TailBudget is the longest a tail's transcription may take; then it is
// abandoned and whisper's first text decides. Whisper took 0.3 to 0.6 s
// for most tails (tiny.en, one thread, a loaded machine) but up to 7.6 s
// for one in noise (its fallbacks, most likely), and the inspector waits
// for it. Whisper notices the deadline between its steps, so a stopped
// call can run over it (base: 4.2 s once).
const TailBudget = 2 * time.Second

// QuestionBudget is TailBudget for the whole question after a spotted
// name that whisper's first pass wrote nothing for (TailFrom): longer
// speech than a listen phrase, so more time. Beyond it the name still
// wakes, without a question.
const QuestionBudget = 4 * time.Second

// Budget is how long the tail from TailFrom may take to transcribe for an
// utterance whisper first wrote text for: TailBudget, or QuestionBudget
// when it wrote nothing.
func Budget(text string) time.Duration {
	if strings.TrimSpace(text) == "" {
		return QuestionBudget
	}
	return TailBudget
}

// TailLead is the silence put before the tail: whisper, handed speech that
// starts at once, wrote the listen words less often (tiny.en: 15 of 38
// tails on the wake benchmark without, 24 of 37 with half a second).
const TailLead = 500 * time.Millisecond

// TailAudio is the audio to transcribe again: TailLead of silence, then
// samples (at rate per second) from from on.
func TailAudio(samples []float32, rate int, from time.Duration) []float32 {
	i := min(len(samples), max(0, int(from*time.Duration(rate)/time.Second)))
	lead := int(TailLead * time.Duration(rate) / time.Second)
	out := make([]float32, lead, lead+len(samples)-i)
	return append(out, samples[i:]...)
}

// heardTail turns m, a spotted name taken as a question, into the switch
// back when the tail transcribed on its own (Spot.Tail) starts with listen
// words: the words after them are the remainder, as for a written name.
func (r *Rules) heardTail(m Match, tail string) Match {
	tail = strings.TrimSpace(tail)
	if m.Action != Feedback || tail == "" {
		return m
	}
	lm := r.Match(r.name + " " + tail)
	if lm.Action != Listen || lm.Before != "" {
		// The cut is where the name ends on average: the end of a name said
		// slowly comes first ("Ra, listen.", "or listen."). One word of up
		// to two letters is skipped when listen words alone follow it.
		toks := tokens(tail)
		if len(toks) < 2 || len([]rune(toks[0].norm)) > 2 {
			return m
		}
		if lm = r.Match(r.name + " " + tail[toks[1].start:]); lm.Action != Listen || lm.Before != "" || lm.Remainder != "" {
			return m
		}
	}
	m.Action, m.Remainder = Listen, lm.Remainder
	return m
}
