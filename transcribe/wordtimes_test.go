package transcribe

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/transcribe/wer"
)

// bursts lays out tones and silences: each span is [from, to) in seconds
// of tone, silence elsewhere, total seconds long.
func bursts(total float64, spans ...[2]float64) []float32 {
	out := make([]float32, int(total*sampleRate))
	for _, s := range spans {
		copy(out[int(s[0]*sampleRate):], tone(time.Duration((s[1]-s[0])*float64(time.Second))))
	}
	return out
}

// toks makes text tokens without times.
func toks(texts ...string) []token {
	out := make([]token, len(texts))
	for i, s := range texts {
		out[i] = token{text: s, p: 0.9, t0: -1, t1: -1}
	}
	return out
}

func TestRetime(t *testing.T) {
	type want struct {
		token    int
		from, to int64 // the token's start and end must lie in [from, to] (cs)
	}
	for _, tc := range []struct {
		name string
		in   []float32
		segs []segment
		want [][]want // per segment
	}{
		{
			// The stepped window's fault: a closing timestamp at 7 s for
			// 3 s of audio. Every word keeps a length inside the sound.
			name: "closing timestamp past the audio",
			in:   bursts(3, [2]float64{0.3, 0.8}, [2]float64{1.0, 1.5}, [2]float64{1.7, 2.3}),
			segs: []segment{{t0: 0, t1: 700, tokens: toks(" The", " beam", " is", " def", "lected.")}},
			want: [][]want{{{0, 25, 85}, {4, 100, 235}}},
		},
		{
			// whisper.cpp 1.8.5 read a later segment's energy from the
			// start of the audio; its words belong to its own sound.
			name: "second segment reads its own sound",
			in:   bursts(8, [2]float64{0.5, 1.5}, [2]float64{5, 6}),
			segs: []segment{
				{t0: 0, t1: 200, tokens: toks(" Open", " it.")},
				{t0: 450, t1: 700, tokens: toks(" Close", " it.")},
			},
			want: [][]want{{{0, 45, 155}, {1, 45, 155}}, {{0, 495, 605}, {1, 495, 605}}},
		},
		{
			// Words of equal length over three bursts: each starts at its
			// own burst.
			name: "edges move to the sound",
			in:   bursts(4, [2]float64{0.2, 1.0}, [2]float64{1.4, 2.2}, [2]float64{2.6, 3.4}),
			segs: []segment{{t0: 0, t1: 400, tokens: toks(" one", " two", " six")}},
			want: [][]want{{{0, 15, 105}, {1, 135, 225}, {2, 255, 345}}},
		},
		{
			name: "segment starts after the audio",
			in:   bursts(1, [2]float64{0.2, 0.8}),
			segs: []segment{{t0: 150, t1: 300, tokens: toks(" late")}},
			want: [][]want{{{0, 0, 100}}},
		},
		{
			name: "silence",
			in:   make([]float32, sampleRate),
			segs: []segment{{t0: 0, t1: 300, tokens: toks(" a", " b")}},
			want: [][]want{{{0, 0, 100}, {1, 0, 100}}},
		},
		{
			name: "no tokens",
			in:   bursts(1, [2]float64{0.2, 0.8}),
			segs: []segment{{t0: 0, t1: 100}},
			want: [][]want{nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			segs := slices.Clone(tc.segs)
			for i := range segs {
				segs[i].tokens = slices.Clone(segs[i].tokens)
			}
			retime(segs, tc.in, DefaultSilenceRMS)
			for i, s := range segs {
				if s.t0 != tc.segs[i].t0 || s.t1 != tc.segs[i].t1 {
					t.Errorf("segment %d: [%d, %d), want whisper's [%d, %d) unchanged", i, s.t0, s.t1, tc.segs[i].t0, tc.segs[i].t1)
				}
				prev := int64(0)
				for k, tok := range s.tokens {
					if tok.t0 < prev || tok.t1 < tok.t0 {
						t.Errorf("segment %d token %d %q at [%d, %d] after %d: out of order", i, k, tok.text, tok.t0, tok.t1, prev)
					}
					prev = tok.t1
				}
				for _, w := range tc.want[i] {
					tok := s.tokens[w.token]
					if tok.t0 < w.from || tok.t1 > w.to {
						t.Errorf("segment %d token %q at [%d, %d] cs, want inside [%d, %d]", i, tok.text, tok.t0, tok.t1, w.from, w.to)
					}
				}
			}
			if tc.name == "closing timestamp past the audio" {
				for _, tok := range segs[0].tokens {
					if tok.t1 <= tok.t0 {
						t.Errorf("token %q at [%d, %d]: no length", tok.text, tok.t0, tok.t1)
					}
				}
			}
		})
	}
}

func TestSignalEnergy(t *testing.T) {
	in := []float32{0, 1, -1, 0, 0, 2}
	got := signalEnergy(in, 1)
	// mean of |x| over 3 samples, fewer at the ends, divided by 3
	want := []float32{1.0 / 3, 2.0 / 3, 2.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-6 || d < -1e-6 {
			t.Fatalf("signalEnergy = %v, want %v", got, want)
		}
	}
}

func TestVoiceLength(t *testing.T) {
	for _, tc := range []struct {
		text string
		want float64
	}{
		{" beam", 4.01},
		{"ten,", 5},
		{" 12.", 9.01},
		{"", 0},
	} {
		if got := voiceLength(tc.text); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("voiceLength(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestRealWordTimes: real speech with known word places, through the real
// tiny.en in the full and the stepped window. Three espeak-ng phrases with
// 0.7 s of silence between them; each word whisper writes that belongs to
// one phrase only must lie in that phrase's audio. In the stepped window
// whisper.cpp's own times put "is deflected" at the audio's last sample,
// 0 ms long (the fault retime fixes).
func TestRealWordTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights: slow")
	}
	model := testaudio.RealModel(t, "tiny.en")
	phrases := []string{"The crack in the beam", "is not structural,", "but the door is damaged."}
	gap := make([]float32, 7*sampleRate/10)
	in := slices.Clone(gap[:sampleRate/4]) // a pre-roll, as the segmenter keeps
	type span struct{ from, to time.Duration }
	var spans []span
	owner := map[string]int{} // word -> phrase, for words of one phrase only
	for i, p := range phrases {
		s := testaudio.Speak(t, "en", p)
		from := time.Duration(len(in)) * time.Second / sampleRate
		in = append(in, s...)
		spans = append(spans, span{from, time.Duration(len(in)) * time.Second / sampleRate})
		in = append(in, gap...)
		for _, w := range wer.Words(p) {
			if k, ok := owner[w]; ok && k != i {
				owner[w] = -1
			} else if !ok {
				owner[w] = i
			}
		}
	}
	const slack = 150 * time.Millisecond
	for _, window := range []Window{WindowFull, WindowSteps} {
		tr := newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2, Window: window})
		r, err := tr.Transcribe(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		checkWords(t, string(window), r)
		placed := 0
		for _, w := range r.Words {
			ws := wer.Words(w.Text)
			if len(ws) != 1 {
				continue
			}
			k, ok := owner[ws[0]]
			if !ok || k < 0 {
				continue
			}
			placed++
			if sp := spans[k]; w.Start < sp.from-slack || w.End > sp.to+slack || w.End <= w.Start {
				t.Errorf("%s window: %q at %s-%s, want inside phrase %d %q at %s-%s", window, w.Text, w.Start, w.End, k+1, phrases[k], sp.from, sp.to)
			}
		}
		t.Logf("%s window (%v): %q, %d words placed", window, r.Window, r.Text, placed)
		if placed < 5 {
			t.Errorf("%s window: %q: %d words of the phrases recognised, want at least 5 to place", window, r.Text, placed)
		}
	}
}

// BenchmarkRetime: word times for a 10 s utterance of 30 words in 5
// phrases, a segment each (what the transcriber adds per utterance).
func BenchmarkRetime(b *testing.B) {
	var spans [][2]float64
	for i := range 5 {
		spans = append(spans, [2]float64{0.3 + 1.9*float64(i), 1.9 + 1.9*float64(i)})
	}
	in := bursts(10, spans...)
	var words []string
	for _, w := range strings.Fields(strings.Repeat("the crack in the beam is ", 5)) {
		words = append(words, " "+w)
	}
	segs := make([]segment, 5)
	for i := range segs {
		segs[i] = segment{t0: int64(30 + 190*i), t1: int64(200 + 190*i), tokens: toks(words[6*i : 6*i+6]...)}
	}
	for b.Loop() {
		retime(segs, in, DefaultSilenceRMS)
	}
}
