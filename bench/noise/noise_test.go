package main

import (
	"context"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/wer"
)

// The make-test-sized noise check (issue 25; bench/noise/run.sh is the
// benchmark): the daemon's real path (energy gate + Silero segmenter, one
// whisper call per utterance, tiny.en q8_0) on a few reference clips clean
// and with pink noise at 10 dB below their active level, and on noise alone.

// noisyClips: a sentence and commands of shared/audio and site notes by
// espeak-ng voices (mix.py's), where pink noise at 10 dB costs words (the
// benchmark's per-clip errors); a few seconds each.
var noisyClips = []struct{ file, voice, text string }{
	{file: "fw_jfk.wav"},
	{file: "stp_en_is_the_garage_door_open.wav"},
	{file: "stp_en_add_apples_to_my_shopping_list.wav"},
	{file: "stp_en_set_bed_light_brightness_to_50_percent.wav"},
	{voice: "en", text: "Check the scaffolding on the east side before the crane starts."},
	{voice: "en-us+m3", text: "Order forty more steel beams for the parking garage."},
	{voice: "en+f2", text: "The electrician will finish the wiring in the kitchen tomorrow."},
}

// pink is n samples of pink noise (Paul Kellet's filter on seeded white
// noise), RMS 1.
func pink(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	var b0, b1, b2, b3, b4, b5, b6 float64
	for i := range out {
		w := r.NormFloat64()
		b0 = 0.99886*b0 + w*0.0555179
		b1 = 0.99332*b1 + w*0.0750759
		b2 = 0.96900*b2 + w*0.1538520
		b3 = 0.86650*b3 + w*0.3104856
		b4 = 0.55000*b4 + w*0.5329522
		b5 = -0.7616*b5 - w*0.0168980
		out[i] = float32(b0 + b1 + b2 + b3 + b4 + b5 + b6 + w*0.5362)
		b6 = w * 0.115926
	}
	return scaleRMS(out, 1)
}

// machine is mains hum (50 Hz and harmonics) with impulsive hits, 1.5 a
// second on average 15 dB above the hum, RMS 1 (as bench/noise/mix.py).
func machine(r *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for k := 1; k < 10; k++ {
		ph := r.Float64() * 2 * math.Pi
		for i := range out {
			out[i] += float32(math.Sin(2*math.Pi*50*float64(k)*float64(i)/audio.SampleRate+ph) / float64(k))
		}
	}
	scaleRMS(out, 1)
	for pos := 0; ; {
		pos += int(r.ExpFloat64() * audio.SampleRate / 1.5)
		if pos >= n {
			break
		}
		ln := int(audio.SampleRate * (0.02 + 0.06*r.Float64()))
		amp := 2 + 4*r.Float64()
		for j := 0; j < ln && pos+j < n; j++ {
			out[pos+j] += float32(r.NormFloat64() * amp * math.Exp(-float64(j)/(float64(ln)/5)))
		}
	}
	return scaleRMS(out, 1)
}

func rms(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(max(len(x), 1)))
}

func scaleRMS(x []float32, want float64) []float32 {
	g := float32(want / rms(x))
	for i := range x {
		x[i] *= g
	}
	return x
}

// activeRMS is the speech's active level as an RMS: its 20 ms frames within
// 30 dB of the loudest, as mix.py's active_rms.
func activeRMS(x []float32) float64 { return math.Pow(10, testaudio.ActiveDB(x, 30)/20) }

// mixSNR adds noise (RMS 1, at least as long) snr dB below speech's active level.
func mixSNR(speech, noise []float32, snr float64) []float32 {
	g := float32(activeRMS(speech) / math.Pow(10, snr/20))
	out := make([]float32, len(speech))
	for i := range speech {
		out[i] = speech[i] + g*noise[i]
	}
	return out
}

// pipelineRun is one file through the daemon's path: the texts it would
// publish and the seconds of audio whisper got.
type pipelineRun struct {
	texts     []string
	toWhisper float64
}

func runPipeline(t *testing.T, det *vad.Detector, tr *transcribe.Transcriber, samples []float32) pipelineRun {
	t.Helper()
	det.Reset()
	seg, err := segment.New(det, segment.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	src := audio.NewSliceSource(samples, 0, time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC))
	var out pipelineRun
	emit := func(utts []segment.Utterance) {
		for _, u := range utts {
			out.toWhisper += float64(len(u.Samples)) / audio.SampleRate
			res, err := tr.Transcribe(context.Background(), u.Samples)
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(res.Text) != "" && res.Rejected == "" {
				out.texts = append(out.texts, res.Text)
			}
		}
	}
	for {
		c, err := src.Read(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		utts, err := seg.Push(c)
		if err != nil {
			t.Fatal(err)
		}
		emit(utts)
	}
	emit(seg.Flush())
	return out
}

// TestNoiseReal: pink noise 10 dB below the speech keeps tiny.en's WER
// within noisyWERBound of the same clips clean, and 30 s of noise alone
// (pink, machine) at the level of the 10 dB mixes hands at most 5 % of its
// audio to whisper and publishes nothing (issue 25's noise-only target).
func TestNoiseReal(t *testing.T) {
	if testing.Short() {
		t.Skip("whisper and Silero on real audio: slow")
	}
	model := testaudio.RealModel(t, "tiny.en")
	det, err := vad.Open(testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin"), vad.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer det.Close()
	// One thread: on a machine busy with other tests, ggml's workers spin
	// while waiting for a core (2 threads measured 190 s CPU here, load 6).
	tr, err := transcribe.New(transcribe.Options{ModelPath: model, Language: "en", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	manifest, err := wer.ReadManifest(testaudio.Clip(t, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{}
	for _, c := range manifest {
		refs[c.File] = c.Transcript
	}
	r := rand.New(rand.NewPCG(25, 10))
	var clean, noisy wer.Tally
	var levels []float64
	for _, c := range noisyClips {
		name, ref := c.file, refs[c.file]
		var x []float32
		if c.file != "" {
			if ref == "" {
				t.Fatalf("%s: no transcript in the manifest", c.file)
			}
			if x, err = audio.ReadFile(testaudio.Clip(t, c.file)); err != nil {
				t.Fatal(err)
			}
		} else {
			name, ref = c.voice+": "+c.text, c.text
			x = testaudio.Concat(testaudio.Silence(500), testaudio.SpeakArgs(t, c.text, "-v", c.voice), testaudio.Silence(500))
		}
		levels = append(levels, activeRMS(x))
		hc := strings.Join(runPipeline(t, det, tr, x).texts, " ")
		hn := strings.Join(runPipeline(t, det, tr, mixSNR(x, pink(r, len(x)), 10)).texts, " ")
		clean.Add(ref, hc)
		noisy.Add(ref, hn)
		t.Logf("%s\n  clean: %q\n  pink 10 dB: %q", name, hc, hn)
	}
	t.Logf("WER clean %v; pink 10 dB %v", clean, noisy)
	if bound := noisyWERBound(clean.WER()); noisy.WER() > bound {
		t.Errorf("WER with pink noise at 10 dB SNR %.1f %% > %.1f %% (clean %.1f %%)", noisy.WER(), bound, clean.WER())
	}

	// noise alone at the level it had in the 10 dB mixes (their median)
	level := median(levels) / math.Pow(10, 10.0/20)
	for _, n := range []struct {
		name string
		gen  func(*rand.Rand, int) []float32
	}{{"pink", pink}, {"machine", machine}} {
		x := n.gen(r, 30*audio.SampleRate)
		for i := range x {
			x[i] *= float32(level)
		}
		got := runPipeline(t, det, tr, x)
		share := got.toWhisper / 30
		t.Logf("%s noise alone (%.1f dBFS): %.1f s to whisper, published %q", n.name, 20*math.Log10(level), got.toWhisper, got.texts)
		if share > 0.05 || len(got.texts) > 0 {
			t.Errorf("%s noise alone: %.1f %% of it to whisper (want ≤ 5 %%), %d utterances published (want 0): %q",
				n.name, 100*share, len(got.texts), got.texts)
		}
	}
}

// noisyWERBound is the most WER the 10 dB pink mixes may have, from the
// clean WER of the same clips: twice it plus 20 points (measured: 10.0 %
// clean, 28.6-31.4 % in noise). Not issue 25's target (1.5×, not met:
// bench/noise/run.sh measures the gap) but a guard: a segmenter that loses
// speech in noise, or a stage that garbles it, fails it.
func noisyWERBound(clean float64) float64 { return 2*clean + 20 }

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}
