package model

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agora/agorad/audio/ggml"
)

// Weight types `agorad model import --type` writes, named as whisper.cpp
// names them.
const (
	TypeF32  = "f32"
	TypeF16  = "f16"
	TypeQ8_0 = "q8_0"
	// TypeQ4_0: ggml's CPU backend repacks q4_0 matrices for a faster
	// GEMM: the encoder pass is about 30 % cheaper than with q8_0. One type
	// for every matrix: whisper.cpp (1.8.5 and 1.9.5) gives every weight the header's
	// type and rejects a file that mixes, say, a q4_0 encoder with a q8_0
	// decoder ("tensor ... has wrong size in model file").
	TypeQ4_0 = "q4_0"
)

// ImportTypes lists the accepted --type values.
var ImportTypes = []string{TypeF16, TypeF32, TypeQ8_0, TypeQ4_0}

// ggml tensor types and whisper file types (ggml.h: ggml_type, ggml_ftype).
const (
	ggmlF32  = ggml.TypeF32
	ggmlF16  = ggml.TypeF16
	ggmlQ8_0 = ggml.TypeQ8_0
	ggmlQ4_0 = ggml.TypeQ4_0

	ftypeQ4_0 = 2
	ftypeQ8_0 = 7
	// Quantized files carry ggml's quantization version in the file type
	// (whisper.cpp's quantize writes GGML_QNT_VERSION*1000 + ftype).
	qntVersionFactor = 1000
	qntVersion       = 2
)

// Imported describes a model Import wrote.
type Imported struct {
	Path     string
	Header   ggml.WhisperHeader
	Type     string
	Tensors  int
	Bytes    int64
	SHA256   string
	Vocab    string // the tokenizer file the vocabulary came from
	Duration time.Duration
}

// Import converts the CTranslate2 Whisper model in srcDir (model.bin,
// config.json, vocabulary.json/.txt or tokenizer.json, as faster-whisper
// uses) into the ggml file out that whisper.cpp loads, with weights of
// type typ (TypeF16 when ""). The layout is whisper.cpp's converters':
// the same hyper-parameter header, mel filter bank, vocabulary (token
// bytes) and tensor names, shapes and types. CTranslate2's fused attention
// projections are split back into query, key and value; the key bias it
// adds as zeros is dropped (whisper has none, and a key bias shifts every
// attention score of a query equally, so softmax ignores it).
//
// out appears complete or not at all (temporary file, fsync, rename). Errors
// name the file at fault: missing, truncated, not a Whisper model.
func Import(srcDir, out, typ string) (Imported, error) {
	start := time.Now()
	if typ == "" {
		typ = TypeF16
	}
	res := Imported{Path: out, Type: typ}
	switch typ {
	case TypeF16, TypeF32, TypeQ8_0, TypeQ4_0:
	default:
		return res, fmt.Errorf("import model: unknown type %q (want one of %s)", typ, strings.Join(ImportTypes, ", "))
	}
	st, err := os.Stat(srcDir)
	if err != nil {
		return res, fmt.Errorf("import model: %w", err)
	}
	if !st.IsDir() {
		return res, fmt.Errorf("import model: %s is a file; give the CTranslate2 model directory (with model.bin, config.json and the vocabulary)", srcDir)
	}
	m, err := openCT2(filepath.Join(srcDir, "model.bin"))
	if err != nil {
		return res, err
	}
	defer m.Close()
	if m.spec != "WhisperSpec" {
		return res, fmt.Errorf("CTranslate2 model %s: a %q model, not Whisper (WhisperSpec)", m.path, m.spec)
	}
	if v, ok := m.scalar("decoder/scale_embeddings"); ok && v != 0 {
		return res, fmt.Errorf("CTranslate2 model %s: scaled decoder embeddings: not an OpenAI Whisper architecture", m.path)
	}
	if err := checkConfig(srcDir); err != nil {
		return res, err
	}
	h, err := whisperHparams(m)
	if err != nil {
		return res, err
	}
	if err := checkPreprocessor(srcDir, int(h.NMels)); err != nil {
		return res, err
	}
	toks, vocabFile, err := readVocabulary(srcDir)
	if err != nil {
		return res, err
	}
	res.Vocab = vocabFile
	// CTranslate2's vocabulary files list every id; tokenizer.json stops
	// after its added tokens (no timestamp tokens), which is enough: only
	// the tokens before <|endoftext|> are written.
	fromTokenizer := filepath.Base(vocabFile) == "tokenizer.json"
	if len(toks) > int(h.NVocab) || (len(toks) < int(h.NVocab) && !fromTokenizer) {
		return res, fmt.Errorf("vocabulary %s: %d tokens, but the model's embeddings in %s have %d: not this model's vocabulary", vocabFile, len(toks), m.path, h.NVocab)
	}
	eot := -1
	for i, t := range toks {
		if t == "<|endoftext|>" {
			eot = i
			break
		}
	}
	if eot < 0 {
		return res, fmt.Errorf("vocabulary %s: no <|endoftext|> token: not a Whisper vocabulary", vocabFile)
	}
	switch typ {
	case TypeF32:
		h.FType = 0
	case TypeF16:
		h.FType = 1
	case TypeQ8_0:
		h.FType = qntVersion*qntVersionFactor + ftypeQ8_0
	case TypeQ4_0:
		h.FType = qntVersion*qntVersionFactor + ftypeQ4_0
	}
	res.Header = h

	if dir := filepath.Dir(out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return res, fmt.Errorf("import model: %w", err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*.part")
	if err != nil {
		return res, fmt.Errorf("import model: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	cw := &countWriter{w: io.MultiWriter(tmp, sum)}
	w := bufio.NewWriterSize(cw, 1<<20)
	wr := &whisperWriter{w: w, typ: typ}
	wr.ints(ggml.Magic)
	wr.ints(h.NVocab, h.NAudioCtx, h.NAudioState, h.NAudioHead, h.NAudioLayer,
		h.NTextCtx, h.NTextState, h.NTextHead, h.NTextLayer, h.NMels, h.FType)
	// whisper.cpp computes the spectrogram with this bank (n_fft 400 at
	// 16 kHz: 201 frequency bins).
	wr.ints(h.NMels, 201)
	wr.floats(MelFilters(16000, 400, int(h.NMels)))
	// Only the ordinary tokens: whisper.cpp names the special ones itself,
	// as the official files (from the tiktoken ranks) have them.
	wr.ints(int32(eot))
	for i, t := range toks[:eot] {
		b, ok := tokenBytes(t)
		if !ok {
			return res, fmt.Errorf("vocabulary %s: token %d %q is not a GPT-2 byte-level token", vocabFile, i, t)
		}
		wr.ints(int32(len(b)))
		wr.bytes(b)
	}
	if err := wr.err; err != nil {
		return res, fmt.Errorf("import model: write %s: %w", tmp.Name(), err)
	}
	n, err := writeTensors(wr, m, h)
	if err != nil {
		return res, err
	}
	res.Tensors = n
	if err := w.Flush(); err != nil {
		return res, fmt.Errorf("import model: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes it 0600; a model is not a secret
		return res, fmt.Errorf("import model: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return res, fmt.Errorf("import model: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return res, fmt.Errorf("import model: write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return res, fmt.Errorf("import model: %w", err)
	}
	done = true
	syncDir(filepath.Dir(out))
	res.Bytes = cw.n
	res.SHA256 = hex.EncodeToString(sum.Sum(nil))
	res.Duration = time.Since(start)
	return res, nil
}

// whisperHparams derives the header from the variables' shapes.
func whisperHparams(m *ct2Model) (ggml.WhisperHeader, error) {
	var h ggml.WhisperHeader
	shape := func(name string, rank int) ([]int, error) {
		v, ok := m.lookup(name)
		if !ok {
			return nil, fmt.Errorf("CTranslate2 model %s: no variable %s: not a Whisper model", m.path, name)
		}
		if len(v.shape) != rank {
			return nil, fmt.Errorf("CTranslate2 model %s: %s has shape %v, want rank %d: not a Whisper model", m.path, name, v.shape, rank)
		}
		return v.shape, nil
	}
	emb, err := shape("decoder/embeddings/weight", 2)
	if err != nil {
		return h, err
	}
	dpe, err := shape("decoder/position_encodings/encodings", 2)
	if err != nil {
		return h, err
	}
	epe, err := shape("encoder/position_encodings/encodings", 2)
	if err != nil {
		return h, err
	}
	conv1, err := shape("encoder/conv1/weight", 3)
	if err != nil {
		return h, err
	}
	count := func(prefix string) int32 {
		n := int32(0)
		for {
			if _, ok := m.lookup(fmt.Sprintf("%s/layer_%d/ffn/linear_0/weight", prefix, n)); !ok {
				return n
			}
			n++
		}
	}
	heads := func(prefix string, state int) int32 {
		if n, ok := m.scalar(prefix + "/num_heads"); ok && n > 0 {
			return int32(n)
		}
		return int32(state / 64) // every Whisper size has 64-wide heads
	}
	h = ggml.WhisperHeader{
		NVocab: int32(emb[0]), NAudioCtx: int32(epe[0]), NAudioState: int32(epe[1]),
		NAudioHead: heads("encoder", epe[1]), NAudioLayer: count("encoder"),
		NTextCtx: int32(dpe[0]), NTextState: int32(dpe[1]),
		NTextHead: heads("decoder", dpe[1]), NTextLayer: count("decoder"),
		NMels: int32(conv1[1]),
	}
	if h.NAudioLayer == 0 || h.NTextLayer == 0 || emb[1] != dpe[1] || conv1[0] != epe[1] || conv1[2] != 3 ||
		h.NAudioState%h.NAudioHead != 0 || h.NTextState%h.NTextHead != 0 {
		return h, fmt.Errorf("CTranslate2 model %s: shapes do not fit Whisper (embeddings %v, positions %v/%v, conv1 %v, %d/%d layers)",
			m.path, emb, epe, dpe, conv1, h.NAudioLayer, h.NTextLayer)
	}
	return h, nil
}

// checkConfig reads config.json when present: CTranslate2 writes it beside
// every Whisper model; a broken one means a broken copy.
func checkConfig(dir string) error {
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("model config %s: %w", p, err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("model config %s: %w", p, err)
	}
	return nil
}

// checkPreprocessor compares the feature extractor's mel count, when a
// preprocessor_config.json is there, with the model's.
func checkPreprocessor(dir string, nMels int) error {
	p := filepath.Join(dir, "preprocessor_config.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("preprocessor config %s: %w", p, err)
	}
	var pc struct {
		FeatureSize  int `json:"feature_size"`
		SamplingRate int `json:"sampling_rate"`
		NFFT         int `json:"n_fft"`
	}
	if err := json.Unmarshal(b, &pc); err != nil {
		return fmt.Errorf("preprocessor config %s: %w", p, err)
	}
	if (pc.FeatureSize != 0 && pc.FeatureSize != nMels) || (pc.SamplingRate != 0 && pc.SamplingRate != 16000) || (pc.NFFT != 0 && pc.NFFT != 400) {
		return fmt.Errorf("preprocessor config %s: %d mels at %d Hz, n_fft %d; the model wants %d mels at 16000 Hz, n_fft 400",
			p, pc.FeatureSize, pc.SamplingRate, pc.NFFT, nMels)
	}
	return nil
}

// writeTensors writes every tensor whisper.cpp's loader expects, named and
// shaped as its converters write them, and returns how many.
func writeTensors(wr *whisperWriter, m *ct2Model, h ggml.WhisperHeader) (int, error) {
	n := 0
	put := func(name, src string, part, parts int) error {
		data, shape, err := m.floats(src)
		if err != nil {
			return err
		}
		if parts > 1 {
			if len(shape) == 0 || shape[0]%parts != 0 {
				return fmt.Errorf("CTranslate2 model %s: %s with shape %v cannot be split in %d", m.path, src, shape, parts)
			}
			rows := shape[0] / parts
			per := len(data) / parts
			data = data[part*per : (part+1)*per]
			shape = append([]int{rows}, shape[1:]...)
		}
		if err := wr.tensor(name, shape, data); err != nil {
			return fmt.Errorf("import model: tensor %s (from %s in %s): %w", name, src, m.path, err)
		}
		n++
		return nil
	}
	type t struct {
		name, src   string
		part, parts int
	}
	linear := func(dst, src string) []t {
		return []t{{dst + ".weight", src + "/weight", 0, 1}, {dst + ".bias", src + "/bias", 0, 1}}
	}
	norm := func(dst, src string) []t {
		return []t{{dst + ".weight", src + "/gamma", 0, 1}, {dst + ".bias", src + "/beta", 0, 1}}
	}
	// split takes part k of a fused projection; the key keeps no bias.
	split := func(dst, src string, k, parts int, bias bool) []t {
		ts := []t{{dst + ".weight", src + "/weight", k, parts}}
		if bias {
			ts = append(ts, t{dst + ".bias", src + "/bias", k, parts})
		}
		return ts
	}
	var plan []t
	plan = append(plan, t{"encoder.positional_embedding", "encoder/position_encodings/encodings", 0, 1})
	plan = append(plan, linear("encoder.conv1", "encoder/conv1")...)
	plan = append(plan, linear("encoder.conv2", "encoder/conv2")...)
	for i := 0; i < int(h.NAudioLayer); i++ {
		d, s := fmt.Sprintf("encoder.blocks.%d.", i), fmt.Sprintf("encoder/layer_%d/", i)
		plan = append(plan, norm(d+"attn_ln", s+"self_attention/layer_norm")...)
		plan = append(plan, split(d+"attn.query", s+"self_attention/linear_0", 0, 3, true)...)
		plan = append(plan, split(d+"attn.key", s+"self_attention/linear_0", 1, 3, false)...)
		plan = append(plan, split(d+"attn.value", s+"self_attention/linear_0", 2, 3, true)...)
		plan = append(plan, linear(d+"attn.out", s+"self_attention/linear_1")...)
		plan = append(plan, norm(d+"mlp_ln", s+"ffn/layer_norm")...)
		plan = append(plan, linear(d+"mlp.0", s+"ffn/linear_0")...)
		plan = append(plan, linear(d+"mlp.2", s+"ffn/linear_1")...)
	}
	plan = append(plan, norm("encoder.ln_post", "encoder/layer_norm")...)
	plan = append(plan, t{"decoder.positional_embedding", "decoder/position_encodings/encodings", 0, 1})
	plan = append(plan, t{"decoder.token_embedding.weight", "decoder/embeddings/weight", 0, 1})
	for i := 0; i < int(h.NTextLayer); i++ {
		d, s := fmt.Sprintf("decoder.blocks.%d.", i), fmt.Sprintf("decoder/layer_%d/", i)
		plan = append(plan, norm(d+"attn_ln", s+"self_attention/layer_norm")...)
		plan = append(plan, split(d+"attn.query", s+"self_attention/linear_0", 0, 3, true)...)
		plan = append(plan, split(d+"attn.key", s+"self_attention/linear_0", 1, 3, false)...)
		plan = append(plan, split(d+"attn.value", s+"self_attention/linear_0", 2, 3, true)...)
		plan = append(plan, linear(d+"attn.out", s+"self_attention/linear_1")...)
		plan = append(plan, norm(d+"cross_attn_ln", s+"attention/layer_norm")...)
		plan = append(plan, linear(d+"cross_attn.query", s+"attention/linear_0")...)
		plan = append(plan, split(d+"cross_attn.key", s+"attention/linear_1", 0, 2, false)...)
		plan = append(plan, split(d+"cross_attn.value", s+"attention/linear_1", 1, 2, true)...)
		plan = append(plan, linear(d+"cross_attn.out", s+"attention/linear_2")...)
		plan = append(plan, norm(d+"mlp_ln", s+"ffn/layer_norm")...)
		plan = append(plan, linear(d+"mlp.0", s+"ffn/linear_0")...)
		plan = append(plan, linear(d+"mlp.2", s+"ffn/linear_1")...)
	}
	plan = append(plan, norm("decoder.ln", "decoder/layer_norm")...)
	for _, p := range plan {
		if err := put(p.name, p.src, p.part, p.parts); err != nil {
			return n, err
		}
	}
	return n, nil
}
