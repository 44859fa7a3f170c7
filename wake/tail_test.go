package wake

import (
	"testing"
	"time"
)

// TestTailFrom: only a short stretch after a name the spotter placed, taken
// as a question, is heard again.
func TestTailFrom(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	short := []string{"I@0-200", "will@200-400", "have@400-600", "a@600-700", "beam.@800-1400"}
	long := []string{"I've@0-300", "got@300-500", "a@500-600", "what@700-900", "is@900-1000", "the@1000-1100", "maximum@1100-1600", "span@1600-1900", "for@1900-2000", "this@2000-2200", "beam?@2200-2700"}
	tests := []struct {
		name  string
		words []string
		spot  Spot
		want  bool
		from  time.Duration
	}{
		{"sure, a short tail", short, Spot{Score: 0.999, End: ms(950), Heard: true}, true, ms(700)},
		{"sure, a question too long for listen words", long, Spot{Score: 0.999, End: ms(950), Heard: true}, false, 0},
		{"below the band: no place for the name", short, Spot{Score: 0.5, End: ms(950)}, false, 0},
		{"band, nothing like the name there: no wake to change", short, Spot{Score: 0.92, End: ms(950)}, false, 0},
		{"whisper wrote the switch back already", []string{"Agora,@0-500", "listen.@600-1000"}, Spot{Score: 0.999, End: ms(800), Heard: true}, false, 0},
		{"whisper wrote the name, a short tail", []string{"Agora,@0-500", "why?@600-1000"}, Spot{Score: 0.999, End: ms(750), Heard: true}, true, ms(500)},
		{"whisper wrote the name, the spotter did not place it", []string{"Agora,@0-500", "why?@600-1000"}, Spot{Score: 0.2, End: ms(750)}, false, 0},
		{"a rejected word at the place", []string{"Angora@0-600", "wool.@600-1000"}, Spot{Score: 0.999, End: ms(800), Heard: true}, false, 0},
		{"no word times", []string{"I", "will", "have", "a", "reason."}, Spot{Score: 0.999, End: ms(950), Heard: true}, false, 0},
		{"no text, sure: all after the name, however long", nil, Spot{Score: 0.999, End: ms(950), Heard: true}, true, ms(700)},
		{"no text, sure, the name at the very start", nil, Spot{Score: 0.999, End: ms(100), Heard: true}, true, 0},
		{"no text, in the band only", nil, Spot{Score: 0.95, End: ms(950)}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, text := timed(t, tt.words...)
			if tt.name == "no word times" || tt.words == nil {
				ws = nil
			}
			from, ok := r.TailFrom(text, ws, tt.spot)
			if ok != tt.want || from != tt.from {
				t.Errorf("TailFrom(%q, %+v) = %s, %v; want %s, %v", text, tt.spot, from, ok, tt.from, tt.want)
			}
		})
	}
}

// TestMatchSpotTail: listen words at the start of the tail heard again are
// the switch back; anything else leaves the question as whisper wrote it.
func TestMatchSpotTail(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sure := Spot{Score: 0.999, End: 950 * time.Millisecond, Heard: true}
	short := []string{"I@0-200", "will@200-400", "have@400-600", "a@600-700", "beam.@800-1400"}
	tests := []struct {
		name      string
		words     []string
		spot      Spot
		tail      string
		action    Action
		remainder string
	}{
		{"no tail: the question as written", short, sure, "", Feedback, "a beam."},
		{"listen", short, sure, "Listen.", Listen, ""},
		{"listen up", short, sure, "Listen up.", Listen, ""},
		{"Dutch", short, sure, "Luister maar.", Listen, ""},
		{"a lone listen word within an edit", short, sure, "Lisen.", Listen, ""},
		{"listen words, then a note", short, sure, "Listen, the gutter is blocked.", Listen, "the gutter is blocked."},
		{"a question in the tail stays a question", short, sure, "What is this?", Feedback, "a beam."},
		{"the name's last sound first", short, sure, "Ra, listen.", Listen, ""},
		{"or listen", short, sure, "or listen.", Listen, ""},
		{"a short word, listen, then more: a question", short, sure, "or listen to this", Feedback, "a beam."},
		{"a longer word before listen: a question", short, sure, "who listens?", Feedback, "a beam."},
		{"a listen word later in the tail is part of the question", short, sure, "Can you listen?", Feedback, "a beam."},
		{"whisper wrote the name: the tail still switches back", []string{"Agora,@0-500", "why?@600-1000"}, Spot{Score: 0.999, End: 750 * time.Millisecond, Heard: true}, "Listen.", Listen, ""},
		{"no wake: a tail changes nothing", short, Spot{Score: 0.5, End: 950 * time.Millisecond}, "Listen.", None, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, text := timed(t, tt.words...)
			s := tt.spot
			s.Tail = tt.tail
			m := r.MatchSpot(text, ws, s)
			if m.Action != tt.action || m.Remainder != tt.remainder {
				t.Errorf("MatchSpot(%q, tail %q) = %+v; want action %q remainder %q", text, tt.tail, m, tt.action, tt.remainder)
			}
		})
	}
}

func TestTailAudio(t *testing.T) {
	samples := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	lead := int(TailLead * 10 / time.Second)
	tests := []struct {
		from time.Duration
		want []float32
	}{
		{0, samples},
		{300 * time.Millisecond, samples[3:]},
		{-time.Second, samples},
		{2 * time.Second, nil},
	}
	for _, tt := range tests {
		got := TailAudio(samples, 10, tt.from)
		if len(got) != lead+len(tt.want) {
			t.Fatalf("TailAudio(from %s) has %d samples, want %d of silence and %d", tt.from, len(got), lead, len(tt.want))
		}
		for i, v := range got {
			want := float32(0)
			if i >= lead {
				want = tt.want[i-lead]
			}
			if v != want {
				t.Errorf("TailAudio(from %s)[%d] = %g, want %g", tt.from, i, v, want)
			}
		}
	}
}

// TestAgainFrom: only a question after a sure spot whisper wrote nothing
// for, which came back empty, is heard once more, from the spotter's end.
func TestAgainFrom(t *testing.T) {
	sure := Spot{Score: 0.999, End: 1300 * time.Millisecond, Heard: true}
	from := sure.End - spotLag
	tests := []struct {
		name string
		text string
		spot Spot
		tail string
		ok   bool
	}{
		{"no text, nothing heard again", "", sure, "", true},
		{"no text, blank heard again", " ", sure, " ", true},
		{"no text, a question heard again", "", sure, "Is this beam safe?", false},
		{"text: the first hearing decides", "I've got a, is this safe?", sure, "", false},
		{"no sure spot", "", Spot{Score: 0.95, End: sure.End}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := AgainFrom(tt.text, tt.spot, from, tt.tail)
			if ok != tt.ok || (ok && got != tt.spot.End) {
				t.Errorf("AgainFrom = %v, %v; want %v at the spotter's end %v", got, ok, tt.ok, tt.spot.End)
			}
		})
	}
}
