package ggml

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Magic is the first little-endian uint32 of every ggml model file ("lmgg").
const Magic = 0x67676d6c

// Tensor types (ggml.h: enum ggml_type) that whisper and Silero files use.
const (
	TypeF32  = 0
	TypeF16  = 1
	TypeQ4_0 = 2
	TypeQ8_0 = 8
)

// maxModelSize bounds what is accepted as a model: the largest whisper
// models are about 3 GB; anything far beyond is not a model.
const maxModelSize = 8 << 30

// WhisperHeader holds the hyper-parameters at the top of a whisper ggml
// file, in file order.
type WhisperHeader struct {
	NVocab, NAudioCtx, NAudioState, NAudioHead, NAudioLayer   int32
	NTextCtx, NTextState, NTextHead, NTextLayer, NMels, FType int32
}

// SileroInfo is what CheckSilero learned from a Silero VAD file.
type SileroInfo struct {
	Type        string
	Version     [3]int32
	WindowSize  int
	ContextSize int
	Tensors     int
}

// CheckWhisper looks at a whisper model file before whisper.cpp does, so
// that a missing, unreadable, foreign or truncated file yields an error
// naming the file instead of whisper's stderr noise or an abort deep inside
// the loader. whisper.cpp reads past the end of a truncated file without
// noticing (it loads even the first kilobyte of a model as an "empty test
// model"), so the whole file is walked: header, mel filters, vocabulary,
// tensors.
func CheckWhisper(path string) (WhisperHeader, error) {
	var h WhisperHeader
	fail := func(format string, a ...any) error {
		return fmt.Errorf("whisper model %s: %s", path, fmt.Sprintf(format, a...))
	}
	f, size, err := open(path, "want a ggml .bin file")
	if err != nil {
		return h, fmt.Errorf("whisper model %s: %w", path, err)
	}
	defer f.Close()
	r := &countingReader{r: bufio.NewReaderSize(f, 1<<16)}
	var magic uint32
	if err := binary.Read(r, binary.LittleEndian, &magic); err != nil {
		return h, fail("too short to be a ggml model (%d bytes)", size)
	}
	if magic != Magic {
		return h, fail("not a ggml model (magic %#08x, want %#08x)", magic, Magic)
	}
	if err := binary.Read(r, binary.LittleEndian, &h); err != nil {
		return h, fail("truncated header: %v", unexpectedEOF(err))
	}
	if h.NVocab <= 0 || h.NVocab > 1<<20 || h.NAudioCtx <= 0 || h.NAudioCtx > 1<<16 ||
		h.NMels <= 0 || h.NMels > 512 || h.NAudioLayer <= 0 || h.NTextLayer <= 0 {
		return h, fail("implausible header (vocab %d, audio ctx %d, mels %d, layers %d/%d): not a whisper model?",
			h.NVocab, h.NAudioCtx, h.NMels, h.NAudioLayer, h.NTextLayer)
	}
	var filt [2]int32 // mel filter bank: n_mel, n_fft, then n_mel*n_fft floats
	if err := binary.Read(r, binary.LittleEndian, &filt); err != nil {
		return h, fail("truncated mel filters: %v", unexpectedEOF(err))
	}
	if filt[0] <= 0 || filt[1] <= 0 || filt[0] > 512 || filt[1] > 4096 {
		return h, fail("implausible mel filter bank %dx%d", filt[0], filt[1])
	}
	if need := r.off + int64(filt[0])*int64(filt[1])*4; need > size {
		return h, fail("truncated in the mel filters (%d bytes, need at least %d)", size, need)
	}
	if _, err := r.Discard(int(filt[0]) * int(filt[1]) * 4); err != nil {
		return h, fail("%v", err)
	}
	var nVocab int32
	if err := binary.Read(r, binary.LittleEndian, &nVocab); err != nil {
		return h, fail("truncated before the vocabulary: %v", unexpectedEOF(err))
	}
	if nVocab <= 0 || nVocab > 1<<20 {
		return h, fail("implausible vocabulary size %d", nVocab)
	}
	for i := int32(0); i < nVocab; i++ {
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return h, fail("truncated in the vocabulary (token %d of %d): %v", i, nVocab, unexpectedEOF(err))
		}
		if n > 1024 {
			return h, fail("corrupt vocabulary (token %d is %d bytes long)", i, n)
		}
		if _, err := r.Discard(int(n)); err != nil {
			return h, fail("truncated in the vocabulary (token %d of %d): %v", i, nVocab, unexpectedEOF(err))
		}
	}
	if _, err := walkTensors(r, size, nil); err != nil {
		return h, fail("%v", err)
	}
	return h, nil
}

// CheckSilero walks a Silero VAD ggml file (magic, model type, version,
// hyper-parameters, tensor records) before libwhisper sees it. libwhisper
// treats a header with no tensors as an "empty test model" and then aborts
// the whole process in ggml while building the graph; a truncated tensor
// would load garbage. Both become errors naming the file here.
func CheckSilero(path string) (SileroInfo, error) {
	var info SileroInfo
	if path == "" {
		return info, errors.New("open VAD model: no path given")
	}
	f, size, err := open(path, "not a model file")
	if err != nil {
		return info, fmt.Errorf("open VAD model %s: %w", path, err)
	}
	defer f.Close()
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("open VAD model %s: not a valid Silero VAD ggml model: %s", path, fmt.Sprintf(format, a...))
	}
	r := &countingReader{r: bufio.NewReaderSize(f, 1<<16)}
	var magic uint32
	if err := binary.Read(r, binary.LittleEndian, &magic); err != nil || magic != Magic {
		return info, invalid("bad magic (not a ggml file)")
	}
	var n int32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n <= 0 || n > 64 {
		return info, invalid("no model type string (a whisper model or another ggml file?)")
	}
	typ := make([]byte, n)
	if _, err := io.ReadFull(r, typ); err != nil {
		return info, invalid("truncated model type")
	}
	info.Type = string(typ)
	var hp [6]int32 // version[3], window, context, n_encoder_layers
	if err := binary.Read(r, binary.LittleEndian, hp[:]); err != nil {
		return info, invalid("truncated header")
	}
	copy(info.Version[:], hp[:3])
	info.WindowSize, info.ContextSize = int(hp[3]), int(hp[4])
	layers := hp[5]
	if info.WindowSize <= 0 || info.WindowSize > 1<<16 || info.ContextSize < 0 || info.ContextSize > info.WindowSize || layers <= 0 || layers > 32 {
		return info, invalid("implausible header (window %d, context %d, %d encoder layers)", info.WindowSize, info.ContextSize, layers)
	}
	// Per layer in/out channels and kernel size, then LSTM input, LSTM
	// hidden, final conv in and out.
	if _, err := r.Discard(int(3*layers+4) * 4); err != nil {
		return info, invalid("truncated header")
	}
	info.Tensors, err = walkTensors(r, size, []int32{TypeF32, TypeF16})
	if err != nil {
		return info, invalid("%v", err)
	}
	if info.Tensors == 0 {
		return info, invalid("no tensors (header only)")
	}
	return info, nil
}

// open opens path for checking and returns its size; notFile completes the
// error for a directory.
func open(path, notFile string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if st.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("is a directory, %s", notFile)
	}
	if st.Size() > maxModelSize {
		f.Close()
		return nil, 0, fmt.Errorf("%d bytes is larger than any model", st.Size())
	}
	return f, st.Size(), nil
}

// walkTensors reads tensor records (n_dims, name length, type, dims, name,
// data) from r up to the end of the file and returns how many it read.
// only, when set, lists the tensor types allowed; otherwise the walk stops
// without error at a type whose size it does not know (left to the loader).
func walkTensors(r *countingReader, size int64, only []int32) (int, error) {
	n := 0
	for ; r.off < size; n++ {
		var th [3]int32 // n_dims, name length, ggml type
		if err := binary.Read(r, binary.LittleEndian, &th); err != nil {
			return n, fmt.Errorf("truncated in tensor %d header: %w", n, unexpectedEOF(err))
		}
		if th[0] < 0 || th[0] > 4 || th[1] <= 0 || th[1] > 256 {
			return n, fmt.Errorf("corrupt tensor %d header (dims %d, name length %d)", n, th[0], th[1])
		}
		elems := int64(1)
		for d := int32(0); d < th[0]; d++ {
			var ne int32
			if err := binary.Read(r, binary.LittleEndian, &ne); err != nil {
				return n, fmt.Errorf("truncated in tensor %d header: %w", n, unexpectedEOF(err))
			}
			if ne <= 0 {
				return n, fmt.Errorf("corrupt tensor %d shape (dimension %d)", n, ne)
			}
			elems *= int64(ne)
		}
		name := make([]byte, th[1])
		if _, err := io.ReadFull(r, name); err != nil {
			return n, fmt.Errorf("truncated in tensor %d name: %w", n, unexpectedEOF(err))
		}
		if only != nil && !contains(only, th[2]) {
			return n, fmt.Errorf("tensor %s has type %d; only types %v are supported here", name, th[2], only)
		}
		bytes, known := TensorBytes(th[2], elems)
		if !known {
			return n, nil // a type this check does not know: leave the rest to the loader
		}
		if r.off+bytes > size {
			return n, fmt.Errorf("truncated in tensor %d (%s) data (file is %d bytes, need %d)", n, name, size, r.off+bytes)
		}
		if _, err := r.Discard(int(bytes)); err != nil {
			return n, fmt.Errorf("reading tensor %d: %w", n, unexpectedEOF(err))
		}
	}
	return n, nil
}

func contains(list []int32, v int32) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// TensorBytes is the data size of elems elements of ggml type typ, for the
// types whisper models are published in.
func TensorBytes(typ int32, elems int64) (int64, bool) {
	blocks := map[int32][2]int64{ // type: {bytes per block, elements per block}
		0: {4, 1}, 1: {2, 1}, 2: {18, 32}, 3: {20, 32}, 6: {22, 32}, 7: {24, 32}, 8: {34, 32},
		10: {84, 256}, 11: {110, 256}, 12: {144, 256}, 13: {176, 256}, 14: {210, 256},
	}
	b, ok := blocks[typ]
	if !ok || elems%b[1] != 0 {
		return 0, false
	}
	return elems / b[1] * b[0], true
}

// countingReader tracks the file offset of a buffered reader.
type countingReader struct {
	r   *bufio.Reader
	off int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.off += int64(n)
	return n, err
}

func (c *countingReader) Discard(n int) (int, error) {
	d, err := c.r.Discard(n)
	c.off += int64(d)
	return d, err
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
