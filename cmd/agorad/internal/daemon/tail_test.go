package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/wake"
)

// tailWhisper is a Transcriber that answers a fixed text (or, with texts,
// one after another) and records the audio it was given.
type tailWhisper struct {
	text  string
	texts []string
	err   error
	calls [][]float32
}

func (w *tailWhisper) Transcribe(_ context.Context, samples []float32) (transcribe.Result, error) {
	w.calls = append(w.calls, samples)
	if len(w.texts) > 0 {
		text := w.texts[0]
		w.texts = w.texts[1:]
		return transcribe.Result{Text: text}, w.err
	}
	return transcribe.Result{Text: w.text}, w.err
}

func (w *tailWhisper) Close() error { return nil }

// TestHearTail: the speech path transcribes the audio after a spotted name
// again only when the rules ask, from where they say, and a failure leaves
// the spot as it was.
func TestHearTail(t *testing.T) {
	rules, err := wake.New(wake.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	word := func(text string, a, b int) wake.Word { return wake.Word{Text: text, Start: ms(a), End: ms(b)} }
	reason := transcribe.Result{Text: "I will have a beam.", Words: []wake.Word{
		word("I", 0, 200), word("will", 200, 400), word("have", 400, 600), word("a", 600, 700), word("beam.", 800, 1400)}}
	sure := &wake.Spot{Score: 0.999, End: ms(950), Heard: true}
	samples := make([]float32, 2*audio.SampleRate)
	tests := []struct {
		name     string
		res      transcribe.Result
		spot     *wake.Spot
		whisper  *tailWhisper
		calls    int
		tail     string
		tailFrom int // samples
	}{
		{"a short tail after the name is heard again", reason, sure, &tailWhisper{text: "Listen."}, 1, "Listen.", 700 * audio.SampleRate / 1000},
		{"no spotter, no tail", reason, nil, &tailWhisper{text: "Listen."}, 0, "", 0},
		{"spotter unsure", reason, &wake.Spot{Score: 0.3, End: ms(950)}, &tailWhisper{text: "Listen."}, 0, "", 0},
		{"whisper fails: the first text decides", reason, sure, &tailWhisper{err: errors.New("boom")}, 1, "", 700 * audio.SampleRate / 1000},
		{"no text: the question heard again", transcribe.Result{}, sure, &tailWhisper{text: "Is this beam safe?"}, 1, "Is this beam safe?", 700 * audio.SampleRate / 1000},
		{"no text, nothing heard again: once more from the spotter's end", transcribe.Result{}, sure, &tailWhisper{texts: []string{"", "Is this beam safe?"}}, 2, "Is this beam safe?", 700 * audio.SampleRate / 1000},
		{"no text, nothing heard twice: the name alone", transcribe.Result{}, sure, &tailWhisper{texts: []string{"", ""}}, 2, "", 700 * audio.SampleRate / 1000},
		{"a short tail heard as nothing is not heard again", reason, sure, &tailWhisper{texts: []string{""}}, 1, "", 700 * audio.SampleRate / 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wr := &wakeRules{}
			wr.set(rules)
			sp := &speech{core: &core{log: slog.New(slog.NewTextHandler(io.Discard, nil)), rules: wr}, whisper: tt.whisper}
			got := sp.hearTail(context.Background(), job{audioID: "a1", samples: samples}, tt.res, tt.spot)
			if len(tt.whisper.calls) != tt.calls {
				t.Fatalf("whisper called %d times, want %d", len(tt.whisper.calls), tt.calls)
			}
			lead := int(wake.TailLead * audio.SampleRate / time.Second)
			if tt.calls > 0 && len(tt.whisper.calls[0]) != lead+len(samples)-tt.tailFrom {
				t.Errorf("tail of %d samples, want %d of silence and the %d from sample %d", len(tt.whisper.calls[0]), lead, len(samples)-tt.tailFrom, tt.tailFrom)
			}
			if tt.calls > 1 {
				again := int(tt.spot.End * audio.SampleRate / time.Second)
				if len(tt.whisper.calls[1]) != lead+len(samples)-again {
					t.Errorf("second hearing of %d samples, want %d of silence and the %d from the spotter's end", len(tt.whisper.calls[1]), lead, len(samples)-again)
				}
			}
			if tt.spot == nil {
				if got != nil {
					t.Errorf("hearTail without a spot = %+v, want nil", got)
				}
				return
			}
			if got.Tail != tt.tail || got.Score != tt.spot.Score || got.End != tt.spot.End {
				t.Errorf("hearTail = %+v, want the spot %+v with tail %q", got, tt.spot, tt.tail)
			}
			if tt.spot.Tail != "" {
				t.Errorf("hearTail changed the spot it was given: %+v", tt.spot)
			}
		})
	}
}
