package transcribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ggerganov/whisper.cpp/bindings/go"
)

func TestPacks(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lengths    []int
		gap, limit int
		want       [][2]int
	}{
		{"none", nil, 1, 10, nil},
		{"one", []int{5}, 1, 10, [][2]int{{0, 1}}},
		{"two fit exactly", []int{4, 5}, 1, 10, [][2]int{{0, 2}}},
		{"gap makes it overflow", []int{5, 5}, 1, 10, [][2]int{{0, 1}, {1, 2}}},
		{"greedy, in order", []int{3, 3, 3, 3, 3}, 1, 11, [][2]int{{0, 3}, {3, 5}}},
		{"long one alone", []int{2, 12, 2, 2}, 1, 10, [][2]int{{0, 1}, {1, 2}, {2, 4}}},
		{"long first", []int{11, 1}, 1, 10, [][2]int{{0, 1}, {1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := packs(tc.lengths, tc.gap, tc.limit); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("packs(%v, gap %d, limit %d) = %v, want %v", tc.lengths, tc.gap, tc.limit, got, tc.want)
			}
		})
	}
}

// seg builds a segment from words "text@t0" (centiseconds, token start), the
// segment's bounds given.
func seg(t0, t1 int64, words ...string) segment {
	s := segment{t0: t0, t1: t1}
	for i, w := range words {
		text, at, _ := strings.Cut(w, "@")
		var t int64 = -1
		if at != "" {
			fmt.Sscan(at, &t)
		}
		end := t1
		if i+1 < len(words) {
			end = t + 1
		}
		s.text += " " + text
		s.tokens = append(s.tokens, token{text: " " + text, p: 0.5, t0: t, t1: end})
	}
	return s
}

func TestSplit(t *testing.T) {
	// Three utterances: 0–3 s, 4–6 s, 7–9 s (1 s gaps; regions meet at 3.5 s and 6.5 s).
	spans := []span{{0, 300}, {400, 600}, {700, 900}}
	for _, tc := range []struct {
		name string
		segs []segment
		want []string
	}{
		{"one segment each", []segment{
			seg(0, 290, "one@0"), seg(410, 590, "two@410"), seg(700, 900, "three@700"),
		}, []string{"one", "two", "three"}},
		{"drifted segments stay with the utterance they overlap most", []segment{
			// measured on real tiny.en: a sentence ending 1.5 s late, well into the next region
			seg(0, 420, "the@0", "art@100", "of@200", "printing@300"), seg(420, 620, "two@420"), seg(720, 930, "three@720"),
		}, []string{"the art of printing", "two", "three"}},
		{"a segment over two short utterances is split by word time", []segment{
			seg(0, 590, "next.@10", "pause@410", "timer.@450"), seg(700, 900, "three@700"),
		}, []string{"next.", "pause timer.", "three"}},
		{"rough token times: the cut moves to the sentence end (measured on base)", []segment{
			seg(0, 590, "Next.@10", "What@100", "time@200", "is@410", "it?@450"), seg(700, 900, "three@700"),
		}, []string{"Next.", "What time is it?", "three"}},
		{"early token times, cut moved on", []segment{
			seg(0, 590, "Go@10", "on.@360", "Stop.@420"),
		}, []string{"Go on.", "Stop.", ""}},
		{"no sentence end near: token times decide", []segment{
			seg(0, 590, "one@10", "two@100", "three@200", "four@300", "five@410", "six@450"),
		}, []string{"one two three four", "five six", ""}},
		{"token times going back do not reorder", []segment{
			seg(0, 590, "a@10", "b@420", "c@100", "d@450"),
		}, []string{"a", "b c d", ""}},
		{"a segment boundary inside a sentence (measured on base)", []segment{
			seg(0, 330, "Next.@10", "What@100", "time@200"), seg(330, 600, "is@410", "it?@450"), seg(700, 900, "three@700"),
		}, []string{"Next.", "What time is it?", "three"}},
		{"a title is not a sentence end (measured: Mr. Quilter)", []segment{
			seg(0, 590, "belts.@10", "Mr.@100", "Quilter@400", "is@450"),
		}, []string{"belts.", "Mr. Quilter is", ""}},
		{"a segment over all three", []segment{
			seg(0, 900, "a@0", "b@100", "c@420", "d@710", "e@800"),
		}, []string{"a b", "c", "d e"}},
		{"nothing heard in one", []segment{
			seg(0, 290, "one@0"), seg(700, 900, "three@700"),
		}, []string{"one", "", "three"}},
		{"no token timestamps: the segment's start decides", []segment{
			seg(0, 590, "next.", "pause", "timer."),
		}, []string{"next. pause timer.", "", ""}},
		{"drifted whole segments are not moved to a sentence end far away", []segment{
			seg(0, 200, "One@0", "two.@100"), seg(200, 420, "three@200", "four@300", "five@340", "six@360", "seven.@380"), seg(420, 600, "eight@420"),
		}, []string{"One two. three four five six seven.", "eight", ""}},
		{"a single word over a gap stays whole", []segment{
			seg(250, 450, "hello@250"),
		}, []string{"hello", "", ""}},
		{"no segments", nil, []string{"", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pieces := split(tc.segs, spans)
			var got []string
			tokens := 0
			for i := range pieces {
				text, conf := pieces[i].result()
				got = append(got, text)
				if (text == "") != (conf == 0) {
					t.Errorf("piece %d %q: confidence %v", i, text, conf)
				}
				tokens += pieces[i].tokens
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("split = %q, want %q", got, tc.want)
			}
			n := 0
			for _, s := range tc.segs {
				n += len(s.tokens)
			}
			if tokens != n {
				t.Errorf("%d tokens in the pieces, %d decoded: every token goes to exactly one utterance", tokens, n)
			}
		})
	}
}

// fakeWhisper stands in for whisper_full: it "hears" each utterance of a
// packed window by its first sample (the word's number) and answers with one
// segment per utterance at the utterance's time, recording every call.
type fakeWhisper struct {
	calls [][]float32
	fail  error
}

var fakeWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

func (f *fakeWhisper) run(ctx context.Context, _ *whisper.Params, in []float32) ([]segment, error) {
	f.calls = append(f.calls, in)
	if f.fail != nil {
		return nil, f.fail
	}
	var segs []segment
	for i := 0; i < len(in); {
		if in[i] == 0 {
			i++
			continue
		}
		j := i
		for j < len(in) && in[j] != 0 {
			j++
		}
		t0, t1 := int64(i)*csPerSecond/sampleRate, int64(j)*csPerSecond/sampleRate
		w := fakeWords[int(in[i]*10+0.5)%10]
		segs = append(segs, segment{t0: t0, t1: t1, text: " " + w + ".", tokens: []token{{text: " " + w + ".", p: 0.9, t0: t0, t1: t1}}})
		i = j
	}
	return segs, nil
}

// utt is an utterance of d whose every sample is n/10 (loud, never zero: the
// fake finds utterances by the zero gaps between them).
func utt(n int, d time.Duration) []float32 {
	s := make([]float32, samplesOf(d))
	for i := range s {
		s[i] = float32(n) / 10
	}
	return s
}

func fakeTranscriber(f *fakeWhisper) *Transcriber {
	tr := &Transcriber{opts: Options{SilenceRMS: DefaultSilenceRMS, Threads: 1}, log: slog.New(slog.DiscardHandler),
		lang: "en", pool: make(chan *wctx, 1), done: make(chan struct{}), run: f.run}
	tr.pool <- &wctx{params: new(whisper.Params)}
	return tr
}

func TestTranscribeBatch(t *testing.T) {
	sec := time.Second
	for _, tc := range []struct {
		name     string
		utts     [][]float32
		want     []string
		calls    int
		rejected []int // indexes the guard or the silence floor reject
	}{
		{"three short ones, one call", [][]float32{utt(1, 2*sec), utt(2, 3*sec), utt(3, sec)}, []string{"one.", "two.", "three."}, 1, nil},
		{"a lone utterance, one call", [][]float32{utt(4, 2*sec)}, []string{"four."}, 1, nil},
		{"window full: two calls", [][]float32{utt(1, 14*sec), utt(2, 14*sec), utt(3, 5*sec)}, []string{"one.", "two.", "three."}, 2, nil},
		{"longer than the window: alone", [][]float32{utt(1, 2*sec), utt(2, 31*sec), utt(3, 2*sec)}, []string{"one.", "two.", "three."}, 3, nil},
		{"silence is not sent", [][]float32{utt(1, 2*sec), make([]float32, samplesOf(2*sec)), utt(3, 2*sec)}, []string{"one.", "", "three."}, 1, []int{1}},
		{"empty batch", nil, nil, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeWhisper{}
			tr := fakeTranscriber(f)
			got, err := tr.TranscribeBatch(context.Background(), tc.utts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.utts) {
				t.Fatalf("%d results for %d utterances", len(got), len(tc.utts))
			}
			var texts []string
			for i, r := range got {
				texts = append(texts, r.Text)
				if want := time.Duration(len(tc.utts[i])) * time.Second / sampleRate; r.AudioDuration != want {
					t.Errorf("utterance %d: AudioDuration %s, want %s", i, r.AudioDuration, want)
				}
				if r.Lang != "en" {
					t.Errorf("utterance %d: Lang %q", i, r.Lang)
				}
				rejected := false
				for _, k := range tc.rejected {
					rejected = rejected || k == i
				}
				if rejected != (r.Rejected != "") {
					t.Errorf("utterance %d: Rejected %q", i, r.Rejected)
				}
				if !rejected && (r.Confidence < 0.89 || r.Confidence > 0.91) {
					t.Errorf("utterance %d: Confidence %v, want its own tokens' 0.9", i, r.Confidence)
				}
			}
			if len(tc.utts) > 0 && !reflect.DeepEqual(texts, tc.want) {
				t.Errorf("texts %q, want %q", texts, tc.want)
			}
			if len(f.calls) != tc.calls {
				t.Errorf("%d whisper calls, want %d", len(f.calls), tc.calls)
			}
			for _, c := range f.calls {
				if len(c) > samplesOf(PackWindow) && len(c) != samplesOf(31*sec) {
					t.Errorf("a packed call of %s exceeds the window %s", time.Duration(len(c))*time.Second/sampleRate, PackWindow)
				}
			}
		})
	}
}

func TestTranscribeBatchGuardPerUtterance(t *testing.T) {
	// A known hallucination in one packed utterance is dropped there only.
	f := &fakeWhisper{}
	tr := fakeTranscriber(f)
	tr.run = func(ctx context.Context, p *whisper.Params, in []float32) ([]segment, error) {
		segs, _ := f.run(ctx, p, in)
		segs[1].text, segs[1].tokens[0].text = " Thank you.", " Thank you."
		segs[1].tokens[0].p = 0.3
		return segs, nil
	}
	got, err := tr.TranscribeBatch(context.Background(), [][]float32{utt(1, time.Second), utt(2, time.Second), utt(3, time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Text != "one." || got[1].Text != "" || got[1].Rejected == "" || got[2].Text != "three." {
		t.Errorf("got %+v, want the middle one rejected by the guard, the others kept", got)
	}
}

func TestTranscribeBatchErrors(t *testing.T) {
	f := &fakeWhisper{}
	tr := fakeTranscriber(f)
	bad := utt(2, time.Second)
	bad[7] = float32(nan())
	if _, err := tr.TranscribeBatch(context.Background(), [][]float32{utt(1, time.Second), bad}); err == nil || !strings.Contains(err.Error(), "utterance 2 of 2: sample 7") {
		t.Errorf("corrupt audio: err = %v, want it to name utterance 2, sample 7", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("whisper called %d times on a batch with corrupt audio", len(f.calls))
	}
	f.fail = errors.New("whisper_full failed")
	got, err := tr.TranscribeBatch(context.Background(), [][]float32{utt(1, time.Second), utt(2, time.Second)})
	if err == nil || !strings.Contains(err.Error(), "2 utterances packed") || len(got) != 0 {
		t.Errorf("failed call: %d results, err %v; want none and the error naming the pack", len(got), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.TranscribeBatch(ctx, [][]float32{utt(1, time.Second), utt(2, time.Second)}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func nan() float64 { var z float64; return z / z }

// TestTranscribeBatchLanguages: with language detection each utterance is
// detected on its own and only runs of one language share a window (a
// window's detection follows its majority: English commands packed with
// Dutch speech came back Dutch on base).
func TestTranscribeBatchLanguages(t *testing.T) {
	f := &fakeWhisper{}
	tr := fakeTranscriber(f)
	tr.lang, tr.multi, tr.autoIDs, tr.langs = "auto", true, []int{0, 1}, []string{"en", "nl"}
	tr.opts.SwitchP = DefaultSwitchP
	tr.detectLang = func(s []float32) int { // utterances 1..: odd levels are Dutch
		return int(s[0]*10+0.5) % 2
	}
	got, err := tr.TranscribeBatch(context.Background(), [][]float32{
		utt(2, time.Second), utt(4, time.Second), utt(3, time.Second), utt(6, time.Second), utt(8, time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	var langs, texts []string
	for _, r := range got {
		langs, texts = append(langs, r.Lang), append(texts, r.Text)
	}
	if want := []string{"en", "en", "nl", "en", "en"}; !reflect.DeepEqual(langs, want) {
		t.Errorf("languages %q, want %q", langs, want)
	}
	if want := []string{"two.", "four.", "three.", "six.", "eight."}; !reflect.DeepEqual(texts, want) {
		t.Errorf("texts %q, want %q", texts, want)
	}
	if len(f.calls) != 3 {
		t.Errorf("%d whisper calls, want 3 (en en | nl | en en)", len(f.calls))
	}
}
