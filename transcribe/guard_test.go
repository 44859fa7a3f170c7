package transcribe

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio/testaudio"
)

func TestGuard(t *testing.T) {
	const (
		sure  = 0.9
		shaky = 0.3
		long  = 4 * time.Second
		short = time.Second
	)
	tests := []struct {
		text       string
		confidence float64
		dur        time.Duration
		want       string // part of the reason; "" means kept
	}{
		// Real inspection speech is kept.
		{"AGORA, wat denk je van deze scheur?", shaky, short, ""},
		{"The bolt on pillar three is corroded.", sure, long, ""},
		{"Nee, nee, dat klopt niet.", sure, long, ""},
		{"Thank you.", sure, long, ""}, // confidently heard on enough audio
		{"dank je wel", sure, long, ""},
		{"Controleer stap 1 (de flens) en stap 2.", sure, long, ""},
		{"", shaky, short, ""},
		// Annotations are never speech.
		{"[BLANK_AUDIO]", sure, long, "annotation"},
		{"(music)", sure, long, "annotation"},
		{"[Music] (applause)", sure, long, "annotation"},
		{"*zucht*", sure, long, "annotation"},
		{"♪ ♪", sure, long, "annotation"},
		{"...", sure, long, "no words"},
		// Subtitle credits whisper learned from its training data.
		{"Ondertiteld door de Amara.org gemeenschap", sure, long, "subtitle credit"},
		{"Ondertiteling door TV Gelderland 2021", sure, long, "subtitle credit"},
		{"Subtitles by the Amara.org community", sure, long, "subtitle credit"},
		// Known silence hallucinations: dropped when shaky or short.
		{"Thank you.", shaky, long, "known whisper hallucination"},
		{"Thank you.", sure, short, "known whisper hallucination"},
		{"Thanks for watching!", shaky, long, "known whisper hallucination"},
		{"you", shaky, short, "known whisper hallucination"},
		{"Bedankt voor het kijken.", shaky, long, "known whisper hallucination"},
		{"Bedankt voor het luisteren!", sure, short, "known whisper hallucination"},
		// Decoder loops.
		{"the the the the the", sure, long, "repetition loop: a 1-word phrase repeated 5 times"},
		{"I'm sorry. I'm sorry. I'm sorry. I'm sorry.", sure, long, "repetition loop: a 2-word phrase repeated 4 times"},
		{"Okay. De brug. De brug. De brug.", sure, long, "repetition loop"},
		{"nee nee nee", sure, long, ""}, // three is still speech
		{"Punt één, de brug de brug de brug, klopt dat ja of nee nu", sure, long, ""}, // loop is a small part
	}
	for _, tc := range tests {
		got := guard(tc.text, tc.confidence, tc.dur)
		if tc.want == "" && got != "" {
			t.Errorf("guard(%q, %.1f, %s) rejected: %s; want kept", tc.text, tc.confidence, tc.dur, got)
		}
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("guard(%q, %.1f, %s) = %q; want a reason containing %q", tc.text, tc.confidence, tc.dur, got, tc.want)
		}
	}
}

func TestRMS(t *testing.T) {
	if got := rms(nil); got != 0 {
		t.Errorf("rms(nil) = %v", got)
	}
	if got := rms([]float32{0.5, -0.5, 0.5, -0.5}); got != 0.5 {
		t.Errorf("rms(±0.5) = %v, want 0.5", got)
	}
	if rms(tone(time.Second)) < DefaultSilenceRMS || rms(make([]float32, 100)) >= DefaultSilenceRMS {
		t.Errorf("silence floor does not separate a tone from digital silence")
	}
}

// Real transcripts of the shared clips (many languages, some very short
// keyword recordings) are speech: the guard must keep every one heard with
// normal confidence.
func TestGuardKeepsReferenceTranscripts(t *testing.T) {
	data, err := os.ReadFile(testaudio.Clip(t, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i, line := range strings.Split(string(data), "\n")[1:] {
		cols := strings.Split(line, "\t")
		if len(cols) < 4 || cols[3] == "" {
			continue
		}
		secs, err := strconv.ParseFloat(cols[1], 64)
		if err != nil {
			t.Fatalf("MANIFEST line %d: seconds %q: %v", i+2, cols[1], err)
		}
		checked++
		if why := guard(cols[3], 0.8, time.Duration(secs*float64(time.Second))); why != "" {
			t.Errorf("MANIFEST line %d (%s): %q rejected: %s", i+2, cols[0], cols[3], why)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d transcripts checked", checked)
	}
}
