package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/audio/vad"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/transcribe/wer"
	"github.com/agora/agorad/wake"
	"github.com/agora/agorad/wake/kws"
)

// Accuracy on real Whisper weights (issue 15), through the pipeline of
// `agorad transcribe` (Silero VAD segmenter, whisper, hallucination guard,
// wake rules): the same path the daemon's utterances take. The models are
// the ones `make models` imports; without them these tests skip, saying why.
// Thresholds come from the figures measured for issue 15 (see the note
// there), with a margin for the noise between runs and machines.

// Thresholds, from the measured figures (issue 15's note) plus a margin.
var (
	// Measured (tiny.en, f16, greedy): sentences 6.3 %, commands 26.3 %,
	// wake words 20.8 %, all 13.5 %; faster-whisper int8 on the same
	// weights 6.3 / 25.5 / 25.0 / 13.5 %. The tests run the q8_0 import
	// (testaudio.RealModel): 13.3 % all, one call per utterance. With
	// llamafile's kernels (issue 24) the q8_0 import's wake words went
	// 25.0 -> 29.2 %: one word of the group's 24 ("Jarvis" -> "Jamas"),
	// the 68 clips 12.3 -> 12.6 %. In the stepped window (the default from
	// issue 24) wake words 33.3 %, one word more, sentences 5.9 %,
	// commands 22.6 %, all 12.8 %.
	maxWERTinyEn    = map[string]float64{wer.Sentences: 9, wer.Commands: 30, wer.WakeWords: 35}
	maxWERTinyEnAll = 16.5
	// maxPackedWERLoss: points of WER packing the 68 clips' utterances into
	// shared whisper windows may cost against one call per utterance.
	// Measured: packing gains (f16: 10.5 % packed, 13.0 % alone), whisper
	// hears each short command with its neighbours as context.
	maxPackedWERLoss = 1.0
	// maxLangErrors: English commands (of 33) that base may label Dutch.
	// Measured on 8 of them (the shortest): 0; the Dutch recordings: 3 of 3
	// nl. Open detection labelled short English clips ja/ur/ru/hi.
	maxLangErrors = 3
	// minWakeHits: wake phrases detected in the espeak-ng sentences, from
	// the measured figures (issue 15's wake note). With the 500 ms pre-roll
	// on q8_0: tiny.en 4 of its 8 English ones ("ahh gora what is…",
	// "…wide, agora, log it…", "…basement, agora.", "Hey Agora, …"; "ahh
	// gora lisen" now switches back too), base 1 of 15 ("Hey, Agora, …";
	// espeak's Dutch it hears as English: "Hey, vlogger, …"). The tiny.en
	// floor keeps one of slack below the measurement (f16 at 300 ms gave 3).
	// No false alarm in 5 near-misses.
	minWakeHits = map[string]int{"tiny.en": 3, "base": 1}
	// minSpotHits: the same with the keyword spotter (docs/wake.md),
	// measured: tiny.en 7 of 8, base 12 of 15 with the second head (9 of
	// 15 with the first), 14 of 15 once listen words are heard again after
	// the name (wake.Rules.TailFrom); tiny.en 8 of 8 once a sure spot
	// wakes where whisper's guard dropped the text (issue 21's fifth
	// round); two allowed to go.
	// maxWrongAction: listen phrases only the spotter heard, whose listen
	// word whisper garbled too, so they went as a question; measured:
	// tiny.en 1 ("Add or release and..."), base 1 ("A Lord had laced
	// her."), with the tail heard again and listen words by their sound
	// (before: base 5 and 6 in two runs, "Adore at least.", "I love hot
	// looser."; whisper's words vary a little from run to run).
	//
	// Issue 45 part 6 (listen words said, not guessed) lowered base's
	// floors: "Luster" (for "luister") and "Adore at least and" (for
	// "Agora listen") no longer switched back on their sound alone (base
	// 12 and 11 of 15, 3 and 4 with the wrong action). "Luster" is now
	// taken as the listen word misspelt (wake/listenwords.go: whisper writes
	// it for "luister"): base 13 of 15, 2 with the wrong action ("Adore at
	// least and", "A Lord had loosed her."); one more allowed to go, as a
	// fresh root measured one fewer before.
	minSpotHits    = map[string]int{"tiny.en": 6, "base": 12}
	maxWrongAction = map[string]int{"tiny.en": 1, "base": 3}
)

// realRun transcribes samples through the pipeline and returns its output.
type realRun struct {
	tr    *transcribe.Transcriber
	det   *vad.Detector
	rules *wake.Rules
	mu    sync.Mutex
}

func newRealRun(t *testing.T, model, lang string) *realRun {
	t.Helper()
	if testing.Short() {
		t.Skip("real Whisper weights: slow")
	}
	path := testaudio.RealModel(t, model)
	// The daemon's encoder window: what ships is what is measured.
	tr, err := transcribe.New(transcribe.Options{ModelPath: path, Language: lang, Threads: 2,
		Window: transcribe.Window(configs.Default().Transcribe.Window)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	det, err := vad.Open(testaudio.Model(t, "for-tests-silero-v6.2.0-ggml.bin"), vad.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { det.Close() })
	rules, err := wake.New(wake.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &realRun{tr: tr, det: det, rules: rules}
}

func (r *realRun) run(t *testing.T, name string, samples []float32) []utteranceJSON {
	t.Helper()
	return r.runJudged(t, name, samples, nil)
}

// runJudged is run with the keyword spotter (nil: whisper's text alone).
func (r *realRun) runJudged(t *testing.T, name string, samples []float32, spot *kws.Spotter) []utteranceJSON {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := transcribeSamples(context.Background(), name, samples, r.det, r.tr, wakeJudge{rules: r.rules, spot: spot, tail: r.tr}, enc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []utteranceJSON
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var u utteranceJSON
		if err := dec.Decode(&u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func (r *realRun) file(t *testing.T, path string) []utteranceJSON {
	t.Helper()
	s, err := audio.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return r.run(t, filepath.Base(path), s)
}

// recordingTranscriber keeps the utterances the segmenter gives it.
type recordingTranscriber struct{ utts [][]float32 }

func (r *recordingTranscriber) Transcribe(ctx context.Context, s []float32) (transcribe.Result, error) {
	r.utts = append(r.utts, s)
	return transcribe.Result{}, nil
}

func (r *recordingTranscriber) Close() error { return nil }

func readClip(t *testing.T, name string) []float32 {
	t.Helper()
	s, err := audio.ReadFile(testaudio.Clip(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func joined(utts []utteranceJSON) string {
	var parts []string
	for _, u := range utts {
		if u.Text != "" {
			parts = append(parts, u.Text)
		}
	}
	return strings.Join(parts, " ")
}

// jfk word for word, as one utterance: its ~1 s pauses do not end the turn.
func TestRealJFK(t *testing.T) {
	r := newRealRun(t, "tiny.en", "en")
	utts := r.file(t, testaudio.Clip(t, "fw_jfk.wav"))
	const want = "And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country."
	got := joined(utts)
	if e, _ := wer.Errors(want, got); e != 0 {
		t.Errorf("jfk: %q, want %q word for word (%d errors)", got, want, e)
	}
	if len(utts) != 1 {
		t.Errorf("jfk in %d utterances, want 1 (its pauses are shorter than the end of turn)", len(utts))
	}
}

// WER by clip group on the 68 English reference clips, tiny.en. The
// thresholds are the measured figures plus a margin (issue 15's note).
func TestRealWERClips(t *testing.T) {
	r := newRealRun(t, "tiny.en", "en")
	clips, err := wer.ReadManifest(testaudio.Clip(t, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	hyp := map[string]string{}
	for _, c := range wer.English(clips) {
		hyp[c.File] = joined(r.file(t, testaudio.Clip(t, c.File)))
	}
	en := wer.English(clips)
	all, groups := wer.Report(en, hyp)
	t.Logf("tiny.en WER all %v", all)
	// The same utterances packed across clips into shared windows (as a
	// backlog in the daemon or a long file): each clip's text comes from the
	// split of a window it shares with its neighbours.
	var utts [][]float32
	var owner []string
	for _, c := range en {
		rec := &recordingTranscriber{}
		if err := transcribeSamples(context.Background(), c.File, readClip(t, c.File), r.det, rec, wakeJudge{rules: r.rules}, json.NewEncoder(io.Discard)); err != nil {
			t.Fatal(err)
		}
		for _, u := range rec.utts {
			utts = append(utts, u)
			owner = append(owner, c.File)
		}
	}
	res, err := r.tr.TranscribeBatch(context.Background(), utts)
	if err != nil {
		t.Fatal(err)
	}
	packedHyp := map[string]string{}
	for i, x := range res {
		if x.Text != "" {
			packedHyp[owner[i]] = strings.TrimSpace(packedHyp[owner[i]] + " " + x.Text)
		}
	}
	packed, packedGroups := wer.Report(en, packedHyp)
	t.Logf("tiny.en WER packed (%d utterances) %v", len(utts), packed)
	for _, g := range wer.GroupNames {
		t.Logf("  %s: %v", g, packedGroups[g])
	}
	for _, c := range en {
		if packedHyp[c.File] != hyp[c.File] {
			t.Logf("%s: packed %q, alone %q", c.File, packedHyp[c.File], hyp[c.File])
		}
	}
	if packed.WER() > all.WER()+maxPackedWERLoss {
		t.Errorf("packed WER %.1f %%, one call per utterance %.1f %%: packing costs more than %.1f points", packed.WER(), all.WER(), maxPackedWERLoss)
	}
	for _, g := range wer.GroupNames {
		t.Logf("  %s: %v", g, groups[g])
	}
	for g, max := range maxWERTinyEn {
		if w := groups[g].WER(); w > max {
			t.Errorf("tiny.en WER on %s %.1f %%, above the %.1f %% threshold", g, w, max)
		}
	}
	if w := all.WER(); w > maxWERTinyEnAll {
		t.Errorf("tiny.en WER on all clips %.1f %%, above the %.1f %% threshold", w, maxWERTinyEnAll)
		for _, c := range en {
			if e, n := wer.Errors(c.Transcript, hyp[c.File]); e > 0 {
				t.Logf("%s: %d/%d errors: %q -> %q", c.File, e, n, c.Transcript, hyp[c.File])
			}
		}
	}
}

// Dutch on the natural recordings and language detection among nl/en with
// the multilingual base: English commands come back as English, Dutch as Dutch.
func TestRealDutchAndLanguage(t *testing.T) {
	r := newRealRun(t, "base", "auto")
	for _, tc := range []struct {
		file  string
		words []string
	}{
		// Measured: "Zet de woonkamer lamp aan." (reference "zet de
		// woonkamerlamp aan"; the peers join the compound).
		{"rhasspy_nl_test.wav", []string{"zet", "woonkamer", "lamp", "aan"}},
		// No human reference for these two: the language is checked, the
		// text logged.
		{"whisperdnl_nl_stutter.wav", nil},
		{"whisperdnl_nl_laughter.wav", nil},
	} {
		utts := r.file(t, testaudio.Clip(t, tc.file))
		text := strings.ToLower(joined(utts))
		t.Logf("%s: %q", tc.file, text)
		for _, u := range utts {
			if u.Text != "" && u.Lang != "nl" {
				t.Errorf("%s: %q labelled %q, want nl", tc.file, u.Text, u.Lang)
			}
		}
		for _, w := range tc.words {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", tc.file, text, w)
			}
		}
	}
	clips, err := wer.ReadManifest(testaudio.Clip(t, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var n, wrong int
	for _, c := range wer.English(clips) {
		if c.Group() != wer.Commands {
			continue
		}
		for _, u := range r.file(t, testaudio.Clip(t, c.File)) {
			n++
			if u.Lang != "en" {
				wrong++
				t.Logf("%s: %q labelled %q", c.File, u.Text, u.Lang)
			}
		}
	}
	t.Logf("language: %d of %d English command utterances labelled en", n-wrong, n)
	if wrong > maxLangErrors {
		t.Errorf("%d of %d English commands not labelled en, want at most %d", wrong, n, maxLangErrors)
	}
}

// wakeSentence is a spoken test of the wake rules.
type wakeSentence struct {
	voice, text string
	want        wake.Action
}

// prefixed reports whether a near-miss has a word beginning with the name
// ("agorafobie"). Whisper's text must not wake on it; the spotter hears the
// name in it (docs/wake.md, "Words that begin with the name": both heads,
// about a quarter of espeak-ng's renderings), so a wake on the spotter is
// logged as the known gap, not failed.
func (s wakeSentence) prefixed() bool {
	for _, w := range strings.Fields(strings.ToLower(s.text)) {
		if w = strings.Trim(w, ".,!?"); len(w) > len("agora") && strings.HasPrefix(w, "agora") {
			return s.want == wake.None
		}
	}
	return false
}

// wakeVoices: how the sentences are spoken. en-us says "Agora" as the
// dictionary does ('ago@r@, stress on the first syllable), nl as a Dutch
// speaker reads the name (a:Q'o:ra:). 140 words a minute, espeak-ng's
// default being 175: the pace of someone talking to a device, which both
// models also hear better (issue 15's note: tiny.en 2 of 6 English wake
// sentences at 140, 1 of 6 at 175, same voice and text).
var wakeVoices = map[string][]string{
	"en": {"-v", "en-us", "-s", "140"},
	"nl": {"-v", "nl", "-s", "140"},
}

// wakeSentences: "Agora" at the start, middle and end, the switch back, and
// near-misses that must not wake the device.
var wakeSentences = []wakeSentence{
	{"en", "Agora, what is the fire rating of this door?", wake.Feedback},
	{"en", "The crack in the north wall is ten millimetres wide, Agora, log it as serious.", wake.Feedback},
	{"en", "Please record the moisture reading in the basement, Agora.", wake.Feedback},
	{"en", "Agora.", wake.Feedback},
	{"en", "Agora, listen.", wake.Listen},
	{"en", "Agora listen.", wake.Listen},
	// With a greeting first, as people address an assistant.
	{"en", "Hey Agora, what is the fire rating of this door?", wake.Feedback},
	{"en", "Hey Agora, listen.", wake.Listen},
	{"nl", "Agora, wat is de brandwerendheid van deze deur?", wake.Feedback},
	{"nl", "De scheur in de noordgevel is tien millimeter breed, Agora, noteer het als ernstig.", wake.Feedback},
	{"nl", "Noteer de vochtmeting in de kelder, Agora.", wake.Feedback},
	{"nl", "Agora, luister.", wake.Listen},
	{"nl", "Agora luister.", wake.Listen},
	{"nl", "Hé Agora, wat is de brandwerendheid van deze deur?", wake.Feedback},
	{"nl", "Hé Agora, luister.", wake.Listen},
	{"nl", "De bewoner heeft last van agorafobie in kleine ruimtes.", wake.None},
	{"en", "The insulation is made of angora wool.", wake.None},
	{"en", "There was a gore a minute ago on the site.", wake.None},
	{"en", "The pipe in the corridor is leaking.", wake.None},
	{"nl", "De leuning van de trap zit los.", wake.None},
}

// The wake phrase on real recognition: espeak-ng sentences through the
// pipeline with tiny.en (English only: it cannot hear Dutch, so only the
// Dutch near-misses go to it) and base (both languages), judged as the
// daemon does: whisper's text and, when `make models` unpacked it, the
// keyword spotter (its verdict on whisper's text alone is kept beside it).
// Near-misses must never wake the device; detection must not fall below
// the measured rates. The small version of bench/wakebench.
func TestRealWakePhrases(t *testing.T) {
	for _, m := range []struct {
		model, lang string
		dutch       bool
	}{{"tiny.en", "en", false}, {"base", "auto", true}} {
		t.Run(m.model, func(t *testing.T) {
			r := newRealRun(t, m.model, m.lang)
			spotter := spotterIfThere(t)
			var textHits, hits, wakes, alarms, negatives, wrongAction int
			for _, s := range wakeSentences {
				if s.voice == "nl" && s.want != wake.None && !m.dutch {
					continue
				}
				speech := testaudio.SpeakArgs(t, s.text, wakeVoices[s.voice]...)
				utts := r.runJudged(t, s.text, testaudio.Concat(testaudio.Silence(500), speech, testaudio.Silence(1500)), spotter)
				got, textGot, text := wake.None, wake.None, joined(utts)
				for _, u := range utts {
					if u.Wake != nil && got == wake.None {
						got = u.Wake.Action
					}
					tw := u.Wake
					if u.Spot != nil {
						tw = u.TextWake
					}
					if tw != nil && textGot == wake.None {
						textGot = tw.Action
					}
				}
				if s.want == wake.None {
					negatives++
				} else {
					wakes++
				}
				switch {
				case got == s.want && s.want != wake.None:
					hits++
				case s.want == wake.None && got != wake.None:
					alarms++
				}
				if textGot == s.want && s.want != wake.None {
					textHits++
				}
				spotScore := 0.0 // the spotter's best score over the utterances
				for _, u := range utts {
					if u.Spot != nil {
						spotScore = max(spotScore, u.Spot.Score)
					}
				}
				t.Logf("%s %-9s %-9s (text alone %-9s, spotter %.4f) %q -> %q", s.voice, s.want, got, textGot, spotScore, s.text, text)
				// A wake phrase whisper wrote must be acted on as written: the
				// switch back is never taken for a question, nor a question for
				// it. Where only the spotter heard the name, whisper's listen
				// word may be garbled too ("Adore at least."): counted.
				if got != wake.None && s.want != wake.None && got != s.want {
					if textGot != wake.None {
						t.Errorf("%s: %q heard as %q: action %q, want %q", m.model, s.text, text, got, s.want)
					}
					wrongAction++
				}
				switch {
				case s.prefixed() && textGot != wake.None:
					t.Errorf("%s: near-miss %q written %q woke the device on whisper's text (%s)", m.model, s.text, text, textGot)
				case s.prefixed() && got != wake.None:
					t.Logf("%s: %q, a word beginning with the name, woke the device on the spotter (the known gap)", m.model, s.text)
				case s.want == wake.None && got != wake.None:
					t.Errorf("%s: near-miss %q heard as %q woke the device (%s)", m.model, s.text, text, got)
				}
			}
			t.Logf("%s: %d of %d wake phrases detected (whisper's text alone %d; spotter %v), %d with the wrong action, %d false alarms in %d near-misses",
				m.model, hits, wakes, textHits, spotter != nil, wrongAction, alarms, negatives)
			// espeak-ng's "Agora" is hard for these small models (at the
			// start of a sentence tiny.en hears "And what is ...", "Ah, go
			// ahead"); the floor is the measured rate (issue 15).
			if textHits < minWakeHits[m.model] {
				t.Errorf("%s: whisper's text alone detected %d of %d wake phrases, want at least %d", m.model, textHits, wakes, minWakeHits[m.model])
			}
			if spotter != nil && hits < minSpotHits[m.model] {
				t.Errorf("%s: with the spotter %d of %d wake phrases detected, want at least %d", m.model, hits, wakes, minSpotHits[m.model])
			}
			if wrongAction > maxWrongAction[m.model] {
				t.Errorf("%s: %d wake phrases heard with the wrong action, want at most %d", m.model, wrongAction, maxWrongAction[m.model])
			}
		})
	}
}

// TestRealSpottedNameWithoutText: the name said in these espeak-ng voices
// (from the wake benchmark's corpus) derails tiny.en into a repetition
// loop or "(singing in foreign language)", which whisper's guard drops
// (measured: every time, three renderings each, one and two threads).
// The spotter is sure of the name all the same, so the device wakes, and
// the speech after the name, transcribed again on its own, is the
// question (wake.Rules.MatchSpot, TailFrom). Before, no text meant no wake.
func TestRealSpottedNameWithoutText(t *testing.T) {
	r := newRealRun(t, "tiny.en", "en")
	spotter := spotterIfThere(t)
	if spotter == nil {
		return
	}
	tests := []struct {
		text  string
		voice []string
		want  string // a word the question heard again has; "" where whisper garbles this voice anyway
	}{
		{"Hey Agora, is this beam safe?", []string{"-v", "en-gb-scotland+m7", "-s", "158", "-p", "69"}, "safe"},
		{"Agora, what spacing do the anchor bolts need for this steel column?", []string{"-v", "en-029+RicishayMax2", "-s", "140", "-p", "69"}, ""},
	}
	exercised := 0
	for _, tt := range tests {
		utts := r.runJudged(t, tt.text, testaudio.Concat(testaudio.Silence(500), testaudio.SpeakArgs(t, tt.text, tt.voice...), testaudio.Silence(1500)), spotter)
		for _, u := range utts {
			if u.Text != "" || u.Spot == nil || !u.Spot.Heard {
				t.Logf("%s %q: whisper wrote %q (spotter %v): not the case measured", tt.voice[1], tt.text, u.Text, u.Spot)
				continue
			}
			exercised++
			t.Logf("%s %q: guard %q, spotter %.4f, heard again %q (%d ms, %s), verdict %+v", tt.voice[1], tt.text, u.Rejected, u.Spot.Score, u.Spot.Tail, u.Spot.TailMS, u.Spot.TailError, u.Wake)
			if u.TextWake != nil {
				t.Errorf("%s: whisper's empty text woke the device on its own: %+v", tt.voice[1], u.TextWake)
			}
			if u.Wake == nil || u.Wake.Action != wake.Feedback {
				t.Errorf("%s: verdict %+v, want feedback", tt.voice[1], u.Wake)
				continue
			}
			// A tail over its budget (a loaded machine) leaves the name alone.
			if tt.want != "" && u.Spot.TailError == "" && !strings.Contains(strings.ToLower(u.Wake.Remainder), tt.want) {
				t.Errorf("%s: question %q, want it to have %q", tt.voice[1], u.Wake.Remainder, tt.want)
			}
		}
	}
	if exercised == 0 {
		t.Errorf("whisper wrote text for every utterance: no case of a spotted name without text was measured")
	}
}

// spotterIfThere opens the keyword spotter when make models unpacked its
// front end; when it did not, a skipped subtest says so (the text-only
// figures are then all that is checked).
func spotterIfThere(t *testing.T) *kws.Spotter {
	dir, err := kws.Find(testaudio.RealModelsDir())
	if err != nil {
		t.Run("spotter", func(t *testing.T) { t.Skipf("no keyword spotter: %v", err) })
		return nil
	}
	s, err := openSpotter(dir, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The hallucination guard on real decoding: room noise, synthetic noise and
// ten minutes of silence produce no text, through the pipeline and when fed
// to whisper directly (past the VAD, as a loud noise burst would be).
func TestRealNoiseNoText(t *testing.T) {
	r := newRealRun(t, "tiny.en", "en")
	room, err := audio.ReadFile(testaudio.Clip(t, "stp_background_noise.wav"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	white := make([]float32, 5*audio.SampleRate)
	for i := range white {
		white[i] = float32(rng.NormFloat64() * 0.05)
	}
	inputs := map[string][]float32{
		"10 min silence": testaudio.Silence(10 * 60 * 1000),
		"room noise":     room,
		"white noise":    white,
	}
	for name, s := range inputs {
		if text := joined(r.run(t, name, s)); text != "" {
			t.Errorf("%s through the pipeline: %q, want no text", name, text)
		}
		if name == "10 min silence" {
			continue // never reaches whisper: the gate's floor
		}
		res, err := r.tr.Transcribe(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if res.Text != "" {
			t.Errorf("%s straight to whisper: %q, want no text", name, res.Text)
		}
		t.Logf("%s straight to whisper: rejected %q", name, res.Rejected)
	}
}
