package transcribe

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

// lines is a slog.Handler keeping every message: whisper's own timings
// arrive through the native log hook (log.go) at Close.
type lines struct {
	mu  *sync.Mutex
	got *[]string
}

func (l lines) Enabled(context.Context, slog.Level) bool { return true }
func (l lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	*l.got = append(*l.got, r.Message)
	l.mu.Unlock()
	return nil
}
func (l lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l lines) WithGroup(string) slog.Handler      { return l }

var encodeRuns = regexp.MustCompile(`encode time = .* / +(\d+) runs`)

// TestRealAutoOneEncoderPass: language "auto" on the multilingual base
// detects each utterance's language from the encoder pass that decoded it
// (issue 24). A steady speaker costs one encoder pass per utterance
// (whisper's own count, n_encode, in its timings), a change of language one
// more, the first utterance (English, after the wearer's first language,
// nl, is assumed) one more, and every utterance still comes back in its language with the text
// the fixed language gives. (Recorded Dutch: base labels espeak-ng's Dutch
// voice English, with the separate detection pass as well.)
func TestRealAutoOneEncoderPass(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights: slow")
	}
	model := testaudio.RealModel(t, "base")
	type utt struct{ file, lang, word string }
	utts := []utt{
		{"stp_en_next.wav", "en", "next"},
		{"stp_en_what_time_is_it.wav", "en", "time"},
		{"rhasspy_nl_test.wav", "nl", "lamp"},
		{"whisperdnl_nl_stutter.wav", "nl", "makkelijk"},
		{"stp_en_lock_the_front_door.wav", "en", "door"},
		{"stp_en_cancel_timer.wav", "en", "cancel"},
	}
	switches := 0
	for i := 1; i < len(utts); i++ {
		if utts[i].lang != utts[i-1].lang {
			switches++
		}
	}
	audio := make([][]float32, len(utts))
	for i, u := range utts {
		audio[i] = readWAV16(t, testaudio.Clip(t, u.file))
	}
	fixed := map[string]*Transcriber{
		"en": newTranscriber(t, Options{ModelPath: model, Language: "en", Threads: 2}),
		"nl": newTranscriber(t, Options{ModelPath: model, Language: "nl", Threads: 2}),
	}
	want := make([]string, len(utts))
	for i, u := range utts {
		r, err := fixed[u.lang].Transcribe(context.Background(), audio[i])
		if err != nil {
			t.Fatal(err)
		}
		want[i] = r.Text
	}

	var mu sync.Mutex
	var logged []string
	// Created last: the native log hook writes to the last Transcriber's logger.
	tr := newTranscriber(t, Options{ModelPath: model, Language: "auto", Threads: 2,
		Logger: slog.New(lines{mu: &mu, got: &logged})})
	for i, u := range utts {
		r, err := tr.Transcribe(context.Background(), audio[i])
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s %q", u.file, r.Lang, r.Text)
		if r.Lang != u.lang || r.Text != want[i] || !strings.Contains(strings.ToLower(r.Text), u.word) {
			t.Errorf("%s: %s %q, want %s %q (the fixed language's text, with %q)", u.file, r.Lang, r.Text, u.lang, want[i], u.word)
		}
	}
	tr.Close()
	mu.Lock()
	defer mu.Unlock()
	runs := -1
	for _, l := range logged {
		if m := encodeRuns.FindStringSubmatch(l); m != nil {
			runs, _ = strconv.Atoi(m[1])
		}
	}
	if runs < 0 {
		t.Fatalf("no encoder count in whisper's timings: %q", strings.Join(logged, "\n"))
	}
	// The first utterance, English, is decoded first in the wearer's first
	// language (nl), then again: one pass more.
	if wantRuns := 1 + len(utts) + switches; runs != wantRuns {
		t.Errorf("%d encoder passes for %d utterances with %d changes of language, want %d (1 + one each + one per change)", runs, len(utts), switches, wantRuns)
	}
}
