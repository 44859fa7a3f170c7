package segment_test

import (
	"context"
	"errors"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/audio/vad"
)

const sileroModel = "for-tests-silero-v6.2.0-ggml.bin"

func openSilero(tb testing.TB) *vad.Detector {
	tb.Helper()
	d, err := vad.Open(testaudio.Model(tb, sileroModel), vad.Options{Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// countingProber counts the windows the segmenter sends to the real VAD.
type countingProber struct {
	segment.Prober
	windows int
}

func (c *countingProber) Probs(s []float32) ([]float32, error) {
	c.windows += len(s) / c.WindowSize()
	return c.Prober.Probs(s)
}

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// segmentAll runs samples through audio.NewSliceSource (the pipeline files
// take) and a segmenter with real Silero, then flushes.
func segmentAll(tb testing.TB, cfg segment.Config, samples []float32, chunk int) ([]segment.Utterance, segment.Stats, int) {
	tb.Helper()
	p := &countingProber{Prober: openSilero(tb)}
	seg, err := segment.New(p, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	src := audio.NewSliceSource(samples, chunk, t0)
	var out []segment.Utterance
	for {
		c, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		u, err := seg.Push(c)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, u...)
	}
	out = append(out, seg.Flush()...)
	return out, seg.Stats(), p.windows
}

// speechBounds is the truth for a synthesized clip: first and last sample
// above a small threshold.
func speechBounds(s []float32) (first, last int) {
	const thr = 0.01
	first, last = -1, -1
	for i, v := range s {
		if math.Abs(float64(v)) > thr {
			if first < 0 {
				first = i
			}
			last = i + 1
		}
	}
	return first, last
}

// whiteNoise is sox's white noise at the given volume, 16 kHz mono.
func whiteNoise(t *testing.T, seconds float64, vol float64) []float32 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "noise.wav")
	cmd := exec.Command("sox", "-n", "-r", "16000", "-c", "1", "-b", "16", out, "synth", ftoa(seconds), "whitenoise", "vol", ftoa(vol))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sox whitenoise: %v: %s", err, b)
	}
	s, err := audio.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

type sentence struct{ voice, text string }

// script is a synthesized conversation with its per-sentence truth.
type script struct {
	samples []float32
	truth   [][2]int // speech bounds in stream offsets
}

// buildScript joins sentences with the given pauses (ms) between them,
// 1 s of silence before and 2 s after.
func buildScript(t *testing.T, sents []sentence, pauses []int) script {
	t.Helper()
	var sc script
	sc.samples = testaudio.Silence(1000)
	for i, s := range sents {
		if i > 0 {
			sc.samples = append(sc.samples, testaudio.Silence(pauses[i-1])...)
		}
		clip := testaudio.Speak(t, s.voice, s.text)
		first, last := speechBounds(clip)
		if first < 0 {
			t.Fatalf("espeak-ng %s %q produced silence", s.voice, s.text)
		}
		base := len(sc.samples)
		sc.truth = append(sc.truth, [2]int{base + first, base + last})
		sc.samples = append(sc.samples, clip...)
	}
	sc.samples = append(sc.samples, testaudio.Silence(2000)...)
	return sc
}

var conversation = []sentence{
	{"en", "The left pump shows a crack in the housing."},
	{"nl", "De linker pomp heeft een scheur in de behuizing."},
	{"en", "Agora, listen."},
	{"nl", "Controleer morgen de kleppen van de tweede installatie."},
	{"en", "Pressure is normal."},
}

var pauses = []int{1500, 2000, 3000, 2500}

const tolerance = 300 * audio.SampleRate / 1000 // 300 ms

func ms(off int64) float64 { return float64(off) * 1000 / audio.SampleRate }

// checkTruth: exactly one utterance per sentence, speech bounds within 300
// ms of the truth, samples covering the speech, and a wall clock Start that
// follows the stream offset from t0 (the stream's start). A zero t0 (a
// capture stamps its own clock) takes it from the first utterance.
func checkTruth(t *testing.T, got []segment.Utterance, truth [][2]int, t0 time.Time) {
	t.Helper()
	if len(got) != len(truth) {
		for _, u := range got {
			t.Logf("utterance %.0f..%.0f ms", ms(u.SpeechStart), ms(u.SpeechEnd))
		}
		t.Fatalf("%d utterances, want one per sentence (%d)", len(got), len(truth))
	}
	at := func(off int64) time.Duration { return time.Duration(off) * time.Second / audio.SampleRate }
	if t0.IsZero() && len(got) > 0 {
		t0 = got[0].Start.Add(-at(got[0].SpeechStart))
	}
	for i, u := range got {
		ts, te := int64(truth[i][0]), int64(truth[i][1])
		t.Logf("sentence %d: truth %.0f..%.0f ms, utterance %.0f..%.0f ms (start %+.0f, end %+.0f ms)",
			i, ms(ts), ms(te), ms(u.SpeechStart), ms(u.SpeechEnd), ms(u.SpeechStart-ts), ms(u.SpeechEnd-te))
		if d := u.SpeechStart - ts; d < -tolerance || d > tolerance {
			t.Errorf("sentence %d: speech starts at %.0f ms, truth %.0f ms", i, ms(u.SpeechStart), ms(ts))
		}
		if d := u.SpeechEnd - te; d < -tolerance || d > tolerance {
			t.Errorf("sentence %d: speech ends at %.0f ms, truth %.0f ms", i, ms(u.SpeechEnd), ms(te))
		}
		if want := t0.Add(at(u.SpeechStart)); !u.Start.Equal(want) {
			t.Errorf("sentence %d: Start %v, want %v (stream start + offset)", i, u.Start, want)
		}
		if u.PadStart > u.SpeechStart || u.PadStart+int64(len(u.Samples)) < u.SpeechEnd {
			t.Errorf("sentence %d: samples %d+%d do not cover the speech %d..%d", i, u.PadStart, len(u.Samples), u.SpeechStart, u.SpeechEnd)
		}
	}
}

func TestSileroSynthesizedSentences(t *testing.T) {
	if testing.Short() {
		t.Skip("real Silero VAD and espeak-ng: slow")
	}
	sc := buildScript(t, conversation, pauses)
	noisy := append([]float32(nil), sc.samples...)
	for i, v := range whiteNoise(t, float64(len(noisy))/audio.SampleRate+0.1, 0.002) {
		if i < len(noisy) {
			noisy[i] += v
		}
	}
	tests := []struct {
		name    string
		samples []float32
		chunk   int
	}{
		{"clean, 100 ms chunks", sc.samples, 1600},
		{"clean, 20 ms chunks", sc.samples, 320},
		{"low white noise, 100 ms chunks", noisy, 1600},
		{"low white noise, 1 s chunks", noisy, 16000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st, _ := segmentAll(t, segment.DefaultConfig(), tt.samples, tt.chunk)
			t.Logf("stats %+v", st)
			checkTruth(t, got, sc.truth, t0)
		})
	}
}

// TestSileroJFK: the JFK sample gives 1 to 4 utterances that cover every
// loud stretch of it.
func TestSileroJFK(t *testing.T) {
	if testing.Short() {
		t.Skip("real Silero VAD: slow")
	}
	s, err := audio.ReadFile(testaudio.JFKPath(t))
	if err != nil {
		t.Fatal(err)
	}
	got, st, _ := segmentAll(t, segment.DefaultConfig(), s, 1600)
	t.Logf("stats %+v", st)
	if len(got) < 1 || len(got) > 4 {
		t.Fatalf("%d utterances, want 1..4", len(got))
	}
	for _, u := range got {
		t.Logf("utterance %.0f..%.0f ms", ms(u.SpeechStart), ms(u.SpeechEnd))
	}
	const win = 512
	for w := 0; w+win <= len(s); w += win {
		if dbfs(s[w:w+win]) < -20 {
			continue
		}
		inside := false
		for _, u := range got {
			inside = inside || (int64(w) >= u.SpeechStart-win && int64(w+win) <= u.SpeechEnd+win)
		}
		if !inside {
			t.Errorf("loud audio at %.0f ms is in no utterance", ms(int64(w)))
		}
	}
}

// TestSileroSilenceAndNoise: no utterance from digital silence or from the
// background-noise clip, and 60 s of silence costs (almost) no VAD calls.
func TestSileroSilenceAndNoise(t *testing.T) {
	if testing.Short() {
		t.Skip("real Silero VAD: slow")
	}
	noise, err := audio.ReadFile(testaudio.Clip(t, "stp_background_noise.wav"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		samples   []float32
		maxProbed int
	}{
		{"60 s digital silence", testaudio.Silence(60_000), 0},
		{"60 s low white noise", whiteNoise(t, 60, 0.002), 0},
		{"stp_background_noise.wav", noise, len(noise) / 512},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st, probed := segmentAll(t, segment.DefaultConfig(), tt.samples, 1600)
			t.Logf("stats %+v, VAD windows %d of %d", st, probed, st.Windows)
			for _, u := range got {
				t.Errorf("utterance %.0f..%.0f ms from non-speech", ms(u.SpeechStart), ms(u.SpeechEnd))
			}
			if probed > tt.maxProbed {
				t.Errorf("VAD scored %d windows, want at most %d", probed, tt.maxProbed)
			}
		})
	}
}

// TestSileroRealClipsMaxLength: real recordings, alone and joined into a
// long monologue, never give an utterance longer than the maximum, and a
// lower maximum splits real speech into pieces that meet at the cuts.
func TestSileroRealClipsMaxLength(t *testing.T) {
	if testing.Short() {
		t.Skip("real Silero VAD: slow")
	}
	names := []string{"porcupine_multi_en.wav", "vosk_aligner_cats.wav", "vosk_aligner_dagon.wav", "vosk_aligner_polar.wav", "leopard_test_en.wav", "cheetah_test_de.wav"}
	var joined []float32
	for _, n := range names {
		s, err := audio.ReadFile(testaudio.Clip(t, n))
		if err != nil {
			t.Fatal(err)
		}
		joined = append(joined, s...)
	}
	for _, max := range []time.Duration{30 * time.Second, 8 * time.Second} {
		cfg := segment.DefaultConfig()
		cfg.MaxUtterance = max
		got, st, _ := segmentAll(t, cfg, joined, 1600)
		t.Logf("max %v: %d utterances from %.0f s, stats %+v", max, len(got), float64(len(joined))/audio.SampleRate, st)
		if len(got) == 0 {
			t.Fatalf("max %v: no utterances from real speech", max)
		}
		for i, u := range got {
			if d := time.Duration(len(u.Samples)) * time.Second / audio.SampleRate; d > max {
				t.Errorf("max %v: utterance %d is %v long", max, i, d)
			}
			if u.SpeechEnd <= u.SpeechStart {
				t.Errorf("max %v: utterance %d has empty speech %d..%d", max, i, u.SpeechStart, u.SpeechEnd)
			}
		}
		if max == 8*time.Second && st.Splits == 0 {
			t.Errorf("max 8s: no splits on %d s of real speech", len(joined)/audio.SampleRate)
		}
	}
}

func dbfs(x []float32) float64 {
	var e float64
	for _, v := range x {
		e += float64(v) * float64(v)
	}
	return 10 * math.Log10(e/float64(len(x))+1e-20)
}

// BenchmarkSilence60s: CPU to segment a minute of silence (the gate keeps
// the VAD out).
func BenchmarkSilence60s(b *testing.B) {
	benchSegment(b, testaudio.Silence(60_000))
}

// BenchmarkJFK: CPU to segment 11 s of speech.
func BenchmarkJFK(b *testing.B) {
	s, err := audio.ReadFile(testaudio.JFKPath(b))
	if err != nil {
		b.Fatal(err)
	}
	benchSegment(b, s)
}

func benchSegment(b *testing.B, samples []float32) {
	d := openSilero(b)
	for b.Loop() {
		d.Reset()
		seg, err := segment.New(d, segment.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(samples); i += 1600 {
			if _, err := seg.Push(audio.Chunk{Samples: samples[i:min(i+1600, len(samples))], Offset: int64(i), Time: t0}); err != nil {
				b.Fatal(err)
			}
		}
		seg.Flush()
	}
	audioSec := float64(len(samples)) / audio.SampleRate
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/audioSec*100, "%realtime")
}
