package wake

import (
	"strings"
	"testing"
	"time"
)

func TestMatchSpot(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Fuse, cfg.FuseLike = 0.7, 0.6
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Fuse = 0
	off, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	misheard := []string{"I've@0-300", "got@300-500", "a@500-600", "what@700-900", "is@900-1000", "the@1000-1100", "span?@1100-1500"}
	tests := []struct {
		name      string
		rules     *Rules
		words     []string
		score     float64
		heard     bool
		nameEnd   time.Duration // on whisper's clock
		action    Action
		remainder string
	}{
		{"sure: the spotter alone", r, []string{"The@0-200", "wall@200-500", "is@500-700", "done@700-1100"}, 0.999, true,
			600 * time.Millisecond, Feedback, "is done"},
		{"band, whisper wrote a name-like phrase there", r, misheard, 0.8, false,
			700 * time.Millisecond, Feedback, "what is the span?"},
		{"band, \"a dollar\" where the name was", r, []string{"Hey,@0-300", "a@400-500", "dollar@500-900", "is@1000-1200", "this@1200-1400", "safe?@1400-1800"}, 0.75, false,
			950 * time.Millisecond, Feedback, "is this safe?"},
		{"band, \"$1\" as base writes it", r, []string{"$1@0-500", "is@600-700", "the@700-800", "span?@800-1200"}, 0.75, false,
			550 * time.Millisecond, Feedback, "is the span?"},
		{"band, nothing like the name there", r, []string{"The@0-200", "wall@200-500", "is@500-700", "done@700-1100"}, 0.9, false,
			600 * time.Millisecond, None, ""},
		{"band, the name-like words far from the place", r, []string{"I've@0-300", "got@300-500", "a@500-600", "bucket@700-1000", "of@1000-1100", "nails@1100-1500", "in@1500-1700", "the@1700-1800", "shed@1800-2300"}, 0.9, false,
			2300 * time.Millisecond, None, ""},
		{"below the band", r, misheard, 0.6, false, 700 * time.Millisecond, None, ""},
		{"fuse off: the band does not count", off, misheard, 0.9, false, 700 * time.Millisecond, None, ""},
		{"band, a rejected word at the place vetoes", r, []string{"The@0-200", "angora@200-700", "sweater@700-1200"}, 0.9, false,
			750 * time.Millisecond, None, ""},
		{"sure, a rejected word at the place still vetoes", r, []string{"The@0-200", "angora@200-700", "sweater@700-1200"}, 0.999, true,
			750 * time.Millisecond, None, ""},
		{"whisper's text has the name: no score needed", r, []string{"Agora,@0-500", "what@600-800", "now?@800-1100"}, 0.1, false,
			0, Feedback, "what now?"},
		{"band, listen words after a name-like word", r, []string{"Agor@0-400", "listen.@500-900"}, 0.8, false,
			450 * time.Millisecond, Listen, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, text := timed(t, tt.words...)
			m := tt.rules.MatchSpot(text, ws, Spot{Score: tt.score, End: tt.nameEnd + spotLag, Heard: tt.heard})
			if m.Action != tt.action || m.Remainder != tt.remainder {
				t.Errorf("MatchSpot(%q, %.3f at %s) = %+v; want action %q remainder %q", text, tt.score, tt.nameEnd, m, tt.action, tt.remainder)
			}
		})
	}
}

// TestMatchSpotBandLate: in the fuse band, where whisper's word sounds
// like the name and may be another word that does, the late head's part
// must agree; unknown (0) it is not asked, and a sure spot needs no more.
func TestMatchSpotBandLate(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ws, text := timed(t, "We@0-200", "flew@200-500", "to@500-600", "Agra@600-1000", "to@1000-1100", "see@1100-1400", "the@1400-1500", "Taj@1500-1800", "Mahal.@1800-2200")
	tests := []struct {
		name   string
		spot   Spot
		action Action
	}{
		{"band, the late head hears something else after it", Spot{Score: 0.98, Late: 0.90}, None},
		{"band, the late head agrees", Spot{Score: 0.98, Late: 0.99}, Feedback},
		{"band, no late head", Spot{Score: 0.98}, Feedback},
		{"sure: the verdict has the late head in it already", Spot{Score: 0.999, Heard: true, Late: 0.6}, Feedback},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spot.End = 1000*time.Millisecond + spotLag
			if m := r.MatchSpot(text, ws, tt.spot); m.Action != tt.action {
				t.Errorf("MatchSpot(%q, %+v) = %+v, want action %q", text, tt.spot, m, tt.action)
			}
		})
	}
}

// TestMatchSpotNoText: where whisper wrote nothing (its guard dropped a
// loop or "[Music]"), a name the spotter is sure of wakes, with the speech
// after it heard again (Spot.Tail) as the question; a score below the
// spotter's threshold, even in the band, does not (no words to fuse with).
func TestMatchSpotNoText(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		spot      Spot
		action    Action
		remainder string
	}{
		{"sure, the question heard again", Spot{Score: 0.995, End: time.Second, Heard: true, Tail: "Is this beam safe?"}, Feedback, "Is this beam safe?"},
		{"sure, nothing heard again: the name alone", Spot{Score: 0.995, End: time.Second, Heard: true}, Feedback, ""},
		{"sure, listen words heard again", Spot{Score: 0.999, End: time.Second, Heard: true, Tail: "Listen."}, Listen, ""},
		{"sure, the end of the name then listen words", Spot{Score: 0.999, End: time.Second, Heard: true, Tail: "Ra, listen."}, Listen, ""},
		{"sure, the tail starts with the name", Spot{Score: 0.999, End: time.Second, Heard: true, Tail: "Agora, how deep is the footing?"}, Feedback, "how deep is the footing?"},
		{"band: no words to fuse with", Spot{Score: 0.95, End: time.Second, Tail: "Is this beam safe?"}, None, ""},
		{"no name", Spot{Score: 0.1, End: time.Second}, None, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := r.MatchSpot("  ", nil, tt.spot)
			if m.Action != tt.action || m.Remainder != tt.remainder {
				t.Errorf("MatchSpot(no text, %+v) = %+v; want action %q remainder %q", tt.spot, m, tt.action, tt.remainder)
			}
		})
	}
}

// TestMatchSpotDefaults: the shipped band (DefaultFuse, DefaultFuseLike)
// takes a name whisper wrote within an edit of its sound when the spotter
// is fairly sure, and not the homophone the spotter is less sure of
// (docs/wake.md: base wrote "a gore a" as "a Laura", spotter 0.85 with the
// first head; as "a Dora", 0.926 with the third).
func TestMatchSpotDefaults(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		words   []string
		score   float64
		nameEnd time.Duration
		action  Action
	}{
		{"Agra at 0.95", []string{"Agra,@0-400", "note@500-700", "that@700-900", "the@900-1000", "drain@1000-1300", "is@1300-1400", "cracked.@1400-1900"}, 0.95, 450 * time.Millisecond, Feedback},
		{"a Laura at 0.85", []string{"There@0-200", "was@200-400", "a@400-500", "Laura@500-900", "Middita@900-1400", "door@1400-1700"}, 0.85, 900 * time.Millisecond, None},
		{"a Dora at 0.926", []string{"There@0-200", "was@200-400", "a@400-500", "Dora@500-900", "Midi@900-1200", "Tadora@1200-1600"}, 0.926, 900 * time.Millisecond, None},
		{"I've got a at 0.95: two edits", []string{"I've@0-300", "got@300-500", "a@500-600", "what@700-900", "is@900-1000", "it?@1000-1300"}, 0.95, 650 * time.Millisecond, None},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, text := timed(t, tt.words...)
			if m := r.MatchSpot(text, ws, Spot{Score: tt.score, End: tt.nameEnd + spotLag}); m.Action != tt.action {
				t.Errorf("MatchSpot(%q, %.2f) = %+v, want %q", text, tt.score, m, tt.action)
			}
		})
	}
}

// TestNameLike: the spellings whisper uses for the name sound like it,
// everyday words at the same place do not.
func TestNameLike(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text     string
		min, max float64
	}{
		{"Agora", 1, 1},
		{"Ach go ra", 1, 1},
		{"Agor", 0.75, 0.85},
		{"a dollar", 0.6, 0.7},
		{"I've got a", 0.6, 0.7},
		{"how to learn", 0.5, 0.7},
		{"$1", 0.6, 0.7},
		{"the wall is done", 0.2, 0.55},
		{"I don't know", 0, 0.45},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			// Every word at the place: the name ends where the last one does.
			var ws []Word
			for i, w := range strings.Fields(tt.text) {
				ws = append(ws, Word{Text: w, Start: time.Duration(i) * 200 * time.Millisecond, End: time.Duration(i+1) * 200 * time.Millisecond})
			}
			end := time.Duration(len(ws))*200*time.Millisecond + spotLag
			if got := r.NameLike(ws, end); got < tt.min || got > tt.max {
				t.Errorf("NameLike(%q) = %.2f, want %.2f to %.2f", tt.text, got, tt.min, tt.max)
			}
		})
	}
	if got := r.NameLike(nil, time.Second); got != 0 {
		t.Errorf("NameLike of no words = %v, want 0", got)
	}
}

func TestFuseValidate(t *testing.T) {
	tests := []struct {
		fuse, like float64
		field      string // "" when valid
	}{
		{0, 0, ""},
		{0.7, 0.6, ""},
		{-0.1, 0.6, "wake.fuse:"},
		{1, 0.6, "wake.fuse:"},
		{0.7, 0, "wake.fuse_like:"},
		{0.7, 1.2, "wake.fuse_like:"},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.Fuse, cfg.FuseLike = tt.fuse, tt.like
		err := cfg.Validate()
		if (err == nil) != (tt.field == "") || (err != nil && !strings.HasPrefix(err.Error(), tt.field)) {
			t.Errorf("fuse %v like %v: Validate() = %v, want %q", tt.fuse, tt.like, err, tt.field)
		}
	}
}

// BenchmarkMatchSpot: the fused verdict on a misheard name in the band,
// the daemon's extra work per utterance beside the spotter's.
func BenchmarkMatchSpot(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Fuse, cfg.FuseLike = 0.9, 0.8
	r, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var ws []Word
	for i, w := range strings.Fields("I think we should ask how to learn about the insulation in the attic before the winter") {
		ws = append(ws, Word{Text: w, Start: time.Duration(i) * 250 * time.Millisecond, End: time.Duration(i+1) * 250 * time.Millisecond})
	}
	text := "I think we should ask how to learn about the insulation in the attic before the winter"
	for b.Loop() {
		r.MatchSpot(text, ws, Spot{Score: 0.95, End: 2 * time.Second})
	}
}
