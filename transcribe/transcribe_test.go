package transcribe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agora/agorad/audio/ggml"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/transcribe/wer"
)

const (
	tinyModel   = "for-tests-ggml-tiny.bin"
	tinyEnModel = "for-tests-ggml-tiny.en.bin"
)

// tone is a 440 Hz sine of the given length: loud enough to pass the
// silence floor, so it really goes through whisper.
func tone(d time.Duration) []float32 {
	n := int(d.Seconds() * sampleRate)
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(0.3 * math.Sin(2*math.Pi*440*float64(i)/sampleRate))
	}
	return out
}

func newTranscriber(t testing.TB, opts Options) *Transcriber {
	t.Helper()
	if opts.ModelPath == "" {
		opts.ModelPath = testaudio.Model(t, tinyEnModel)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	tr, err := New(opts)
	if err != nil {
		t.Fatalf("New(%s): %v", opts.ModelPath, err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func TestTranscribeRealWhisper(t *testing.T) {
	if testing.Short() {
		t.Skip("loads whisper.cpp with the test model")
	}
	tests := []struct {
		name, model, lang, wantLang string
		audio                       []float32
		wantWhisper                 bool // false: the silence floor keeps it away from whisper
	}{
		{"english model, en", tinyEnModel, "en", "en", tone(2 * time.Second), true},
		{"english model, auto is en", tinyEnModel, "auto", "en", tone(2 * time.Second), true},
		{"multilingual, nl", tinyModel, "nl", "nl", tone(2 * time.Second), true},
		{"multilingual, auto detects", tinyModel, "auto", "*", tone(2 * time.Second), true},
		{"short input is padded", tinyEnModel, "en", "en", tone(300 * time.Millisecond), true},
		{"silence is not transcribed", tinyEnModel, "en", "en", make([]float32, sampleRate), false},
		{"empty input", tinyEnModel, "en", "en", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTranscriber(t, Options{ModelPath: testaudio.Model(t, tc.model), Language: tc.lang, Threads: 2})
			res, err := tr.Transcribe(context.Background(), tc.audio)
			if err != nil {
				t.Fatalf("Transcribe: %v", err)
			}
			wantDur := time.Duration(len(tc.audio)) * time.Second / sampleRate
			if res.AudioDuration != wantDur {
				t.Errorf("AudioDuration = %s, want %s", res.AudioDuration, wantDur)
			}
			if tc.wantLang == "*" {
				if res.Lang == "" {
					t.Errorf("Lang empty with auto detection on a multilingual model")
				}
			} else if res.Lang != tc.wantLang {
				t.Errorf("Lang = %q, want %q", res.Lang, tc.wantLang)
			}
			if tc.wantWhisper {
				if res.ProcessingTime <= 0 {
					t.Errorf("ProcessingTime = %s, want > 0 for a whisper call", res.ProcessingTime)
				}
				// The test models have no weights: whisper runs and finds nothing.
				if res.Text == "" && res.Confidence != 0 {
					t.Errorf("Confidence = %v with no tokens, want 0", res.Confidence)
				}
			} else {
				if res.ProcessingTime != 0 || res.Text != "" || !strings.Contains(res.Rejected, "near-silent") {
					t.Errorf("silent input: got %+v, want not transcribed with a near-silent reason", res)
				}
			}
			if res.Confidence < 0 || res.Confidence > 1 {
				t.Errorf("Confidence = %v out of [0,1]", res.Confidence)
			}
		})
	}
}

func TestTranscribeCorruptSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("loads whisper.cpp")
	}
	tr := newTranscriber(t, Options{})
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		in := tone(time.Second)
		in[1234] = bad
		if _, err := tr.Transcribe(context.Background(), in); err == nil || !strings.Contains(err.Error(), "sample 1234") {
			t.Errorf("%v in the audio: err = %v, want it to name sample 1234", bad, err)
		}
	}
}

func TestTranscribeJFK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whisper.cpp on 11 s of audio")
	}
	samples := readWAV16(t, testaudio.Clip(t, "fw_jfk.wav"))
	tr := newTranscriber(t, Options{Language: "en"})
	res, err := tr.Transcribe(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	if res.AudioDuration < 10*time.Second || res.ProcessingTime <= 0 {
		t.Errorf("got %+v, want 11 s of audio processed", res)
	}
	t.Logf("jfk 11 s on tiny.en test model: %s", res.ProcessingTime)
}

func TestTranscribeCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("loads whisper.cpp")
	}
	tr := newTranscriber(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.Transcribe(ctx, tone(2*time.Second)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: err = %v, want context.Canceled", err)
	}
	// Cancelled while whisper runs: the abort callback stops it at whisper's
	// next stage boundary, and the call reports the context's error.
	tr2 := newTranscriber(t, Options{ModelPath: testaudio.Model(t, "for-tests-ggml-base.en.bin")})
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := tr2.Transcribe(ctx, tone(25*time.Second))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled during: err = %v, want context.DeadlineExceeded", err)
	}
	// whisper.cpp checks the abort callback between stages (after the
	// encoder, between decoder steps), not inside the encoder's graph.
	t.Logf("aborted after %s", time.Since(began))
	// The context is usable afterwards.
	if _, err := tr2.Transcribe(context.Background(), tone(time.Second)); err != nil {
		t.Fatalf("after abort: %v", err)
	}
}

// Close waits for a call in flight (it must not free a context whisper is
// using) and later calls get ErrClosed.
func TestCloseWaitsForCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("loads whisper.cpp")
	}
	tr, err := New(Options{ModelPath: testaudio.Model(t, tinyEnModel), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	finished := make(chan error, 1)
	go func() {
		close(started)
		_, err := tr.Transcribe(context.Background(), tone(3*time.Second))
		finished <- err
	}()
	<-started
	time.Sleep(100 * time.Millisecond) // let the call take its context
	tr.Close()
	select {
	case err := <-finished:
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("call in flight during Close: %v", err)
		}
	default:
		t.Errorf("Close returned while a call was still running")
	}
	if _, err := tr.Transcribe(context.Background(), tone(time.Second)); !errors.Is(err, ErrClosed) {
		t.Errorf("Transcribe after Close: %v, want ErrClosed", err)
	}
	tr.Close() // twice is harmless
}

// Several goroutines share one Transcriber; run with -race. Two contexts
// run in parallel, the rest queue.
func TestTranscribeConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("loads whisper.cpp twice")
	}
	for _, contexts := range []int{1, 2} {
		t.Run(fmt.Sprintf("contexts=%d", contexts), func(t *testing.T) {
			tr := newTranscriber(t, Options{Contexts: contexts, Threads: 1})
			var wg sync.WaitGroup
			errs := make(chan error, 6)
			for i := 0; i < 6; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					d := time.Duration(1+i%3) * time.Second
					res, err := tr.Transcribe(context.Background(), tone(d))
					if err == nil && res.AudioDuration != d {
						err = fmt.Errorf("call %d: AudioDuration %s, want %s", i, res.AudioDuration, d)
					}
					errs <- err
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestNewBadModel(t *testing.T) {
	good, err := os.ReadFile(testaudio.Model(t, tinyEnModel))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(flipped, 0x6c6d6767)
	unreadable := write("unreadable.bin", good)
	os.Chmod(unreadable, 0)

	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.bin"), "no such file"},
		{"directory", dir, "is a directory"},
		{"empty", write("empty.bin", nil), "too short"},
		{"text file", write("notes.bin", []byte("this is not a model at all")), "not a ggml model"},
		{"flipped magic", write("flipped.bin", flipped), "not a ggml model"},
		{"header only", write("head.bin", good[:40]), "truncated header"},
		{"cut in mel filters", write("mel.bin", good[:30000]), "truncated in the mel filters"},
		{"first 100 kB", write("trunc100k.bin", good[:100_000]), "truncated in the vocabulary"},
		{"last byte missing", write("short1.bin", good[:len(good)-1]), "truncated in the vocabulary"},
		{"garbage after vocabulary", write("tail.bin", append(append([]byte(nil), good...), 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8)), "corrupt tensor 0 header"},
		{"silero VAD model", testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin"), "not a whisper model"},
		{"empty path", "", "no whisper model path"},
	}
	if os.Geteuid() != 0 {
		tests = append(tests, struct{ name, path, want string }{"unreadable", unreadable, "permission denied"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := New(Options{ModelPath: tc.path})
			if err == nil {
				tr.Close()
				t.Fatalf("New(%s) succeeded, want error", tc.path)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q: want it to name %s and say %q", err, tc.path, tc.want)
			}
		})
	}
}

// whisper.cpp itself, without the pre-check, must not take the process down
// on damaged files. It refuses a flipped magic, but it loads a truncated
// file as an "empty test model" (it does not notice the end of the file),
// which is why ggml.CheckWhisper walks the whole file.
func TestWhisperLoaderOnDamagedFiles(t *testing.T) {
	routeNativeLogs(nil)
	good, err := os.ReadFile(testaudio.Model(t, tinyEnModel))
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), good...)
	flipped[0] ^= 0xff
	dir := t.TempDir()
	tests := []struct {
		name     string
		data     []byte
		mustFail bool
	}{
		{"flipped.bin", flipped, true},
		{"trunc100k.bin", good[:100_000], false},
		{"trunc1k.bin", good[:1000], false},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, err := loadContext(p)
		switch {
		case err != nil && !strings.Contains(err.Error(), p):
			t.Errorf("error %q does not name %s", err, p)
		case err == nil && tc.mustFail:
			t.Errorf("whisper loaded %s", tc.name)
		case err == nil:
			t.Logf("whisper.cpp loads %s without complaint: the pre-check is what rejects it", tc.name)
		}
		if ctx != nil {
			ctx.Whisper_free()
		}
		if _, err := ggml.CheckWhisper(p); err == nil {
			t.Errorf("CheckWhisper accepted %s", tc.name)
		}
	}
}

func TestNewBadLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("loads whisper.cpp")
	}
	for _, tc := range []struct{ model, lang, want string }{
		{tinyEnModel, "nl", "English-only"},
		{tinyModel, "klingon", "unknown language"},
	} {
		_, err := New(Options{ModelPath: testaudio.Model(t, tc.model), Language: tc.lang})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s, %s) error = %v, want %q", tc.model, tc.lang, err, tc.want)
		}
	}
}

// Real weights (issue 15): jfk word for word, and no text carried from one
// utterance into the next. lj001_0006 right after lj001_0005 once ended with
// the end of 0005 ("..., invention of the art of printing."): with the
// encoder window sized to the utterance, whisper.cpp's flash-attention cross
// attention read the previous utterance's encoder output past the sized part.
func TestRealWeights(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights: slow")
	}
	model := testaudio.RealModel(t, "tiny.en")
	tr := newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2})
	res, err := tr.Transcribe(context.Background(), readWAV16(t, testaudio.Clip(t, "fw_jfk.wav")))
	if err != nil {
		t.Fatal(err)
	}
	if want := "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."; !sameWords(res.Text, want) {
		t.Errorf("jfk: %q, want %q word for word", res.Text, want)
	}
	if res.Confidence <= 0.5 || res.Lang != "en" {
		t.Errorf("jfk: confidence %v, lang %q: want a confident English transcript", res.Confidence, res.Lang)
	}
	alone := newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2})
	want, err := alone.Transcribe(context.Background(), readWAV16(t, testaudio.Clip(t, "ljspeech_lj001_0006.wav")))
	if err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"", "AGORA."} {
		tr := newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2, InitialPrompt: prompt})
		for _, clip := range []string{"ljspeech_lj001_0005.wav", "ljspeech_lj001_0006.wav"} {
			res, err = tr.Transcribe(context.Background(), readWAV16(t, testaudio.Clip(t, clip)))
			if err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(res.Text, "printing") || (prompt == "" && res.Text != want.Text) {
			t.Errorf("prompt %q: lj001_0006 after 0005: %q, alone: %q (text leaked from the previous utterance?)", prompt, res.Text, want.Text)
		}
	}
}

// sameWords compares texts the way WER does (case and punctuation ignored).
func sameWords(a, b string) bool {
	e, _ := wer.Errors(a, b)
	return e == 0 && len(wer.Words(a)) == len(wer.Words(b))
}

// readWAV16 reads a 16 kHz mono 16-bit PCM WAV (the shared clips) without
// depending on the audio package's decoder.
func readWAV16(t testing.TB, path string) []float32 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := 12
	for i+8 <= len(data) {
		id, size := string(data[i:i+4]), int(binary.LittleEndian.Uint32(data[i+4:]))
		if id == "data" {
			pcm := data[i+8 : min(len(data), i+8+size)]
			out := make([]float32, len(pcm)/2)
			for k := range out {
				out[k] = float32(int16(binary.LittleEndian.Uint16(pcm[2*k:]))) / 32768
			}
			return out
		}
		i += 8 + size + size%2
	}
	t.Fatalf("%s: no data chunk", path)
	return nil
}

func TestPromptWithTerms(t *testing.T) {
	if testing.Short() {
		t.Skip("loads whisper.cpp")
	}
	for _, tc := range []struct {
		prompt string
		terms  []string
		want   string
	}{
		{"", nil, ""},
		{"-", nil, ""},
		{"", []string{"NEN 2767", " ", "flens"}, "NEN 2767, flens."},
		{"-", []string{"pijler"}, "pijler."},
		{"Inspectie.", nil, "Inspectie."},
	} {
		tr := newTranscriber(t, Options{InitialPrompt: tc.prompt, Terms: tc.terms})
		if got := tr.Prompt(); got != tc.want {
			t.Errorf("prompt %q + terms %q = %q, want %q", tc.prompt, tc.terms, got, tc.want)
		}
	}
}

// Packed transcription on real weights: several clips in one whisper call,
// each utterance getting its own text back, as when transcribed alone.
func TestRealPacked(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights: slow")
	}
	model := testaudio.RealModel(t, "tiny.en")
	tr := newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2})
	clips := []string{"ljspeech_lj001_0005.wav", "fw_jfk.wav", "ljspeech_lj001_0006.wav"}
	var utts [][]float32
	for _, c := range clips {
		utts = append(utts, readWAV16(t, testaudio.Clip(t, c)))
	}
	got, err := tr.TranscribeBatch(context.Background(), utts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(clips) {
		t.Fatalf("%d results for %d utterances", len(got), len(clips))
	}
	for i, c := range clips {
		alone, err := tr.Transcribe(context.Background(), utts[i])
		if err != nil {
			t.Fatal(err)
		}
		checkWords(t, c+" packed", got[i])
		checkWords(t, c+" alone", alone)
		e, n := wer.Errors(alone.Text, got[i].Text)
		t.Logf("%s packed: %q (%.2f, %s); alone: %q (%s)", c, got[i].Text, got[i].Confidence, got[i].ProcessingTime, alone.Text, alone.ProcessingTime)
		if e > n/10 || got[i].Lang != "en" || got[i].Confidence <= 0.5 {
			t.Errorf("%s packed: %q (lang %q, confidence %.2f), alone %q: %d of %d words differ", c, got[i].Text, got[i].Lang, got[i].Confidence, alone.Text, e, n)
		}
	}
	if want := "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."; !sameWords(got[1].Text, want) {
		t.Errorf("jfk packed between two clips: %q, want %q word for word", got[1].Text, want)
	}
	if strings.Contains(got[2].Text, "printing") || strings.Contains(got[0].Text, "typography") {
		t.Errorf("text crossed between packed utterances: %q / %q", got[0].Text, got[2].Text)
	}
}

// Language "auto" on the multilingual base with packing: each utterance is
// detected on its own (a mixed window's detection follows its majority:
// measured, English commands packed with Dutch came back Dutch), runs of one
// language share a window, and every utterance gets its own text back.
func TestRealPackedLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights: slow")
	}
	tr := newTranscriber(t, Options{ModelPath: testaudio.RealModel(t, "base"), Language: "auto", Threads: 2})
	type clip struct{ file, lang, word string }
	for _, tc := range []struct {
		name  string
		clips []clip
	}{
		{"dutch", []clip{{"rhasspy_nl_test.wav", "nl", "lamp"}, {"whisperdnl_nl_stutter.wav", "nl", "makkelijk"}, {"whisperdnl_nl_laughter.wav", "nl", ""}}},
		{"english", []clip{{"stp_en_next.wav", "en", "next"}, {"stp_en_what_time_is_it.wav", "en", "time"}, {"stp_en_cancel_timer.wav", "en", "cancel"}}},
		{"mixed", []clip{{"rhasspy_nl_test.wav", "nl", "lamp"}, {"stp_en_lock_the_front_door.wav", "en", "door"},
			{"whisperdnl_nl_stutter.wav", "nl", "makkelijk"}, {"stp_en_what_time_is_it.wav", "en", "time"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var utts [][]float32
			for _, c := range tc.clips {
				utts = append(utts, readWAV16(t, testaudio.Clip(t, c.file)))
			}
			start := time.Now()
			got, err := tr.TranscribeBatch(context.Background(), utts)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s", tc.name, time.Since(start))
			for i, r := range got {
				c := tc.clips[i]
				t.Logf("  %s: %s %q (%.2f)", c.file, r.Lang, r.Text, r.Confidence)
				if r.Lang != c.lang || !strings.Contains(strings.ToLower(r.Text), c.word) {
					t.Errorf("%s packed in %s: %s %q, want %s with %q", c.file, tc.name, r.Lang, r.Text, c.lang, c.word)
				}
			}
		})
	}
}

// checkWords: a result's words are its text, each with times inside its
// utterance (from its start, packed or not), in order.
func checkWords(t *testing.T, what string, r Result) {
	t.Helper()
	var text []string
	prev := time.Duration(0)
	for _, w := range r.Words {
		text = append(text, w.Text)
		if w.Start < prev-200*time.Millisecond || w.End < w.Start || w.End > r.AudioDuration+300*time.Millisecond {
			t.Errorf("%s: word %q at %s-%s (previous start %s, audio %s): out of place", what, w.Text, w.Start, w.End, prev, r.AudioDuration)
		}
		prev = w.Start
	}
	if !sameWords(strings.Join(text, " "), r.Text) || len(r.Words) == 0 {
		t.Errorf("%s: words %q, text %q", what, text, r.Text)
	}
}
