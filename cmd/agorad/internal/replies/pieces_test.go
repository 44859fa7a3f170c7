package replies

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agora/agorad/audio/tts"
)

func TestPieces(t *testing.T) {
	long := strings.Repeat("De balk bij as drie is gescheurd. ", 40) // 1,360 chars
	tests := []struct {
		name     string
		text     string
		max      int
		wantN    int
		sentence bool // every piece but the last ends a sentence
	}{
		{"fits", "Kort antwoord.", 600, 1, false},
		{"empty", " \x00\n ", 600, 0, false},
		{"no limit", long, 0, 1, false},
		{"sentences", long, 100, 20, true},
		{"no sentence end", strings.Repeat("woord ", 100), 50, 13, false},
		{"one long word", strings.Repeat("x", 130), 50, 3, false},
		{"control characters", "Eerste zin.\x1b[31m Tweede\nzin.", 20, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := pieces(tc.text, tc.max)
			if len(ps) != tc.wantN {
				t.Fatalf("%d pieces %q, want %d", len(ps), ps, tc.wantN)
			}
			whole, _ := tts.Prepare(tc.text, 0)
			if got := strings.Join(ps, " "); strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(whole, " ", "") {
				t.Fatalf("pieces lose text:\n got %q\nwant %q", got, whole)
			}
			for i, p := range ps {
				if tc.max > 0 && utf8.RuneCountInString(p) > tc.max {
					t.Errorf("piece %d has %d chars, over %d", i, utf8.RuneCountInString(p), tc.max)
				}
				if tc.sentence && i < len(ps)-1 && !strings.HasSuffix(p, ".") {
					t.Errorf("piece %d does not end a sentence: %q", i, p)
				}
			}
		})
	}
}

// recEngine records what it was asked to synthesize, in order; each text
// is spoken as one chunk of samples (given with io.EOF when lastWithEOF).
type recEngine struct {
	mu          sync.Mutex
	texts       []string
	failAt      int // 1-based call that fails; 0: none
	lastWithEOF bool
}

func (e *recEngine) Name() string { return "rec" }
func (e *recEngine) Close() error { return nil }
func (e *recEngine) Synthesize(ctx context.Context, text, lang string) (tts.Stream, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failAt == len(e.texts)+1 {
		return nil, errors.New("engine died")
	}
	e.texts = append(e.texts, text)
	return &recStream{n: len([]rune(text)), withEOF: e.lastWithEOF}, nil
}

func (e *recEngine) spoken() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.texts...)
}

type recStream struct {
	n       int
	withEOF bool
	closed  bool
}

func (s *recStream) Read() ([]float32, error) {
	if s.n == 0 {
		return nil, io.EOF
	}
	out := make([]float32, s.n)
	s.n = 0
	if s.withEOF {
		return out, io.EOF
	}
	return out, nil
}
func (s *recStream) Close() error { s.closed = true; return nil }

func TestSynthesizePieces(t *testing.T) {
	text := strings.Repeat("Dit is een zin van het antwoord. ", 30)
	want := pieces(text, 100)
	for _, withEOF := range []bool{false, true} {
		e := &recEngine{lastWithEOF: withEOF}
		s, n, err := synthesize(context.Background(), e, text, "nl", 100)
		if err != nil || n != len(want) {
			t.Fatalf("synthesize: %d pieces, %v; want %d", n, err, len(want))
		}
		samples := 0
		for {
			x, err := s.Read()
			samples += len(x)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		if got := e.spoken(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("eof-with-samples %v: synthesized %q, want %q", withEOF, got, want)
		}
		if wantSamples := len([]rune(strings.Join(want, ""))); samples != wantSamples {
			t.Errorf("eof-with-samples %v: read %d samples, want %d (every piece)", withEOF, samples, wantSamples)
		}
	}

	// A piece the engine cannot synthesize ends the stream with its error.
	e := &recEngine{failAt: 3}
	s, _, err := synthesize(context.Background(), e, text, "nl", 100)
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	for rerr == nil {
		_, rerr = s.Read()
	}
	if errors.Is(rerr, io.EOF) || !strings.Contains(rerr.Error(), "piece 3 of") {
		t.Errorf("read error %v, want piece 3's", rerr)
	}

	// Cancelled between pieces: no further piece is synthesized.
	ctx, cancel := context.WithCancel(context.Background())
	e = &recEngine{}
	s, _, _ = synthesize(ctx, e, text, "nl", 100)
	if _, err := s.Read(); err != nil {
		t.Fatal(err)
	}
	cancel()
	for rerr = nil; rerr == nil; {
		_, rerr = s.Read()
	}
	if !errors.Is(rerr, context.Canceled) || len(e.spoken()) != 1 {
		t.Errorf("after cancel: %v, %d pieces synthesized", rerr, len(e.spoken()))
	}
}

// A reply longer than max_chars is spoken whole by the real engine: every
// piece goes through espeak-ng and the stream carries the audio of all,
// about as long as the one-piece rendering of the same text.
func TestSynthesizePiecesEspeak(t *testing.T) {
	e, err := tts.New(tts.Config{Engine: "espeak-ng", Voices: map[string]string{"nl": "nl", "en": "en"}, Volume: 1})
	if err != nil {
		t.Skipf("no espeak-ng: %v", err)
	}
	defer e.Close()
	text := "The first beam is cracked. The second beam is fine. Check the third column tomorrow. Send the photos to the office."
	count := func(maxChars int) (int, int) {
		s, n, err := synthesize(context.Background(), e, text, "en", maxChars)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		samples := 0
		for {
			x, err := s.Read()
			samples += len(x)
			if errors.Is(err, io.EOF) {
				return samples, n
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	whole, n1 := count(0)
	split, n4 := count(40)
	if n1 != 1 || n4 != 4 {
		t.Fatalf("pieces %d and %d, want 1 and 4", n1, n4)
	}
	// Four renderings have their own lead-in and tail silence; the speech
	// itself is the same, so the lengths agree within a second.
	if diff := split - whole; split < whole*9/10 || diff > 16000 {
		t.Errorf("in pieces %d samples, whole %d: not the whole text", split, whole)
	}
}
