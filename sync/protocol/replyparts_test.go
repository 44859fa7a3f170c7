package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseReplyPart(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want ReplyPart
		ok   bool
	}{
		{"reply-1.p1of3", ReplyPart{Reply: "reply-1", Index: 1, Of: 3}, true},
		{"a.b.p12of12", ReplyPart{Reply: "a.b", Index: 12, Of: 12}, true},
		// Streamed parts: more to follow, and the last.
		{"reply-1.s1", ReplyPart{Reply: "reply-1", Index: 1, Stream: true}, true},
		{"reply-1.s12e", ReplyPart{Reply: "reply-1", Index: 12, Stream: true, Last: true}, true},
		{"a.s.b.s9999", ReplyPart{Reply: "a.s.b", Index: 9999, Stream: true}, true},
		{"reply-1.s0", ReplyPart{}, false},
		{"reply-1.s01", ReplyPart{}, false},
		{"reply-1.s10000", ReplyPart{}, false},
		{"reply-1.se", ReplyPart{}, false},
		{"reply-1.s1ee", ReplyPart{}, false},
		{".s1", ReplyPart{}, false},
		{"reply-1.s", ReplyPart{}, false},
		{"reply-1.p1of1", ReplyPart{}, false},
		{"reply-1.p0of3", ReplyPart{}, false},
		{"reply-1.p4of3", ReplyPart{}, false},
		{"reply-1.p01of3", ReplyPart{}, false},
		{"reply-1.p1of10000", ReplyPart{}, false},
		{".p1of3", ReplyPart{}, false},
		{"reply-1.p1of3x", ReplyPart{}, false},
		{"reply-1", ReplyPart{}, false},
	} {
		got, ok := ParseReplyPart(tc.id)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v %v", tc.id, got, ok, tc.want, tc.ok)
		}
		if ok && got.ID() != tc.id {
			t.Errorf("%s: ID() %s", tc.id, got.ID())
		}
	}
}

// Parts are sized for speech: 250 bytes each up to 256 parts, longer parts
// for longer answers; every part is a valid command, numbered so the
// device can parse it, and together they are the answer.
func TestSplitReplyForSpeech(t *testing.T) {
	sentence := "Zin 1 van het lange antwoord: de balk is gecontroleerd. "
	for _, tc := range []struct {
		name    string
		size    int
		maxPart int
		parts   func(int) bool
	}{
		{"short", 200, 250, func(n int) bool { return n == 1 }},
		{"25,000 bytes", 25000, ReplyPartBytes, func(n int) bool { return n >= 100 && n <= MaxSpeechParts }},
		{"200 KB", 200 << 10, MaxReplyTextBytes, func(n int) bool { return n <= MaxSpeechParts }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Repeat(sentence, tc.size/len(sentence)+1)[:tc.size]
			r := ReplyCommand{ID: "reply-x", Type: CmdReply, Text: text, Lang: "nl"}
			parts := SplitReplyForSpeech(r)
			if !tc.parts(len(parts)) {
				t.Fatalf("%d parts", len(parts))
			}
			var all strings.Builder
			for i, p := range parts {
				if len(p.Text) > tc.maxPart {
					t.Errorf("part %d: %d bytes", i+1, len(p.Text))
				}
				payload, _ := json.Marshal(p)
				if _, err := ParseCommand("dev-1", payload); err != nil {
					t.Fatalf("part %d refused: %v", i+1, err)
				}
				if len(parts) > 1 {
					if pp, ok := ParseReplyPart(p.ID); !ok || pp.Index != i+1 || pp.Of != len(parts) || pp.Reply != "reply-x" {
						t.Fatalf("part %d id %s", i+1, p.ID)
					}
				}
				all.WriteString(p.Text)
			}
			if strings.Join(strings.Fields(all.String()), " ") != strings.Join(strings.Fields(text), " ") {
				t.Errorf("parts do not add up to the answer")
			}
		})
	}
}

// A short spoken form with a long written text is one reply: it is said
// in one part (the refgraph's answers: spoken at most 160 characters).
func TestSplitReplyForSpeechShortSpoken(t *testing.T) {
	r := ReplyCommand{ID: "reply-y", Type: CmdReply, Text: strings.Repeat("Note: moisture in the basement. ", 60),
		Spoken: "Write the moisture in the basement.", Lang: "en"}
	if parts := SplitReplyForSpeech(r); len(parts) != 1 || parts[0] != r {
		t.Fatalf("%d parts, want the reply unchanged", len(parts))
	}
}
