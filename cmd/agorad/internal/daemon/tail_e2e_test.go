package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/transcribe"
	"github.com/agora/agorad/wake"
	"github.com/agora/agorad/wake/kws"
)

// TestHearTailRealWhisper: the switch back through the daemon's hearTail
// on the real tiny.en and spotter. In these espeak-ng voices (from the
// wake benchmark's corpus) tiny.en, derailed by the name, writes the
// whole "Agora, listen" as something else ("I don't like this."); the
// words after the name, transcribed again on their own, are the listen
// words, and the verdict is the switch back.
func TestHearTailRealWhisper(t *testing.T) {
	if testing.Short() {
		t.Skip("real whisper weights and keyword spotter: slow")
	}
	// Of 4, measured over nine runs: 2 or 3 switch back, 2 always by the
	// tail. sox dithers the speech afresh each run, and that alone turns
	// anikaRobot's "I wanna listen to me." (a switch back from the text)
	// into "I want to listen to me." with the tail "Welcome to me.".
	const minSwitched, minByTail = 2, 1
	model := testaudio.RealModel(t, "tiny.en")
	spotter, err := kws.OpenDefault(0, filepath.Dir(testaudio.SpotterDir(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer spotter.Close()
	w, err := transcribe.New(transcribe.Options{ModelPath: model, Language: "en", Threads: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rules, err := wake.New(wake.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	wr := &wakeRules{}
	wr.set(rules)
	sp := &speech{core: &core{log: slog.New(slog.DiscardHandler), rules: wr}, whisper: w}
	tests := []struct {
		text, voice, rate, pitch string
	}{
		{"Agora listen.", "en-gb-scotland+boris", "169", "60"},
		{"Agora listen.", "en-gb-x-gbclan+antonio", "133", "51"},
		{"Agora, listen to me.", "en-gb-scotland+anikaRobot", "175", "67"},
		{"Agora, listen to me.", "en-gb-x-gbclan+m8", "158", "35"},
	}
	var switched, byTail int
	for _, tt := range tests {
		samples := testaudio.Concat(testaudio.Silence(500), testaudio.SpeakArgs(t, tt.text, "-v", tt.voice, "-s", tt.rate, "-p", tt.pitch), testaudio.Silence(500))
		res, err := w.Transcribe(context.Background(), samples)
		if err != nil {
			t.Fatal(err)
		}
		hit, err := spotter.Spot(samples)
		if err != nil {
			t.Fatal(err)
		}
		first := rules.MatchSpot(res.Text, res.Words, *SpotOf(&hit)).Action
		spot := sp.hearTail(context.Background(), job{audioID: "a", samples: samples}, res, SpotOf(&hit))
		got := rules.MatchSpot(res.Text, res.Words, *spot).Action
		t.Logf("%-26s %q: whisper %q, spotter %.3f; tail %q; verdict %s (whole text alone: %s)", tt.voice, tt.text, res.Text, hit.Score, spot.Tail, got, first)
		if got == wake.Listen {
			switched++
			if first != wake.Listen {
				byTail++
			}
		} else if strings.TrimSpace(spot.Tail) != "" && rules.Match("Agora "+spot.Tail).Action == wake.Listen {
			t.Errorf("%s: tail %q has the listen words, verdict %s", tt.voice, spot.Tail, got)
		}
	}
	if switched < minSwitched || byTail < minByTail {
		t.Errorf("switched back on %d of %d (%d by the tail heard again), want at least %d (%d)", switched, len(tests), byTail, minSwitched, minByTail)
	}
}
