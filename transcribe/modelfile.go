package transcribe

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// ggmlMagic is the first little-endian uint32 of a ggml model file ("lmgg").
const ggmlMagic = 0x67676d6c

// maxModelSize bounds what is accepted as a model: the largest whisper
// models are about 3 GB; anything far beyond is not a model.
const maxModelSize = 8 << 30

// whisperHeader holds the hyper-parameters at the top of a whisper ggml file.
type whisperHeader struct {
	NVocab, NAudioCtx, NAudioState, NAudioHead, NAudioLayer   int32
	NTextCtx, NTextState, NTextHead, NTextLayer, NMels, FType int32
}

// checkModelFile looks at path before whisper.cpp does, so that a missing,
// unreadable, foreign or truncated file yields an error naming the file
// instead of whisper's stderr noise or an abort deep inside the loader.
func checkModelFile(path string) (whisperHeader, error) {
	var h whisperHeader
	f, err := os.Open(path)
	if err != nil {
		return h, fmt.Errorf("whisper model %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return h, fmt.Errorf("whisper model %s: %w", path, err)
	}
	if st.IsDir() {
		return h, fmt.Errorf("whisper model %s: is a directory, want a ggml .bin file", path)
	}
	if st.Size() > maxModelSize {
		return h, fmt.Errorf("whisper model %s: %d bytes is larger than any whisper model", path, st.Size())
	}
	var magic uint32
	if err := binary.Read(f, binary.LittleEndian, &magic); err != nil {
		return h, fmt.Errorf("whisper model %s: too short to be a ggml model (%d bytes)", path, st.Size())
	}
	if magic != ggmlMagic {
		return h, fmt.Errorf("whisper model %s: not a ggml model (magic %#08x, want %#08x)", path, magic, ggmlMagic)
	}
	if err := binary.Read(f, binary.LittleEndian, &h); err != nil {
		return h, fmt.Errorf("whisper model %s: truncated header: %w", path, unexpectedEOF(err))
	}
	if h.NVocab <= 0 || h.NVocab > 1<<20 || h.NAudioCtx <= 0 || h.NAudioCtx > 1<<16 ||
		h.NMels <= 0 || h.NMels > 512 || h.NAudioLayer <= 0 || h.NTextLayer <= 0 {
		return h, fmt.Errorf("whisper model %s: implausible header (vocab %d, audio ctx %d, mels %d, layers %d/%d): not a whisper model?",
			path, h.NVocab, h.NAudioCtx, h.NMels, h.NAudioLayer, h.NTextLayer)
	}
	var filt [2]int32 // mel filter bank: n_mel, n_fft, then n_mel*n_fft floats
	if err := binary.Read(f, binary.LittleEndian, &filt); err != nil {
		return h, fmt.Errorf("whisper model %s: truncated mel filters: %w", path, unexpectedEOF(err))
	}
	if filt[0] <= 0 || filt[1] <= 0 || filt[0] > 512 || filt[1] > 4096 {
		return h, fmt.Errorf("whisper model %s: implausible mel filter bank %dx%d", path, filt[0], filt[1])
	}
	if _, err := f.Seek(int64(filt[0])*int64(filt[1])*4, io.SeekCurrent); err != nil {
		return h, fmt.Errorf("whisper model %s: %w", path, err)
	}
	// whisper.cpp reads past the end of a truncated file without noticing
	// (it loads even the first kilobyte of a model as an "empty test
	// model"), so the whole file is walked here: vocabulary, then tensors.
	r := &countingReader{r: bufio.NewReaderSize(f, 1<<16), off: 4 + 11*4 + 2*4 + int64(filt[0])*int64(filt[1])*4}
	if r.off > st.Size() {
		return h, fmt.Errorf("whisper model %s: truncated in the mel filters (%d bytes, need at least %d)", path, st.Size(), r.off)
	}
	var nVocab int32
	if err := binary.Read(r, binary.LittleEndian, &nVocab); err != nil {
		return h, fmt.Errorf("whisper model %s: truncated before the vocabulary: %w", path, unexpectedEOF(err))
	}
	if nVocab <= 0 || nVocab > 1<<20 {
		return h, fmt.Errorf("whisper model %s: implausible vocabulary size %d", path, nVocab)
	}
	for i := int32(0); i < nVocab; i++ {
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return h, fmt.Errorf("whisper model %s: truncated in the vocabulary (token %d of %d): %w", path, i, nVocab, unexpectedEOF(err))
		}
		if n > 1024 {
			return h, fmt.Errorf("whisper model %s: corrupt vocabulary (token %d is %d bytes long)", path, i, n)
		}
		if _, err := r.Discard(int(n)); err != nil {
			return h, fmt.Errorf("whisper model %s: truncated in the vocabulary (token %d of %d): %w", path, i, nVocab, unexpectedEOF(err))
		}
	}
	for tensor := 0; r.off < st.Size(); tensor++ {
		var th [3]int32 // n_dims, name length, ggml type
		if err := binary.Read(r, binary.LittleEndian, &th); err != nil {
			return h, fmt.Errorf("whisper model %s: truncated in tensor %d header: %w", path, tensor, unexpectedEOF(err))
		}
		if th[0] < 1 || th[0] > 4 || th[1] <= 0 || th[1] > 256 {
			return h, fmt.Errorf("whisper model %s: corrupt tensor %d header (dims %d, name length %d)", path, tensor, th[0], th[1])
		}
		elems := int64(1)
		for d := int32(0); d < th[0]; d++ {
			var ne int32
			if err := binary.Read(r, binary.LittleEndian, &ne); err != nil {
				return h, fmt.Errorf("whisper model %s: truncated in tensor %d header: %w", path, tensor, unexpectedEOF(err))
			}
			if ne <= 0 {
				return h, fmt.Errorf("whisper model %s: corrupt tensor %d shape", path, tensor)
			}
			elems *= int64(ne)
		}
		if _, err := r.Discard(int(th[1])); err != nil {
			return h, fmt.Errorf("whisper model %s: truncated in tensor %d name: %w", path, tensor, unexpectedEOF(err))
		}
		size, known := tensorBytes(th[2], elems)
		if !known {
			return h, nil // a type this check does not know: leave the rest to whisper
		}
		if r.off+size > st.Size() {
			return h, fmt.Errorf("whisper model %s: truncated in tensor %d data (file is %d bytes, need %d)", path, tensor, st.Size(), r.off+size)
		}
		if _, err := r.Discard(int(size)); err != nil {
			return h, fmt.Errorf("whisper model %s: reading tensor %d: %w", path, tensor, unexpectedEOF(err))
		}
	}
	return h, nil
}

// tensorBytes is the data size of elems elements of ggml type typ, for the
// types whisper models are published in.
func tensorBytes(typ int32, elems int64) (int64, bool) {
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
