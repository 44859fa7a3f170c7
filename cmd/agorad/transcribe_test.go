package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/transcribe"
)

// fakePipeline: models resolve to fixed paths, the VAD calls loud windows
// speech, and the transcriber returns scripted texts in order.
type fakePipeline struct {
	texts    []string
	missing  map[string]bool // model names/paths that do not resolve
	opts     transcribe.Options
	calls    *int
	failCall int    // 1-based call that fails; 0 none
	batches  *[]int // with batching: the size of each TranscribeBatch call
}

func (f *fakePipeline) Resolve(kind, name, path string) (string, error) {
	if f.missing[name] || f.missing[path] {
		return "", fmt.Errorf("%s model %q not found; looked in models/%s; get it with `agorad model fetch %s`", kind, name, name, name)
	}
	if path != "" {
		return path, nil
	}
	return "/models/" + name, nil
}

func (f *fakePipeline) Transcriber(opts transcribe.Options) (utteranceTranscriber, error) {
	f.opts = opts
	if f.batches != nil {
		return &fakeBatcher{fakeTranscriber{f: f}}, nil
	}
	return &fakeTranscriber{f: f}, nil
}

// fakeBatcher is a fakeTranscriber that also takes batches (one scripted
// text per utterance, in order), recording their sizes.
type fakeBatcher struct{ fakeTranscriber }

func (b *fakeBatcher) TranscribeBatch(ctx context.Context, utts [][]float32) ([]transcribe.Result, error) {
	*b.f.batches = append(*b.f.batches, len(utts))
	var out []transcribe.Result
	for _, u := range utts {
		r, err := b.Transcribe(ctx, u)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (f *fakePipeline) VAD(path string) (prober, error) { return energyProber{}, nil }

type fakeTranscriber struct{ f *fakePipeline }

func (t *fakeTranscriber) Transcribe(ctx context.Context, samples []float32) (transcribe.Result, error) {
	*t.f.calls++
	n := *t.f.calls
	if n == t.f.failCall {
		return transcribe.Result{}, errors.New("whisper_full failed")
	}
	text := ""
	if n <= len(t.f.texts) {
		text = t.f.texts[n-1]
	}
	return transcribe.Result{Text: text, Lang: "nl", Confidence: 0.87654}, nil
}

func (t *fakeTranscriber) Close() error { return nil }

// energyProber calls a 512-sample window speech when it is loud.
type energyProber struct{}

func (energyProber) WindowSize() int { return 512 }
func (energyProber) Reset()          {}
func (energyProber) Close() error    { return nil }
func (energyProber) Probs(s []float32) ([]float32, error) {
	out := make([]float32, len(s)/512)
	for i := range out {
		var sum float64
		for _, v := range s[i*512 : (i+1)*512] {
			sum += float64(v) * float64(v)
		}
		if math.Sqrt(sum/512) > 0.05 {
			out[i] = 0.99
		}
	}
	return out, nil
}

// writeWAV writes 16 kHz mono 16-bit PCM.
func writeWAV(t *testing.T, path string, samples []float32) string {
	t.Helper()
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + 2*len(samples)))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1))
	le(uint16(1))
	le(uint32(16000))
	le(uint32(32000))
	le(uint16(2))
	le(uint16(16))
	b.WriteString("data")
	le(uint32(2 * len(samples)))
	for _, s := range samples {
		le(int16(max(-1, min(1, s)) * 32767))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func tone(ms int) []float32 {
	out := make([]float32, ms*16)
	for i := range out {
		out[i] = float32(0.4 * math.Sin(2*math.Pi*300*float64(i)/16000))
	}
	return out
}

func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestTranscribeFlowFake(t *testing.T) {
	dir := t.TempDir()
	// Two bursts, 2 s apart (longer than the 1.2 s end of turn): 1.0-2.0 s and 4.0-5.5 s.
	a := writeWAV(t, filepath.Join(dir, "a.wav"), testaudio.Concat(testaudio.Silence(1000), tone(1000), testaudio.Silence(2000), tone(1500), testaudio.Silence(1500)))
	b := writeWAV(t, filepath.Join(dir, "b.wav"), testaudio.Concat(testaudio.Silence(500), tone(800), testaudio.Silence(1500)))
	notAudio := filepath.Join(dir, "notes.wav")
	os.WriteFile(notAudio, []byte("not a wav"), 0o644)
	missing := filepath.Join(dir, "missing.wav")

	calls := 0
	p := &fakePipeline{calls: &calls, texts: []string{
		"De bout zit los. AGORA, wat denk je?",
		"The flange is fine.",
		"Agora, luister maar. Volgende pijler.",
	}}
	var out, errOut bytes.Buffer
	code := cmdTranscribe(context.Background(), []string{"--lang", "nl", "--threads", "3", a, notAudio, missing, b}, &out, &errOut, p)
	if code != exitFailed {
		t.Errorf("exit %d, want %d (two bad files)", code, exitFailed)
	}
	for _, f := range []string{notAudio, missing} {
		if !strings.Contains(errOut.String(), f) {
			t.Errorf("stderr %q does not name %s", errOut.String(), f)
		}
	}
	if p.opts.Language != "nl" || p.opts.Threads != 3 || p.opts.ModelPath != "/models/base" {
		t.Errorf("transcriber options %+v: flags not passed on", p.opts)
	}
	lines := decodeLines(t, out.String())
	if len(lines) != 3 {
		t.Fatalf("got %d utterances, want 3:\n%s", len(lines), out.String())
	}
	want := []struct {
		file         string
		start, end   float64 // ms, ±100 for window rounding
		text, action string
		remainder    string
	}{
		{a, 1000, 2000, "De bout zit los. AGORA, wat denk je?", "feedback", "wat denk je?"},
		{a, 4000, 5500, "The flange is fine.", "", ""},
		{b, 500, 1300, "Agora, luister maar. Volgende pijler.", "listen", "Volgende pijler."},
	}
	for i, w := range want {
		l := lines[i]
		if l["file"] != w.file || l["text"] != w.text || l["lang"] != "nl" || l["confidence"] != 0.877 {
			t.Errorf("line %d = %v, want file %s text %q lang nl confidence 0.877", i, l, w.file, w.text)
		}
		start, _ := l["start_ms"].(float64)
		end, _ := l["end_ms"].(float64)
		if math.Abs(start-w.start) > 100 || math.Abs(end-w.end) > 100 {
			t.Errorf("line %d: speech %v-%v ms, want about %v-%v", i, start, end, w.start, w.end)
		}
		wk, has := l["wake"].(map[string]any)
		if w.action == "" {
			if has {
				t.Errorf("line %d: wake %v on a text without wake phrase", i, wk)
			}
			continue
		}
		if !has || wk["action"] != w.action || wk["remainder"] != w.remainder {
			t.Errorf("line %d: wake = %v, want action %s remainder %q", i, l["wake"], w.action, w.remainder)
		}
	}
}

func TestTranscribeUtteranceFailureKeepsOthers(t *testing.T) {
	dir := t.TempDir()
	a := writeWAV(t, filepath.Join(dir, "a.wav"), testaudio.Concat(tone(800), testaudio.Silence(1000), tone(800), testaudio.Silence(1000)))
	b := writeWAV(t, filepath.Join(dir, "b.wav"), testaudio.Concat(tone(800), testaudio.Silence(1000)))
	calls := 0
	p := &fakePipeline{calls: &calls, failCall: 1, texts: []string{"x", "second", "third"}}
	var out, errOut bytes.Buffer
	code := cmdTranscribe(context.Background(), []string{a, b}, &out, &errOut, p)
	if code != exitFailed || !strings.Contains(errOut.String(), a) || !strings.Contains(errOut.String(), "whisper_full failed") {
		t.Errorf("exit %d, stderr %q: want 1 and the failing file named", code, errOut.String())
	}
	lines := decodeLines(t, out.String())
	if len(lines) != 1 || lines[0]["file"] != b {
		t.Errorf("output %q: want the other file's utterance", out.String())
	}
}

func TestTranscribeMissingModels(t *testing.T) {
	dir := t.TempDir()
	a := writeWAV(t, filepath.Join(dir, "a.wav"), tone(500))
	tests := []struct {
		name    string
		args    []string
		missing map[string]bool
		want    string
	}{
		{"whisper", []string{a}, map[string]bool{"base": true}, "agorad model fetch base"},
		{"whisper path", []string{"--model", "/nowhere/x.bin", a}, map[string]bool{"/nowhere/x.bin": true}, "/nowhere/x.bin"},
		{"vad defaults", []string{a}, map[string]bool{"silero-v6.2.0": true, "for-tests-silero-v6.2.0-ggml.bin": true}, "agorad model fetch silero-v6.2.0"},
	}
	for _, tc := range tests {
		calls := 0
		var out, errOut bytes.Buffer
		code := cmdTranscribe(context.Background(), tc.args, &out, &errOut, &fakePipeline{calls: &calls, missing: tc.missing})
		if code != exitUsage || !strings.Contains(errOut.String(), tc.want) || calls != 0 {
			t.Errorf("%s: exit %d, stderr %q, %d calls; want 2 and %q", tc.name, code, errOut.String(), calls, tc.want)
		}
	}
	// The VAD falls back to the shared copy's name.
	calls := 0
	var out, errOut bytes.Buffer
	if code := cmdTranscribe(context.Background(), []string{a}, &out, &errOut, &fakePipeline{calls: &calls, missing: map[string]bool{"silero-v6.2.0": true}}); code != exitOK {
		t.Errorf("VAD fallback: exit %d, %s", code, errOut.String())
	}
}

// The real pipeline: audio decoding, Silero VAD, segmenter, whisper.cpp
// with the weightless test model (empty texts), wake rules.
func TestTranscribeRealJFK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whisper.cpp and Silero")
	}
	jfk := testaudio.Clip(t, "fw_jfk.wav")
	missing := filepath.Join(t.TempDir(), "missing.wav")
	var out, errOut bytes.Buffer
	args := []string{"--model", testaudio.Model(t, "for-tests-ggml-tiny.en.bin"),
		"--vad-model", testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin"), "--lang", "en", "--threads", "2", jfk, missing}
	code := cmdTranscribe(context.Background(), args, &out, &errOut, realPipeline{})
	if code != exitFailed || !strings.Contains(errOut.String(), missing) {
		t.Errorf("exit %d, stderr %q: want 1 naming %s", code, errOut.String(), missing)
	}
	lines := decodeLines(t, out.String())
	// jfk.wav has four phrases with pauses of about 1 s: under the 1.2 s end
	// of turn (segment.hangover) they are one utterance.
	if len(lines) != 1 {
		t.Fatalf("%d utterances, want 1 (jfk's pauses are shorter than the end of turn):\n%s", len(lines), out.String())
	}
	prevEnd := -1.0
	for i, l := range lines {
		start, end := l["start_ms"].(float64), l["end_ms"].(float64)
		if l["file"] != jfk || start <= prevEnd || end <= start || end > 11000 || l["lang"] != "en" {
			t.Errorf("utterance %d = %v: want ordered speech bounds inside the 11 s file, lang en", i, l)
		}
		if _, has := l["wake"]; has {
			t.Errorf("utterance %d has a wake phrase from an empty transcript", i)
		}
		prevEnd = end
	}
	// "And so my fellow Americans" starts at about 0.3 s; the last phrase ends near 10.5 s.
	if first := lines[0]["start_ms"].(float64); first < 100 || first > 800 {
		t.Errorf("first speech starts at %v ms, want about 300", first)
	}
	if last := lines[len(lines)-1]["end_ms"].(float64); last < 9500 {
		t.Errorf("last speech ends at %v ms, want about 10500", last)
	}
}

// Utterances are packed per file, a window at most transcribe.PackWindow of
// audio, and come out one line each, in order, as without packing.
func TestTranscribePacked(t *testing.T) {
	dir := t.TempDir()
	var parts [][]float32
	for range 4 { // four 10 s utterances: two fit a window (10 + gap + 10 s)
		parts = append(parts, testaudio.Silence(500), tone(10000), testaudio.Silence(2000))
	}
	long := writeWAV(t, filepath.Join(dir, "long.wav"), testaudio.Concat(parts...))
	short := writeWAV(t, filepath.Join(dir, "short.wav"), testaudio.Concat(testaudio.Silence(500), tone(800), testaudio.Silence(2000), tone(900), testaudio.Silence(2000), tone(700), testaudio.Silence(1500)))
	texts := []string{"one", "two", "three", "four", "five", "six", "seven"}
	run := func(args ...string) ([]map[string]any, []int, int) {
		calls := 0
		batches := []int{}
		p := &fakePipeline{calls: &calls, texts: texts, batches: &batches}
		var out, errOut bytes.Buffer
		if code := cmdTranscribe(context.Background(), append(args, long, short), &out, &errOut, p); code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		return decodeLines(t, out.String()), batches, calls
	}
	packed, batches, calls := run()
	if want := []int{2, 2, 3}; fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Errorf("batches %v, want %v (two 10 s utterances per window, a new file starts a new batch)", batches, want)
	}
	unpacked, none, calls1 := run("--pack=false")
	if len(none) != 0 || calls1 != 7 || calls != 7 {
		t.Errorf("--pack=false: %d batches, %d calls; packed %d calls", len(none), calls1, calls)
	}
	if len(packed) != 7 || fmt.Sprint(packed) != fmt.Sprint(unpacked) {
		t.Errorf("packed output differs from unpacked:\n%v\n%v", packed, unpacked)
	}
	for i, l := range packed {
		if l["text"] != texts[i] {
			t.Errorf("line %d: %v, want text %q (order kept)", i, l, texts[i])
		}
	}
}

// TestTranscribeDecidesAsShipped: without language flags, agorad transcribe
// gives whisper the shipped configuration's language settings (what a
// benchmark of it measures is what the daemon does); the flags override
// them, and bad ones are usage errors naming the flag.
func TestTranscribeDecidesAsShipped(t *testing.T) {
	a := writeWAV(t, filepath.Join(t.TempDir(), "a.wav"), tone(500))
	shipped := configs.Default().Transcribe
	wantVocab, err := shipped.VocabularyTerms()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	p := &fakePipeline{calls: &calls}
	var out, errOut bytes.Buffer
	if code := cmdTranscribe(context.Background(), []string{a}, &out, &errOut, p); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	o := p.opts
	if o.Language != shipped.Language || !reflect.DeepEqual(o.Languages, shipped.Languages) || o.SwitchP != shipped.LanguageSwitch ||
		!reflect.DeepEqual(o.Terms, shipped.Contexts) || len(o.Vocabulary) != len(wantVocab) || o.Beam != 0 || o.NoFallback {
		t.Errorf("options %+v: want the shipped language %q, languages %v, switch %g, contexts %v, vocabulary %v, greedy with fallback",
			o, shipped.Language, shipped.Languages, shipped.LanguageSwitch, shipped.Contexts, wantVocab)
	}
	p = &fakePipeline{calls: &calls}
	out.Reset()
	errOut.Reset()
	args := []string{"--languages", "nl, de", "--language-switch", "0.7", "--vocabulary", "nl=inspection-nl", "--beam", "2", a}
	if code := cmdTranscribe(context.Background(), args, &out, &errOut, p); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if o := p.opts; !reflect.DeepEqual(o.Languages, []string{"nl", "de"}) || o.SwitchP != 0.7 || len(o.Vocabulary["nl"]) == 0 || o.Beam != 2 {
		t.Errorf("options %+v: want languages [nl de], switch 0.7, the inspection list for nl, beam 2", o)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--language-switch", "0.3", a}, "--language-switch 0.3: want 0.5..1"},
		{[]string{"--vocabulary", "nl", a}, `--vocabulary "nl": want LANG=LIST`},
		{[]string{"--vocabulary", "nl=/nowhere/terms.txt", a}, "--vocabulary: transcribe.vocabulary.nl: open /nowhere/terms.txt"},
	} {
		calls := 0
		out.Reset()
		errOut.Reset()
		code := cmdTranscribe(context.Background(), c.args, &out, &errOut, &fakePipeline{calls: &calls})
		if code != exitUsage || !strings.Contains(errOut.String(), c.want) || calls != 0 {
			t.Errorf("%v: exit %d, stderr %q, %d calls; want 2 and %q", c.args, code, errOut.String(), calls, c.want)
		}
	}
}
