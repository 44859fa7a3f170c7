package wearer_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/segment"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/audio/wearer"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/wer"
)

func TestMain(m *testing.M) { testaudio.Main(m) }

// activeRange: clips are set to levels by their frames within 35 dB of the
// loudest (testaudio.ActiveDB).
const activeRange = 35

// mix adds b into a from sample at (a grows to hold it).
func mix(a, b []float32, at int) []float32 {
	if n := at + len(b); n > len(a) {
		a = append(a, make([]float32, n-len(a))...)
	}
	for i, v := range b {
		a[at+i] += v
	}
	return a
}

// pipeline runs audio the way the daemon's hands-free path does: the wearer
// gate, the segmenter on the real Silero VAD, the utterance gate, whisper
// and the word check. It returns the notes (texts kept).
type pipeline struct {
	det *vad.Detector
	w   *transcribe.Transcriber
}

func newPipeline(t *testing.T) pipeline {
	det, err := vad.Open(testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin"), vad.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { det.Close() })
	// The daemon's encoder window: the word check reads the word times
	// the transcriber gives in it.
	w, err := transcribe.New(transcribe.Options{ModelPath: testaudio.RealModel(t, "tiny.en"), Language: "en", Threads: 2,
		Window: transcribe.Window(configs.Default().Transcribe.Window), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return pipeline{det, w}
}

func (p pipeline) notes(t *testing.T, cfg wearer.Config, s []float32) []string {
	t.Helper()
	notes, _ := p.notesDropped(t, cfg, s)
	return notes
}

// notesDropped is notes and how many of whisper's words the word check
// dropped from kept utterances.
func (p pipeline) notesDropped(t *testing.T, cfg wearer.Config, s []float32) ([]string, int) {
	t.Helper()
	dropped := 0
	p.det.Reset()
	seg, err := segment.New(p.det, segment.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := wearer.NewTracker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	handle := func(us []segment.Utterance) {
		for _, u := range us {
			d := tr.Decide(u.Samples[u.SpeechStart-u.PadStart:u.SpeechEnd-u.PadStart], u.Start)
			if !d.Keep {
				t.Logf("utterance dropped: %s", d.Why)
				continue
			}
			res, err := p.w.Transcribe(context.Background(), u.Samples)
			if err != nil {
				t.Fatal(err)
			}
			spans := make([]wearer.Span, len(res.Words))
			for i, x := range res.Words {
				spans[i] = wearer.Span{Start: x.Start, End: x.End}
			}
			keep := cfg.KeepWords(wearer.FrameLevels(u.Samples), spans, d.Ref)
			var kept []string
			for i, x := range res.Words {
				if keep[i] {
					kept = append(kept, x.Text)
				}
			}
			dropped += len(res.Words) - len(kept)
			t.Logf("whisper %q, kept %q", res.Text, strings.Join(kept, " "))
			if len(kept) > 0 {
				notes = append(notes, strings.Join(kept, " "))
			}
		}
	}
	t0 := time.Unix(1e9, 0)
	push := func(cs []audio.Chunk) {
		for _, c := range cs {
			us, err := seg.Push(c)
			if err != nil {
				t.Fatal(err)
			}
			handle(us)
		}
	}
	for i := 0; i < len(s); i += 320 {
		end := min(i+320, len(s))
		push(tr.Push(audio.Chunk{Samples: s[i:end], Offset: int64(i), Time: t0.Add(time.Duration(i) * time.Second / audio.SampleRate)}))
	}
	push(tr.Flush())
	handle(seg.Flush())
	return notes, dropped
}

// others is speech of two other speakers of the shared set, one after the
// other for n samples, at active level db, and their words.
func others(t *testing.T, n int, db float64) ([]float32, map[string]bool) {
	var s []float32
	words := map[string]bool{}
	for _, f := range []string{"fw_stereo_diarization_left.wav", "fw_stereo_diarization_right.wav"} {
		c, err := audio.ReadFile(testaudio.Clip(t, f))
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, c...)
	}
	for _, x := range wer.Words("He began a confused complaint against the wizard, who had vanished behind the curtain on the left. The horizon seems extremely distant.") {
		words[x] = true
	}
	out := make([]float32, 0, n)
	for len(out) < n {
		out = append(out, s[:min(len(s), n-len(out))]...)
	}
	return testaudio.AtActiveDB(out, db, activeRange), words
}

// TestRealWearerAmongOthers: the wearer (jfk, at the expected level) with
// two other people talking all the time 15 dB under: the note holds the
// wearer's words and none of theirs; with the gate off their words come
// through (so the test can tell). Their talk alone publishes nothing, and
// the wearer's own wake sentence passes the gate with the name.
func TestRealWearerAmongOthers(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper and VAD")
	}
	p := newPipeline(t)
	cfg := wearer.DefaultConfig()
	jfk, err := audio.ReadFile(testaudio.JFKPath(t))
	if err != nil {
		t.Fatal(err)
	}
	// A headset wearer at -26 dBFS active level (about the expected level
	// as the gate measures an utterance, pauses included).
	const wearerActive = -26.0
	own := testaudio.AtActiveDB(jfk, wearerActive, activeRange)
	lead := 3 * audio.SampleRate
	bab, theirs := others(t, lead+len(own)+3*audio.SampleRate, wearerActive-15)
	stream := mix(append([]float32(nil), bab...), own, lead)
	ownWords := map[string]bool{}
	for _, x := range wer.Words("And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.") {
		ownWords[x] = true
	}
	count := func(notes []string) (mine, their int) {
		for _, n := range notes {
			for _, x := range wer.Words(n) {
				switch {
				case ownWords[x]:
					mine++
				case theirs[x] && len(x) >= 4:
					their++
				}
			}
		}
		return
	}

	off := cfg
	off.Enabled = false
	_, theirOff := count(p.notes(t, off, stream))
	mine, their := count(p.notes(t, cfg, stream))
	t.Logf("the others' words in the notes: %d with the gate off, %d on; the wearer's: %d", theirOff, their, mine)
	// One other talker speaks in the wearer's pauses (jfk pauses a second
	// after "Americans"): a few of their peaks reach the wearer's frame
	// level, and whisper's word times are too rough to cut just their
	// words (the gap is stated in the note). The gate must still
	// remove most of them and keep the wearer's sentence.
	if theirOff < 4 {
		t.Errorf("gate off: %d words of the others in the notes; the mix does not test the gate", theirOff)
	}
	if mine < 15 || 3*their > theirOff {
		t.Errorf("gate on: %d of the wearer's words and %d of the others' (%d without the gate); want the wearer's sentence (15+) and at most a third of theirs", mine, their, theirOff)
	}

	if notes := p.notes(t, cfg, bab); len(notes) > 0 {
		t.Errorf("the others alone 15 dB under the wearer published %d notes: %q", len(notes), notes)
	}

	// The wearer's wake sentence: alone, the gate keeps every word whisper
	// wrote of it, the name's first (whatever whisper made of the name,
	// which is not the gate's doing: tiny.en writes "Agora" in the full
	// window and "Add or" in the stepped one); among the others, the
	// utterance is kept.
	say := testaudio.AtActiveDB(testaudio.Speak(t, "en-us", "Agora, the beam on level three has a crack."), wearerActive, activeRange)
	quiet := mix(make([]float32, lead+len(say)+2*audio.SampleRate), say, lead)
	alone, dropped := p.notesDropped(t, cfg, quiet)
	if len(alone) != 1 || dropped > 0 || !strings.Contains(strings.ToLower(alone[0]), "crack") {
		t.Errorf("the wearer's wake sentence alone: notes %q with %d words dropped, want the whole sentence as one note", alone, dropped)
	}
	kept := false
	for _, n := range p.notes(t, cfg, mix(append([]float32(nil), bab...), say, lead)) {
		kept = kept || strings.Contains(strings.ToLower(n), "beam") || strings.Contains(strings.ToLower(n), "crack")
	}
	if !kept {
		t.Errorf("the wearer's wake sentence among others was not kept")
	}
}
