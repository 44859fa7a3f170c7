package transcribe

/*
#cgo LDFLAGS: -lwhisper -lggml -lggml-base -lm
#include <math.h>
#include <stdlib.h>
#include <whisper.h>
#include <ggml.h>

extern void agoraGoLog(int level, char *text);

static void agora_log_cb(enum ggml_log_level level, const char *text, void *ud) {
	(void)ud;
	agoraGoLog((int)level, (char *)text);
}

// Routes whisper.cpp's and ggml's own logging to Go instead of stderr.
static void agora_install_log(void) {
	whisper_log_set(agora_log_cb, NULL);
	ggml_log_set(agora_log_cb, NULL);
}

static bool agora_abort_cb(void *data) {
	return __atomic_load_n((int *)data, __ATOMIC_RELAXED) != 0;
}

struct agora_tail {
	int passes;     // encoder passes run
	int skipped;    // 1 if a pass over the trailing quiet was refused
	int quiet_from; // first sample of the input's trailing quiet
};

// Called before each encoder pass. After the first, whisper seeks to its
// last timestamp and would pay a whole 30 s encoder pass for what is left;
// when that is only the trailing quiet, stop: there is nothing to hear.
static bool agora_encoder_begin(struct whisper_context *ctx, struct whisper_state *state, void *ud) {
	(void)ctx;
	struct agora_tail *t = ud;
	int n = whisper_full_n_segments_from_state(state);
	if (t->passes > 0 && n > 0 &&
			whisper_full_get_segment_t1_from_state(state, n - 1) * 160 >= t->quiet_from) {
		t->skipped = 1;
		return false;
	}
	t->passes++;
	return true;
}

// A hotword bias (what faster-whisper calls hotwords): a spelling of a
// hotword is a token sequence; its first token gets bias added to its logit
// at every step, and once a proper prefix of a sequence has been emitted,
// its next token gets cont. Greedy decoding then writes the hotword where
// the audio makes it at most bias (in logits) less likely than whisper's own
// best guess: the bias is a threshold on the name's log-odds against that
// guess, at every position of the utterance.
#define AGORA_BIAS_SEQS 8
#define AGORA_BIAS_LEN 6
struct agora_bias {
	int nseq;
	int eot;                         // first special token id: text tokens are below it
	int start[AGORA_BIAS_SEQS];      // 1: only as the segment's first text token (no leading space)
	int len[AGORA_BIAS_SEQS];
	int seq[AGORA_BIAS_SEQS][AGORA_BIAS_LEN];
	float bias;
	float cont;
};

static void agora_bias_cb(struct whisper_context *ctx, struct whisper_state *state,
		const whisper_token_data *tokens, int n_tokens, float *logits, void *ud) {
	(void)ctx;
	(void)state;
	const struct agora_bias *b = ud;
	int text = 0; // text tokens emitted so far in this segment
	for (int i = 0; i < n_tokens; i++) {
		text += tokens[i].id < b->eot;
	}
	for (int s = 0; s < b->nseq; s++) {
		const int *q = b->seq[s];
		int k = 0; // longest proper prefix of q the emitted tokens end with
		for (int j = b->len[s] - 1; j >= 1 && k == 0; j--) {
			if (j > n_tokens) {
				continue;
			}
			int ok = 1;
			for (int i = 0; i < j && ok; i++) {
				ok = tokens[n_tokens - j + i].id == q[i];
			}
			if (ok) {
				k = j;
			}
		}
		if (k > 0) {
			logits[q[k]] += b->cont;
		} else if (!b->start[s] || text == 0) {
			logits[q[0]] += b->bias;
		}
	}
}

// Runs whisper_full with the binding's Go callbacks removed: the binding keeps
// them in unsynchronised global maps, which two contexts running at once
// would race on. Cancellation goes through abort_callback and a flag instead.
static int agora_full(struct whisper_context *ctx, struct whisper_full_params *p,
		const float *samples, int n, int quiet_from, int *abort_flag, struct agora_bias *bias, int *passes, int *skipped) {
	struct agora_tail tail = { 0, 0, quiet_from };
	struct whisper_full_params params = *p;
	params.new_segment_callback = NULL;
	params.new_segment_callback_user_data = NULL;
	params.progress_callback = NULL;
	params.progress_callback_user_data = NULL;
	params.encoder_begin_callback = agora_encoder_begin;
	params.encoder_begin_callback_user_data = &tail;
	params.abort_callback = agora_abort_cb;
	params.abort_callback_user_data = abort_flag;
	if (bias != NULL && bias->nseq > 0) {
		params.logits_filter_callback = agora_bias_cb;
		params.logits_filter_callback_user_data = bias;
	}
	int rc = whisper_full(ctx, params, samples, n);
	*passes = tail.passes;
	*skipped = tail.skipped;
	return rc;
}

// Detects which of the languages ids[0..nids) samples are in: whisper's own
// language detection (mel, one encoder pass, one decoder step) with the
// choice restricted to the wearer's languages, so a short English command
// cannot come back as Japanese. out[0..nids) gets whisper's probabilities
// renormalised over ids. Returns the index into ids of the likeliest, or -1.
static int agora_detect(struct whisper_context *ctx, const float *samples, int n,
		int threads, const int *ids, int nids, float *out) {
	if (nids <= 0 || whisper_pcm_to_mel(ctx, samples, n, threads) != 0) {
		return -1;
	}
	int nlang = whisper_lang_max_id() + 1;
	float *probs = malloc(sizeof(float) * nlang);
	if (probs == NULL) {
		return -1;
	}
	int best = -1;
	if (whisper_lang_auto_detect(ctx, 0, threads, probs) >= 0) {
		float sum = 0;
		best = 0;
		for (int i = 0; i < nids; i++) {
			sum += probs[ids[i]];
			if (probs[ids[i]] > probs[ids[best]]) {
				best = i;
			}
		}
		for (int i = 0; i < nids; i++) {
			out[i] = sum > 0 ? probs[ids[i]] / sum : 1.0f / nids;
		}
	}
	free(probs);
	return best;
}

// agora_detect_encoded is agora_detect without the mel and the encoder
// pass: it asks the decoder for the language token (one step, the SOT
// token alone, as whisper_lang_auto_detect does) over the encoder output the
// last whisper_full left in ctx's state, so an utterance whisper has just
// decoded is detected without a second encoder pass (issue 24). The
// softmax over ids alone equals whisper's softmax over all languages
// renormalised to ids. Returns the index into ids, or -1.
static int agora_detect_encoded(struct whisper_context *ctx, int threads,
		const int *ids, int nids, float *out) {
	whisper_token sot = whisper_token_sot(ctx);
	if (nids <= 0 || whisper_decode(ctx, &sot, 1, 0, threads) != 0) {
		return -1;
	}
	const float *logits = whisper_get_logits(ctx);
	int best = 0;
	for (int i = 1; i < nids; i++) {
		if (logits[whisper_token_lang(ctx, ids[i])] > logits[whisper_token_lang(ctx, ids[best])]) {
			best = i;
		}
	}
	float top = logits[whisper_token_lang(ctx, ids[best])];
	double sum = 0;
	for (int i = 0; i < nids; i++) {
		sum += exp(logits[whisper_token_lang(ctx, ids[i])] - top);
	}
	for (int i = 0; i < nids; i++) {
		out[i] = (float)(exp(logits[whisper_token_lang(ctx, ids[i])] - top) / sum);
	}
	return best;
}

static void agora_set_abort(int *flag, int v) {
	__atomic_store_n(flag, v, __ATOMIC_RELAXED);
}

// Points p's initial prompt at text (owned by the caller; NULL: none).
static void agora_set_prompt(struct whisper_full_params *p, const char *text) {
	p->initial_prompt = text;
}

static void agora_free_prompt(struct whisper_full_params *p) {
	free((void *)p->initial_prompt);
	p->initial_prompt = NULL;
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/ggerganov/whisper.cpp/bindings/go"
)

func installLogHook() { C.agora_install_log() }

// abortFlag is C memory so whisper's threads can read it while Go writes it.
type abortFlag struct{ p *C.int }

func newAbortFlag() abortFlag {
	p := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	*p = 0
	return abortFlag{p: p}
}

func (f abortFlag) set(v bool) {
	n := C.int(0)
	if v {
		n = 1
	}
	C.agora_set_abort(f.p, n)
}

func (f abortFlag) free() { C.free(unsafe.Pointer(f.p)) }

var errWhisperFull = errors.New("whisper_full failed")

// fullStats is what one whisper_full call did.
type fullStats struct {
	passes  int  // encoder passes run
	skipped bool // a pass over the trailing quiet was refused
}

// runFull runs whisper_full on ctx with params; samples must not be empty.
// Audio from quietFrom on is the input's trailing quiet: whisper gets no
// encoder pass that would start inside it.
func runFull(ctx *whisper.Context, params *whisper.Params, samples []float32, quietFrom int, abort abortFlag, b hotBias) (fullStats, error) {
	var passes, skipped C.int
	rc := C.agora_full(
		(*C.struct_whisper_context)(unsafe.Pointer(ctx)),
		(*C.struct_whisper_full_params)(unsafe.Pointer(params)),
		(*C.float)(unsafe.Pointer(&samples[0])), C.int(len(samples)), C.int(quietFrom), abort.p, b.p, &passes, &skipped)
	st := fullStats{passes: int(passes), skipped: skipped != 0}
	if rc != 0 {
		return st, errWhisperFull
	}
	return st, nil
}

// detectLanguage returns whisper's probability of each of langIDs for
// samples, renormalised over them.
func detectLanguage(ctx *whisper.Context, samples []float32, threads int, langIDs []int) ([]float64, error) {
	ids := cInts(langIDs)
	out := make([]C.float, len(ids))
	i := C.agora_detect((*C.struct_whisper_context)(unsafe.Pointer(ctx)),
		(*C.float)(unsafe.Pointer(&samples[0])), C.int(len(samples)), C.int(threads),
		&ids[0], C.int(len(ids)), &out[0])
	if i < 0 {
		return nil, errors.New("whisper language detection failed")
	}
	return goFloats(out), nil
}

// detectEncoded is detectLanguage over the encoder output the last
// whisper_full on ctx left in its state: one decoder step, no encoder pass.
func detectEncoded(ctx *whisper.Context, threads int, langIDs []int) ([]float64, error) {
	ids := cInts(langIDs)
	out := make([]C.float, len(ids))
	i := C.agora_detect_encoded(cctx(ctx), C.int(threads),
		&ids[0], C.int(len(ids)), &out[0])
	if i < 0 {
		return nil, errors.New("whisper language detection (decoder step) failed")
	}
	return goFloats(out), nil
}

func goFloats(in []C.float) []float64 {
	out := make([]float64, len(in))
	for i, v := range in {
		out[i] = float64(v)
	}
	return out
}

// cInts is langIDs as C ints, for the detection helpers.
func cInts(langIDs []int) []C.int {
	ids := make([]C.int, len(langIDs))
	for i, id := range langIDs {
		ids[i] = C.int(id)
	}
	return ids
}

// freePrompt releases the C string the binding's SetInitialPrompt allocated.
func freePrompt(params *whisper.Params) {
	C.agora_free_prompt((*C.struct_whisper_full_params)(unsafe.Pointer(params)))
}

// cPrompt is an initial prompt in C memory; the zero value is none.
type cPrompt struct{ p *C.char }

func newCPrompt(text string) cPrompt {
	if text == "" {
		return cPrompt{}
	}
	return cPrompt{p: C.CString(text)}
}

// set makes params (a per-call copy) use the prompt.
func (c cPrompt) set(params *whisper.Params) {
	C.agora_set_prompt((*C.struct_whisper_full_params)(unsafe.Pointer(params)), c.p)
}

func (c cPrompt) free() {
	if c.p != nil {
		C.free(unsafe.Pointer(c.p))
	}
}

// hotBias is a hotword bias in C memory (the logits callback runs on
// whisper's thread); the zero value is no bias.
type hotBias struct{ p *C.struct_agora_bias }

// maxHotSeqs and maxHotLen bound the spellings a bias holds.
const (
	maxHotSeqs = C.AGORA_BIAS_SEQS
	maxHotLen  = C.AGORA_BIAS_LEN
)

// newHotBias holds seqs (each 1..maxHotLen tokens, at most maxHotSeqs of
// them; longer lists are cut) with the given first-token and continuation
// biases. No sequences or a zero bias is no bias.
func newHotBias(seqs []hotSeq, eot whisper.Token, bias, cont float64) hotBias {
	if len(seqs) == 0 || bias == 0 {
		return hotBias{}
	}
	p := (*C.struct_agora_bias)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_agora_bias{}))))
	for _, q := range seqs {
		if int(p.nseq) == maxHotSeqs || len(q.tokens) == 0 || len(q.tokens) > maxHotLen {
			continue
		}
		for i, t := range q.tokens {
			p.seq[p.nseq][i] = C.int(t)
		}
		p.len[p.nseq] = C.int(len(q.tokens))
		if q.startOnly {
			p.start[p.nseq] = 1
		}
		p.nseq++
	}
	p.eot = C.int(eot)
	p.bias, p.cont = C.float(bias), C.float(cont)
	return hotBias{p: p}
}

func (b hotBias) free() {
	if b.p != nil {
		C.free(unsafe.Pointer(b.p))
	}
}
