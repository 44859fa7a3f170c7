package wake

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
)

func TestMatch(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text      string
		action    Action
		before    string
		remainder string
	}{
		// English feedback.
		{"AGORA, what do you think?", Feedback, "", "what do you think?"},
		{"Agora what do you think about this crack?", Feedback, "", "what do you think about this crack?"},
		{"agora... Is the weld OK?", Feedback, "", "Is the weld OK?"},
		{"The flange is rusty. AGORA, is that a problem?", Feedback, "The flange is rusty.", "is that a problem?"},
		{"So, agora: summarise pillar 3", Feedback, "So", "summarise pillar 3"},
		{"AGORA", Feedback, "", ""},
		{"Agora.", Feedback, "", ""},
		{"Hey Agora - \"quote this\" please", Feedback, "", "\"quote this\" please"},
		{"Okay, aghora, what is the fire rating?", Feedback, "", "what is the fire rating?"},
		{"The wall is done. Hey, Agora, listen.", Listen, "The wall is done.", ""},
		{"ahh gora lisen", Listen, "", ""},                        // tiny.en, pre-roll 500 ms
		{"Agora, lissen!", Listen, "", ""},                        // doubled letters collapse
		{"Agora, lister", Listen, "", ""},                         // one edit, alone: the switch back
		{"Agora, listed cracks?", Feedback, "", "listed cracks?"}, // not alone: a question
		{"Agora, luistr.", Listen, "", ""},                        // Dutch, one edit
		{"Agora, loster.", Feedback, "", "loster."},               // two letters from luister: heard again (TailFrom)
		{"Agora, lesson.", Feedback, "", "lesson."},               // tiny.en, "Agora, listen.": heard again
		{"Adora, Lee Sin", Feedback, "", "Lee Sin"},               // two words, one sound: heard again
		{"Agora, loafer.", Feedback, "", "loafer."},               // two sounds from listen and luister
		{"Agora, lesson plan?", Feedback, "", "lesson plan?"},     // not the words that end it
		{"They said hey to Agora", Feedback, "They said hey to", ""},
		{"Hello AGORA, what now?", Feedback, "", "what now?"},
		{"Hi Agora", Feedback, "", ""},
		{"Hello. Agora, what now?", Feedback, "Hello.", "what now?"}, // another sentence: a note
		{"Hello Agora listen", Listen, "", ""},
		{"Okay. Agora, wat nu?", Feedback, "Okay.", "wat nu?"},
		// Dutch feedback.
		{"AGORA, wat vind je van deze scheur?", Feedback, "", "wat vind je van deze scheur?"},
		{"Hé Agora, wat nu?", Feedback, "", "wat nu?"},
		{"Oké, Agora, wat nu?", Feedback, "", "wat nu?"},
		{"Hallo Agora, wat nu?", Feedback, "", "wat nu?"},
		{"Hoi Agora, luister.", Listen, "", ""},
		{"Hee Agora, wat nu?", Feedback, "", "wat nu?"},
		{"Goedemorgen Agora, wat nu?", Feedback, "", "wat nu?"},
		{"Goedemiddag, Agora, luister", Listen, "", ""},
		{"Ok Agora, what now?", Feedback, "", "what now?"},
		{"Agora, klopt het dat de bout los zit?", Feedback, "", "klopt het dat de bout los zit?"},
		{"De pijler is beschadigd. Agora, moet dit gerepareerd worden?", Feedback, "De pijler is beschadigd.", "moet dit gerepareerd worden?"},
		{"agora (even checken) de meting", Feedback, "", "(even checken) de meting"},
		// Spellings whisper produces.
		{"Agorà, wat denk je?", Feedback, "", "wat denk je?"},
		{"Ágora, what now?", Feedback, "", "what now?"},
		{"A\u0301gora, what now?", Feedback, "", "what now?"}, // decomposed accent
		{"A gora, what now?", Feedback, "", "what now?"},
		{"Aggora wat nu?", Feedback, "", "wat nu?"},
		{"AGORRA, wat nu?", Feedback, "", "wat nu?"},
		{"Agorah what now", Feedback, "", "what now"},
		{"AGORA-wat nu?", Feedback, "", "wat nu?"},
		// Sound-alikes: one edit from "agora" in one written word, or
		// "agora" spelled across two or three written words.
		{"Adora, what is the fire rating?", Feedback, "", "what is the fire rating?"},
		{"NAGORA, wat nu?", Feedback, "", "wat nu?"},
		{"Agorav what now", Feedback, "", "what now"},
		{"Agura, wat nu?", Feedback, "", "wat nu?"},
		// The name run into its neighbours in one written word (Kokoro's
		// speakers, base and tiny.en), up to maxGlue letters each side.
		{"Heagora Loister.", Listen, "", ""},
		{"In Skaken, Batagora said, overhead.", Feedback, "In Skaken", "said, overhead."},
		{"Ik verwacht dat agorade onprekende roekmelder gaat melden.", Feedback, "Ik verwacht dat", "onprekende roekmelder gaat melden."},
		{"The site manager wants Agorata send the photos.", Feedback, "The site manager wants", "send the photos."},
		{"Braa anagora of the Ventilazzi.", Feedback, "Braa", "of the Ventilazzi."},
		// ... but not more, nor words that hold the name's letters.
		{"The Agoranard survey.", None, "", ""},
		{"Use Pythagoras to check the corner is square.", None, "", ""},
		{"Pythagoras's rule, three four five.", None, "", ""},
		{"Protagoras said man is the measure.", None, "", ""},
		{"The mandragora grows here.", None, "", ""},
		{"She is agorafob.", None, "", ""},
		{"in the basement of Gora.", Feedback, "in the basement of", ""}, // the first vowel swallowed
		{"Ah, gora, what now?", Feedback, "", "what now?"},
		{"The wall is wide, a gora, log it.", Feedback, "The wall is wide", "log it."},
		{"a go ra, wat nu?", Feedback, "", "wat nu?"},
		{"The wall is wide, ag or a log it.", Feedback, "The wall is wide", "log it."},
		{"Agoraa luister", Listen, "", ""},
		// Listen.
		{"AGORA luister", Listen, "", ""},
		{"Agora, luister.", Listen, "", ""},
		{"agora luister maar", Listen, "", ""},
		{"Agora, luister maar. De volgende pijler.", Listen, "", "De volgende pijler."},
		{"Agora luisteren", Listen, "", ""},
		{"AGORA listen", Listen, "", ""},
		{"Okay. Agora, listen!", Listen, "Okay.", ""},
		{"Agora listen up, next item", Listen, "", "next item"},
		{"Ágora, LUISTER", Listen, "", ""},
		// Listen word not right after the wake word: a question.
		{"Agora, can you listen to this?", Feedback, "", "can you listen to this?"},
		{"Agora, wil je luisteren naar dit geluid?", Feedback, "", "wil je luisteren naar dit geluid?"},
		{"Luister, agora, wat is dit?", Feedback, "Luister", "wat is dit?"},
		// Whole words only.
		{"He has agoraphobia.", None, "", ""},
		{"Zij heeft agorafobie.", None, "", ""},
		{"de agorae van Athene", None, "", ""},
		{"de agora's van Athene", None, "", ""},
		{"angora wool", None, "", ""},
		{"ahora mismo", None, "", ""},
		{"the aurora was bright", None, "", ""},
		{"a gorilla on the bridge", None, "", ""},
		{"Angora wool", None, "", ""},
		{"a trip to Agra", None, "", ""},
		{"Hey Agra, listen.", Listen, "", ""},                                       // greeted: whisper's spelling of the name
		{"OK Agra, which handrail height?", Feedback, "", "which handrail height?"}, // flite, tiny.en
		{"Hoi ahora, wat nu?", Feedback, "", "wat nu?"},
		{"Hey. Agra is far.", None, "", ""},      // another sentence
		{"Hey, Angora wool!", None, "", ""},      // longer than the name: never
		{"Okay, we flew to Agra.", None, "", ""}, // not right after the greeting
		{"Hey agoraphobia", None, "", ""},
		{"ahora", None, "", ""},
		{"Zij heeft agora fobie.", None, "", ""}, // a rejected word written split
		{"agoraphobic", None, "", ""},
		// A long rejected word written split and one letter off (base).
		{"She has suffered from the Gora phobia for years.", None, "", ""},
		{"Zij heeft last van agor fobie.", None, "", ""},
		{"Agora, for the beam, what span?", Feedback, "", "for the beam, what span?"},
		{"Agora, phone the architect.", Feedback, "", "phone the architect."},
		{"Is that in Agora already?", Feedback, "Is that in", "already?"}, // "angora" is matched only as written
		{"There was a gore a minute ago on the site.", None, "", ""},
		{"It was fixed a year ago or a bit more.", None, "", ""},
		{"Two days ago, a crack.", None, "", ""},
		{"I'm gonna listen", None, "", ""},
		{"at all", None, "", ""},
		{"Adore it", None, "", ""},
		{"a gorge", None, "", ""},
		{"the aura of the room", None, "", ""},
		{"two days ago, ramps were checked", None, "", ""},
		// Issue 21's near-miss "ago ra": rejected as written, word for word.
		{"A long time ago, Ra was worshipped in Egypt.", None, "", ""},
		{"ago ra, wat nu?", None, "", ""},
		{"", None, "", ""},
		{"Luister goed naar de trilling.", None, "", ""},
		{"Listen to the bearing.", None, "", ""},
		// First wake phrase decides; the rest stays in the remainder.
		{"Agora, wat is dit? Agora luister", Feedback, "", "wat is dit? Agora luister"},
	}
	for _, tc := range tests {
		m := r.Match(tc.text)
		if m.Action != tc.action || m.Before != tc.before || m.Remainder != tc.remainder {
			t.Errorf("Match(%q) = {%q, before %q, remainder %q}, want {%q, before %q, remainder %q}",
				tc.text, m.Action, m.Before, m.Remainder, tc.action, tc.before, tc.remainder)
		}
		if (m.Action == None) != (m.Phrase == "") {
			t.Errorf("Match(%q): Phrase %q with action %q", tc.text, m.Phrase, m.Action)
		}
		if m.Phrase != "" && !strings.Contains(tc.text, m.Phrase) {
			t.Errorf("Match(%q): Phrase %q is not from the text", tc.text, m.Phrase)
		}
	}
}

func TestCustomConfig(t *testing.T) {
	r, err := New(Config{Words: []string{"agora", "hey inspector", "max"}, ListenWords: []string{"ga maar luisteren", "stil"}, Reject: []string{"adora"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text      string
		action    Action
		remainder string
	}{
		{"Hey inspector, hoe diep is dit?", Feedback, "hoe diep is dit?"},
		{"hey, inspector", Feedback, ""}, // punctuation between words of a phrase is ignored
		{"Agora, ga maar luisteren.", Listen, ""},
		{"Agora stil", Listen, ""},
		{"Agora luister", Feedback, "luister"}, // not configured here
		{"Hey inspecteur", None, ""},
		{"Hey inspectors", None, ""}, // several words: as written only
		{"Adora, wat nu?", None, ""}, // rejected here
		{"Agura, wat nu?", Feedback, "wat nu?"},
		{"Max, wat nu?", Feedback, "wat nu?"},
		{"Mix, wat nu?", None, ""}, // a short word: as written only
	}
	for _, tc := range tests {
		m := r.Match(tc.text)
		if m.Action != tc.action || m.Remainder != tc.remainder {
			t.Errorf("Match(%q) = %q/%q, want %q/%q", tc.text, m.Action, m.Remainder, tc.action, tc.remainder)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // part of the error; "" means valid
	}{
		{"default", DefaultConfig(), ""},
		{"no listen words", Config{Words: []string{"agora"}}, ""},
		{"no words", Config{ListenWords: []string{"luister"}}, "wake.words: empty"},
		{"empty word", Config{Words: []string{"agora", ""}}, "wake.words[1]"},
		{"punctuation only", Config{Words: []string{"agora"}, ListenWords: []string{"luister", "..."}}, "wake.listen_words[1]"},
		{"duplicate by accent", Config{Words: []string{"agora", "Agorà"}}, "wake.words[1]: \"Agorà\" is the same as wake.words[0]"},
		{"listen word equals wake word", Config{Words: []string{"agora"}, ListenWords: []string{"AGORA"}}, "wake.listen_words[0]"},
		{"empty reject", Config{Words: []string{"agora"}, Reject: []string{"angora", "-"}}, "wake.reject[1]"},
		{"wake word rejected", Config{Words: []string{"agora"}, Reject: []string{"Aggora"}}, "wake.reject[0]: \"Aggora\" rejects wake.words[0]"},
		{"several-word wake word rejected as written", Config{Words: []string{"agora", "a gora"}, Reject: []string{"A, gora"}}, "wake.reject[0]: \"A, gora\" rejects wake.words[1]"},
		{"several words that sound as a wake word, written otherwise", Config{Words: []string{"agora", "hey agora"}, Reject: []string{"hey ago ra"}}, ""},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("%s: New accepted an invalid config", tc.name)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	r, _ := New(DefaultConfig())
	text := "De pijler aan de noordkant is beschadigd over een lengte van twee meter. Agora, moet dit vandaag nog gerepareerd worden?"
	for i := 0; i < b.N; i++ {
		r.Match(text)
	}
}

// The shared clips' reference transcripts (English, French, German, Dutch,
// ...) contain no wake phrase: the rules must stay silent on all of them.
func TestNoWakeInReferenceTranscripts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testaudio.SharedDir(t), "audio", "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := New(DefaultConfig())
	checked := 0
	for i, line := range strings.Split(string(data), "\n")[1:] {
		cols := strings.Split(line, "\t")
		if len(cols) < 4 || cols[3] == "" {
			continue
		}
		checked++
		if m := r.Match(cols[3]); m.Action != None {
			t.Errorf("MANIFEST line %d (%s): %q matched %s on %q", i+2, cols[0], cols[3], m.Action, m.Phrase)
		}
		// The same text with the wake word in front must be found, remainder intact.
		if m := r.Match("Agora, " + cols[3]); m.Action == None || m.Remainder == "" {
			t.Errorf("MANIFEST line %d: wake word before %q not found (%+v)", i+2, cols[3], m)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d transcripts in the manifest, want the full set", checked)
	}
}

// minWhisperTranscripts: transcripts per model in testdata/whisper-clips.tsv
// (all 172 clips; one gives base no text).
const minWhisperTranscripts = 170

// What real Whisper wrote for the shared clips (testdata/whisper-clips.tsv:
// system, clip, text; issue 15): English, Dutch, German, French, Spanish
// speech, commands, wake words of other assistants, noise. None of it says
// "agora", so every match is a false alarm, a listen buffer wrongly sent.
func TestNoWakeInWhisperTranscripts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "whisper-clips.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := New(DefaultConfig())
	perSystem := map[string]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.SplitN(line, "\t", 3)
		if len(cols) != 3 {
			t.Fatalf("testdata/whisper-clips.tsv line %d: %d columns, want 3", i+1, len(cols))
		}
		perSystem[cols[0]]++
		if m := r.Match(cols[2]); m.Action != None {
			t.Errorf("%s on %s: %q matched %s on %q", cols[0], cols[1], cols[2], m.Action, m.Phrase)
		}
	}
	for system, n := range perSystem {
		if n < minWhisperTranscripts {
			t.Errorf("%s: %d transcripts, want all clips", system, n)
		}
	}
	if len(perSystem) < 2 {
		t.Errorf("transcripts of %d systems, want tiny.en and base", len(perSystem))
	}
}

// TestRejectSoundingAsWakeWord: a rejected entry of several words that
// sounds as any wake word (not only the first) is rejected as written; by
// its sound it would block that wake word everywhere.
func TestRejectSoundingAsWakeWord(t *testing.T) {
	r, err := New(Config{Words: []string{"agora", "hey agora"}, Reject: []string{"hey ago ra"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want Action
	}{
		{"Hey agora, what now?", Feedback},
		{"Hey ago ra, what now?", None},
	} {
		if m := r.Match(tc.text); m.Action != tc.want {
			t.Errorf("Match(%q) = %+v, want %q", tc.text, m, tc.want)
		}
	}
}
