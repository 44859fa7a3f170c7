package bridge

import (
	"strings"
	"testing"
	"time"
)

func TestSentenceCutter(t *testing.T) {
	long := strings.Repeat("word ", 120) // 600 bytes, no sentence end
	for _, tc := range []struct {
		name   string
		deltas []string
		limit  int
		want   []string // pieces in order, the flushed rest last
	}{
		{"two sentences, word by word", []string{"You ", "said: ", "is ", "it ", "high? ", "Check ", "the ", "posts."},
			250, []string{"You said: is it high?", "Check the posts."}},
		{"not cut before the next sentence starts", []string{"It is fine.", " "}, 250, []string{"It is fine."}},
		{"decimal number", []string{"The gap is 3.", "5 mm wide. Next."}, 250, []string{"The gap is 3.5 mm wide.", "Next."}},
		{"abbreviations", []string{"Use e.g. a level. Mr. Smith checks it, i.e. the posts. Done."}, 40,
			[]string{"Use e.g. a level.", "Mr. Smith checks it, i.e. the posts.", "Done."}},
		{"Dutch abbreviation and initial", []string{"Bel bijv. J. de Vries. Dan klaar."}, 250,
			[]string{"Bel bijv. J. de Vries.", "Dan klaar."}},
		{"lowercase after a point", []string{"Item no. 3 is ok. see above. Then"}, 40, []string{"Item no. 3 is ok. see above.", "Then"}},
		{"question, exclamation, quotes", []string{`He said "stop!" Then he left? Yes.`}, 20,
			[]string{`He said "stop!"`, "Then he left?", "Yes."}},
		{"line breaks end pieces", []string{"First line\n", "second line\nthird"}, 250, []string{"First line second line", "third"}},
		{"no punctuation for long: cut at a space", []string{long}, 250,
			[]string{strings.TrimSpace(long[:250]), strings.TrimSpace(long[250:500]), strings.TrimSpace(long[500:])}},
		{"no space at all: cut at a rune", []string{strings.Repeat("é", 200)}, 250,
			[]string{strings.Repeat("é", 125), strings.Repeat("é", 75)}},
		{"ellipsis mid-sentence", []string{"Wait... then go. Now"}, 250, []string{"Wait... then go.", "Now"}},
		{"empty", []string{"", "  "}, 250, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sentenceCutter{limit: tc.limit}
			var got []string
			for _, d := range tc.deltas {
				got = append(got, c.Write(d)...)
			}
			if rest := c.Flush(); rest != "" {
				got = append(got, rest)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("pieces\n got %q\nwant %q", got, tc.want)
			}
			for _, p := range got {
				if len(p) > tc.limit {
					t.Errorf("piece of %d bytes over the limit %d: %q", len(p), tc.limit, p)
				}
			}
		})
	}
}

// The cutter holds no more than the limit plus the delta being read.
func TestSentenceCutterBounded(t *testing.T) {
	c := sentenceCutter{limit: 250}
	for i := 0; i < 10000; i++ {
		c.Write("abc ")
		if len(c.buf) > 250+4 {
			t.Fatalf("holds %d bytes after %d deltas", len(c.buf), i+1)
		}
	}
}

// A huge delta (no sentence end, or only spaces) is cut in linear time.
func TestSentenceCutterHugeDelta(t *testing.T) {
	for _, delta := range []string{strings.Repeat("word ", 1<<20), strings.Repeat(" ", 4<<20), strings.Repeat("x.", 2<<20)} {
		c := sentenceCutter{limit: 250}
		t0 := time.Now()
		pieces := c.Write(delta)
		if took := time.Since(t0); took > 2*time.Second {
			t.Errorf("%d bytes cut in %v", len(delta), took)
		}
		for _, p := range pieces {
			if len(p) > 250 {
				t.Fatalf("piece of %d bytes", len(p))
			}
		}
	}
}
