package replies

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agora/agorad/audio/tts"
)

// pieces prepares a reply's spoken text (tts.Prepare: control characters
// dropped, phoneme brackets broken up) and cuts it into pieces of at most
// maxChars runes, each ending at a sentence end where there is one (else at
// a word boundary). Nothing is dropped: the pieces together are the whole
// prepared text. maxChars <= 0 gives one piece.
func pieces(text string, maxChars int) []string {
	rest, _ := tts.Prepare(text, 0)
	var out []string
	for rest != "" {
		piece, _ := tts.Prepare(rest, maxChars)
		if piece == "" { // cannot happen with maxChars > 0; never loop
			piece = rest
		}
		out = append(out, piece)
		rest = strings.TrimLeft(rest[len(piece):], " ")
	}
	return out
}

// synthesize starts speaking text: one engine stream when it fits in
// maxChars, else a stream that synthesizes the pieces one after the other
// (the next piece only once the previous one is read to the end), so an
// answer of any length is spoken whole, in order, while the engine never
// gets more than maxChars at once and the first audio comes as soon as the
// first piece's. A long answer arrives in reply parts of about 25 s of
// speech each (protocol.SplitReplyForSpeech; parts.go orders them), but a
// reply's text may be up to 8 KiB: replies.max_chars is the piece size,
// not a cut.
func synthesize(ctx context.Context, e tts.Engine, text, lang string, maxChars int) (tts.Stream, int, error) {
	ps := pieces(text, maxChars)
	switch len(ps) {
	case 0:
		return nil, 0, nil
	case 1:
		s, err := e.Synthesize(ctx, ps[0], lang)
		return s, 1, err
	}
	first, err := e.Synthesize(ctx, ps[0], lang)
	if err != nil {
		return nil, len(ps), fmt.Errorf("synthesize piece 1 of %d: %w", len(ps), err)
	}
	return &pieceStream{ctx: ctx, e: e, lang: lang, rest: ps[1:], cur: first, n: len(ps)}, len(ps), nil
}

// pieceStream reads the engine's streams of successive pieces as one.
type pieceStream struct {
	ctx  context.Context
	e    tts.Engine
	lang string
	rest []string
	cur  tts.Stream // nil once closed or after the last piece
	n    int        // pieces in all, for errors
	done bool       // cur returned its last samples together with io.EOF
}

func (s *pieceStream) Read() ([]float32, error) {
	for s.cur != nil {
		var samples []float32
		err := io.EOF
		if !s.done {
			samples, err = s.cur.Read()
		}
		if !errors.Is(err, io.EOF) {
			return samples, err
		}
		if len(samples) > 0 {
			s.done = true // next Read moves on to the next piece
			return samples, nil
		}
		s.done = false
		s.cur.Close()
		s.cur = nil
		if len(s.rest) == 0 {
			break
		}
		if err := s.ctx.Err(); err != nil {
			return nil, err
		}
		next, err := s.e.Synthesize(s.ctx, s.rest[0], s.lang)
		if err != nil {
			return nil, fmt.Errorf("synthesize piece %d of %d: %w", s.n-len(s.rest)+1, s.n, err)
		}
		s.cur, s.rest = next, s.rest[1:]
	}
	return nil, io.EOF
}

func (s *pieceStream) Close() error {
	s.rest = nil
	if s.cur == nil {
		return nil
	}
	err := s.cur.Close()
	s.cur = nil
	return err
}
