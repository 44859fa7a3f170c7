package wake

import (
	"testing"
	"time"
)

// TestShortQuestionsStayQuestions: a short question after the name is a
// question, however close its words sound to a listen word (issue 45: on
// the sound match, "Agora, last week?" switched back to listen mode and
// the question was never sent). The listen words whisper writes, as
// written or misspelt by a letter, still switch back.
func TestShortQuestionsStayQuestions(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	questions := []string{
		// The issue's.
		"Agora, last week?", "Agora, later?", "Agora, list them.", "Agora, lost one?",
		"Agora, rusted?", "Agora, less than?", "Agora, lastig?",
		// English.
		"Agora, listed?", "Agora, lessons?", "Agora, lighten?", "Agora, listing?", "Agora, lesser?",
		"Agora, lasting?", "Agora, loosen it?", "Agora, lessen it?", "Agora, glisten?",
		"Agora, lift them?", "Agora, lists?", "Agora, leased?", "Agora, lasted?", "Agora, mister?",
		"Agora, Lisbon?", "Agora, lose them?", "Agora, last one?", "Agora, lean ten?",
		// Dutch.
		"Agora, lijst?", "Agora, laatste?", "Agora, lijsten?", "Agora, lusten?", "Agora, lasten?",
		"Agora, lassen?", "Agora, lezen?", "Agora, lissen vorige week?", "Agora, lastiger?", "Agora, lister dan?",
		"Agora, luider?", "Agora, duister?", "Agora, kluister?", "Agora, lichten?", "Agora, listig?",
		"Agora, lossen?", "Agora, liften?", "Agora, lekken?", "Agora, lust ie?", "Agora, laat zien?",
		"Agora, misten?", "Agora, lieten ze?",
	}
	for _, q := range questions {
		if m := r.Match(q); m.Action != Feedback || m.Remainder == "" {
			t.Errorf("Match(%q) = %q, remainder %q: want a question", q, m.Action, m.Remainder)
		}
	}
	// What whisper wrote for the listen words on the wake benchmark and in
	// docs/wake.md, as written or one letter off.
	listens := []string{
		"Agora, listen.", "Agora listen", "AGORA, LUISTER!", "Agora, luister maar.", "Agora, luisteren.",
		"Agora, listen up.", "Agora, listening.", "Hey Agora, listen.", "Hey Agra, listen.",
		"ahh gora lisen", "Agora, lissen!", "Agora, lissen?", "Agora, lister", "Agora, luistr.",
		"Heagora Loister.", "Agora, listens.", "Agora, luistert.", "Agora, liseten.", "Agora, lsten.",
		"Agora, luster.", "Hé Agora, Luster.",
	}
	for _, l := range listens {
		if m := r.Match(l); m.Action != Listen || m.Remainder != "" {
			t.Errorf("Match(%q) = %q, remainder %q: want the switch back", l, m.Action, m.Remainder)
		}
	}
}

// TestSoundedListenHeardAgain: words that only sound like a listen word
// ("lesson" for "listen") are the switch back when the audio, heard again
// from them (TailFrom), gives the listen word as written; a short
// question heard again stays a question.
func TestSoundedListenHeardAgain(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	notPlaced := Spot{Score: 0.3, End: ms(600)}
	tests := []struct {
		name   string
		words  []string
		spot   Spot
		cut    bool
		from   time.Duration
		tail   string
		action Action
	}{
		{"lesson, heard again as listen", []string{"Agora,@0-500", "lesson.@600-1000"}, notPlaced, true, ms(500), "Listen.", Listen},
		{"Lee Sin, heard again as luister", []string{"Adora,@0-500", "Lee@600-800", "Sin@800-1000"}, notPlaced, true, ms(500), "Luister.", Listen},
		{"lesson, heard again as lesson: a question", []string{"Agora,@0-500", "lesson.@600-1000"}, notPlaced, true, ms(500), "Lesson.", Feedback},
		{"later: sounds like it, heard again as later", []string{"Agora,@0-500", "later?@600-1000"}, notPlaced, true, ms(500), "Later?", Feedback},
		{"list them: sounds like it, heard again", []string{"Agora,@0-500", "list@600-800", "them.@800-1000"}, notPlaced, true, ms(500), "List them.", Feedback},
		{"a last letter of the name heard again", []string{"Agora,@0-500", "lesson.@600-1000"}, notPlaced, true, ms(500), "Ra, listen.", Listen},
		{"too long after the name to be listen words", []string{"Agora,@0-500", "lesson.@600-2000"}, notPlaced, false, 0, "", Feedback},
		{"no word times", []string{"Agora,", "lesson."}, notPlaced, false, 0, "", Feedback},
		{"the spotter placed the name: its cut", []string{"Agora,@0-500", "lesson.@600-1000"}, Spot{Score: 0.999, End: ms(750), Heard: true}, true, ms(500), "Listen.", Listen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, text := timed(t, tt.words...)
			from, ok := r.TailFrom(text, ws, tt.spot)
			if ok != tt.cut || from != tt.from {
				t.Fatalf("TailFrom(%q) = %s, %v; want %s, %v", text, from, ok, tt.from, tt.cut)
			}
			s := tt.spot
			s.Tail = tt.tail
			if m := r.MatchSpot(text, ws, s); m.Action != tt.action {
				t.Errorf("MatchSpot(%q, tail %q) = %q, remainder %q; want %q", text, tt.tail, m.Action, m.Remainder, tt.action)
			}
		})
	}
}
