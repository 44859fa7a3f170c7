package transcribe

/*
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <whisper.h>

// log-softmax of logits[0..n) into out.
static void agora_log_softmax(const float *logits, int n, float *out) {
	float mx = -INFINITY;
	for (int i = 0; i < n; i++) {
		if (logits[i] > mx) {
			mx = logits[i];
		}
	}
	double sum = 0;
	for (int i = 0; i < n; i++) {
		sum += exp((double)(logits[i] - mx));
	}
	float lse = mx + (float)log(sum);
	for (int i = 0; i < n; i++) {
		out[i] = logits[i] - lse;
	}
}

// Asks the decoder, over the encoder output the last whisper_full left in
// ctx's state (no new encoder pass), how likely each of nseq token
// sequences (seqs, lens[i] tokens each, laid end to end) is right after
// prompt[0..np), and how likely whisper's own greedy text continuation of
// the same length is. Probabilities are over text tokens and end of text.
// out_seq[i] and out_greedy[i] get the summed log-probabilities.
static int agora_ask(struct whisper_context *ctx, const int *prompt, int np,
		const int *seqs, const int *lens, int nseq, int threads,
		float *out_seq, float *out_greedy) {
	int nv = whisper_token_eot(ctx) + 1; // text tokens and end of text
	float *first = malloc(sizeof(float) * nv);
	float *lsm = malloc(sizeof(float) * nv);
	if (first == NULL || lsm == NULL) {
		free(first);
		free(lsm);
		return -1;
	}
	int rc = 0;
	if (whisper_decode(ctx, prompt, np, 0, threads) != 0) {
		rc = -1;
		goto out;
	}
	// The decoder keeps one row of logits per token of the call, and fills
	// only the last.
	agora_log_softmax(whisper_get_logits(ctx) + (size_t)(np - 1) * whisper_n_vocab(ctx), nv, first);
	const int *q = seqs;
	for (int s = 0; s < nseq; s++) {
		float lp = first[q[0]];
		for (int j = 1; j < lens[s]; j++) {
			if (whisper_decode(ctx, &q[j - 1], 1, np + j - 1, threads) != 0) {
				rc = -1;
				goto out;
			}
			agora_log_softmax(whisper_get_logits(ctx), nv, lsm);
			lp += lsm[q[j]];
		}
		out_seq[s] = lp;
		// Whisper's own best text of as many tokens from the same place.
		float *cur = first;
		float g = 0;
		for (int j = 0; j < lens[s]; j++) {
			int best = 0;
			for (int i = 1; i < nv - 1; i++) {
				if (cur[i] > cur[best]) {
					best = i;
				}
			}
			g += cur[best];
			if (j + 1 < lens[s]) {
				if (whisper_decode(ctx, &best, 1, np + j, threads) != 0) {
					rc = -1;
					goto out;
				}
				agora_log_softmax(whisper_get_logits(ctx), nv, lsm);
				cur = lsm;
			}
		}
		out_greedy[s] = g;
		q += lens[s];
	}
out:
	free(first);
	free(lsm);
	return rc;
}
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/ggerganov/whisper.cpp/bindings/go"
)

// Asking whisper about the name (issue 21's lever 2). Whisper does not
// know the word, so its text rarely holds it; but its decoder can still be
// asked how likely the name is at a given place of the utterance, given
// the words before it, over the encoder output its transcription already
// paid for. The answer is compared with whisper's own best guess of the
// same length: a name said there should be a close second, a word that
// only sounds like it should not.

// NameScore is whisper's opinion of the name right after Before.
type NameScore struct {
	Before   string  // the text before the place asked about
	Spelling string  // the spelling of the name that scored best
	Name     float64 // its log-probability there (summed over its tokens)
	Best     float64 // whisper's own greedy continuation of as many tokens
	Tokens   int
}

// Margin is the name's log-probability per token relative to whisper's own
// guess: 0 when whisper would have written the name, more negative the
// less it believes it.
func (s NameScore) Margin() float64 {
	if s.Tokens == 0 {
		return math.Inf(-1)
	}
	return (s.Name - s.Best) / float64(s.Tokens)
}

// TranscribeAsk is Transcribe, then, on the same whisper context and its
// encoder output, asks about name after each of the texts ask returns for
// the result (the candidates for what was said before the name; "" is the
// start of the utterance). ask runs while the context is held: it may wait
// for the keyword spotter, briefly. A nil ask or no candidates asks nothing.
func (t *Transcriber) TranscribeAsk(ctx context.Context, samples []float32, name string, ask func(Result) []string) (Result, []NameScore, error) {
	var scores []NameScore
	res, err := t.transcribe(ctx, samples, func(w *wctx, res Result) error {
		if ask == nil || res.Rejected != "" {
			return nil
		}
		befores := ask(res)
		if len(befores) == 0 {
			return nil
		}
		var err error
		w.thread.do(func() { scores, err = t.askOn(w, res.Lang, name, befores) })
		return err
	})
	return res, scores, err
}

// askOn scores name after each of befores on w, whose state holds the
// utterance's encoder output. Runs on w's thread.
func (t *Transcriber) askOn(w *wctx, lang, name string, befores []string) ([]NameScore, error) {
	prompt := []C.int{C.int(w.ctx.Whisper_token_sot())}
	if t.multi {
		id := w.ctx.Whisper_lang_id(lang)
		if id < 0 {
			return nil, fmt.Errorf("ask about %q: unknown language %q", name, lang)
		}
		prompt = append(prompt, C.whisper_token_lang(cctx(w.ctx), C.int(id)), C.whisper_token_transcribe(cctx(w.ctx)))
	}
	prompt = append(prompt, C.int(w.ctx.Whisper_token_not()))
	spellings := hotwordTokens(w.ctx, []string{name})
	buf := make([]whisper.Token, 224)
	var out []NameScore
	for _, before := range befores {
		before = strings.TrimSpace(before)
		p := prompt
		if before != "" {
			n, err := w.ctx.Whisper_tokenize(" "+before, buf)
			if err != nil {
				return nil, fmt.Errorf("ask about %q: tokenize %q: %w", name, before, err)
			}
			for _, tok := range buf[:n] {
				p = append(p, C.int(tok))
			}
		}
		var seqs, lens []C.int
		var which []hotSeq
		for _, s := range spellings {
			if s.startOnly && before != "" {
				continue // glued to the word before
			}
			for _, tok := range s.tokens {
				seqs = append(seqs, C.int(tok))
			}
			lens = append(lens, C.int(len(s.tokens)))
			which = append(which, s)
		}
		if len(lens) == 0 {
			continue
		}
		lpSeq := make([]C.float, len(lens))
		lpGreedy := make([]C.float, len(lens))
		if C.agora_ask(cctx(w.ctx), &p[0], C.int(len(p)), &seqs[0], &lens[0], C.int(len(lens)),
			C.int(t.opts.Threads), &lpSeq[0], &lpGreedy[0]) != 0 {
			return nil, fmt.Errorf("ask about %q after %q: whisper_decode failed", name, before)
		}
		best := NameScore{Before: before, Name: math.Inf(-1)}
		for i, s := range which {
			sc := NameScore{Before: before, Spelling: w.ctx.Whisper_token_to_str(s.tokens[0]), Name: float64(lpSeq[i]), Best: float64(lpGreedy[i]), Tokens: len(s.tokens)}
			for _, tok := range s.tokens[1:] {
				sc.Spelling += w.ctx.Whisper_token_to_str(tok)
			}
			if best.Tokens == 0 || sc.Margin() > best.Margin() {
				best = sc
			}
		}
		out = append(out, best)
	}
	return out, nil
}

func cctx(ctx *whisper.Context) *C.struct_whisper_context {
	return (*C.struct_whisper_context)(unsafe.Pointer(ctx))
}
