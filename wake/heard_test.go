package wake

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// timed builds words from "text@startms-endms" items.
func timed(t *testing.T, items ...string) ([]Word, string) {
	t.Helper()
	var ws []Word
	var text []string
	for _, it := range items {
		w, span, _ := strings.Cut(it, "@")
		var a, b int
		if span == "" {
			a, b = -1, -1
		} else if _, err := fmt.Sscanf(span, "%d-%d", &a, &b); err != nil {
			t.Fatalf("bad item %q", it)
		}
		d := func(ms int) time.Duration {
			if ms < 0 {
				return -1
			}
			return time.Duration(ms) * time.Millisecond
		}
		ws = append(ws, Word{Text: w, Start: d(a), End: d(b)})
		text = append(text, w)
	}
	return ws, strings.Join(text, " ")
}

func TestMatchHeard(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		words     []string
		nameEnd   time.Duration
		action    Action
		before    string
		remainder string
		phrase    string
	}{
		{"misheard at the start", []string{"I've@0-300", "got@300-500", "a@500-600", "'what@700-900", "is@900-1000", "the@1000-1100", "span?'@1100-1500"},
			700 * time.Millisecond, Feedback, "", "'what is the span?'", "I've got a"},
		{"misheard mid-sentence", []string{"I@0-100", "think@100-300", "we@300-400", "should@400-600", "ask@600-900", "how@1000-1200", "to@1200-1300", "learn@1300-1600", "about@1700-1900", "the@1900-2000", "insulation.@2000-2600"},
			1650 * time.Millisecond, Feedback, "I think we should ask", "about the insulation.", "how to learn"},
		{"greeting before the name belongs to it", []string{"Hey,@0-200", "I'm@400-600", "gonna@600-900", "is@1000-1100", "this@1100-1300", "beam@1300-1600", "safe?@1600-2000"},
			950 * time.Millisecond, Feedback, "", "is this beam safe?", "I'm gonna"},
		{"listen words after the name switch back", []string{"I@0-200", "don't@200-500", "really@500-800", "listen.@900-1400"},
			850 * time.Millisecond, Listen, "", "", "I don't really"},
		{"Dutch listen word", []string{"Ach@0-300", "go@300-500", "ra@500-700", "luister@800-1300"},
			750 * time.Millisecond, Listen, "", "", "Ach go ra"},
		{"the name's last word placed after it, then listen", []string{"Gorbeth,@200-700", "listen.@700-1200"},
			100 * time.Millisecond, Listen, "", "", "Gorbeth,"},
		{"listen put inside the name's place", []string{"Agra@0-400", "Listen.@400-800"},
			900 * time.Millisecond, Listen, "", "", "Agra"},
		{"listen inside the name's place, then more: a question", []string{"Agra@0-400", "listen@400-800", "to@900-1000", "the@1000-1100", "pump?@1100-1500"},
			900 * time.Millisecond, Feedback, "", "to the pump?", "Agra listen"},
		{"a word, then listen, is still a question", []string{"Hey@0-300", "what@800-1000", "listen@1000-1300", "means@1300-1600"},
			700 * time.Millisecond, Feedback, "", "what listen means", "Hey"},
		{"a rejected word where the name was heard", []string{"The@0-200", "angora@200-700", "sweater@700-1200", "is@1200-1400", "warm.@1400-1800"},
			900 * time.Millisecond, None, "", "", ""},
		{"agoraphobia split by whisper", []string{"She@0-200", "has@200-400", "agora@400-800", "phobia.@800-1300"},
			1000 * time.Millisecond, None, "", "", ""},
		{"agoraphobia split and one letter off where the name was heard", []string{"She@0-200", "has@200-400", "Agor@400-800", "phobia.@800-1300"},
			1000 * time.Millisecond, None, "", "", ""},
		{"agoraphobia: the name's part misheard, the rest a word of its own", []string{"I've@480-730", "got@730-920", "a@920-980", "phobia@980-1360", "in@1360-1490", "listed.@1490-1800"},
			1050 * time.Millisecond, None, "", "", ""},
		{"agorafobie: the rest one letter off, after the name's place", []string{"Hij@0-200", "heeft@200-450", "al@450-700", "a@700-800", "fobi@900-1300", "sinds@1300-1700", "maart.@1700-2100"},
			900 * time.Millisecond, None, "", "", ""},
		{"ago ra written where the name was heard", []string{"A@0-100", "long@100-400", "time@400-700", "ago,@700-1000", "Ra@1000-1300", "was@1300-1500", "worshipped.@1500-2100"},
			1300 * time.Millisecond, None, "", "", ""},
		{"no word times, a rejected word longer than the name", []string{"The", "angora", "wool."},
			time.Second, None, "", "", ""},
		{"Agra is how whisper writes the name the spotter heard", []string{"Agra,@0-420", "what@500-700", "slope@700-1050"},
			450 * time.Millisecond, Feedback, "", "what slope", "Agra,"},
		{"whisper's own text wins", []string{"Agora,@0-500", "what@600-800", "now?@800-1100"},
			2 * time.Second, Feedback, "", "what now?", "Agora"},
		{"no word times: the whole text is the question", []string{"Ah", "go", "right", "down"},
			time.Second, Feedback, "", "Ah go right down", "agora"},
		{"nothing after the name", []string{"The@0-200", "wall@200-500", "is@500-600", "done.@600-1000", "A@1200-1300", "gore@1300-1600"},
			1700 * time.Millisecond, Feedback, "The wall is done.", "", "A gore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, text := timed(t, tt.words...)
			// nameEnd is on whisper's clock; the spotter reports it later.
			m := r.MatchHeard(text, ws, tt.nameEnd+spotLag)
			if m.Action != tt.action || m.Before != tt.before || m.Remainder != tt.remainder || m.Phrase != tt.phrase {
				t.Errorf("MatchHeard(%q, end %s) = %+v\nwant action %q before %q remainder %q phrase %q", text, tt.nameEnd, m, tt.action, tt.before, tt.remainder, tt.phrase)
			}
		})
	}
}

// TestRejectTails: the rests of the default rejected words that begin with
// the name, which veto a spotted name as words of their own, are long
// ones only.
func TestRejectTails(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pobia", "fobie"} {
		if !slices.Contains(r.rejectTails, want) {
			t.Errorf("rest %q of a rejected word is missing from %q", want, r.rejectTails)
		}
	}
	for _, tail := range r.rejectTails {
		if len([]rune(tail)) < minTail {
			t.Errorf("rest %q is shorter than %d letters", tail, minTail)
		}
	}
}
