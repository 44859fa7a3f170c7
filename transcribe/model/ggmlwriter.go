package model

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
)

// whisperWriter writes the ggml whisper file format: the header, then each tensor
// (name, shape, type, data), through a counting writer.

// whisperWriter writes the little-endian ggml records; the first error
// sticks.
type whisperWriter struct {
	w   io.Writer
	typ string
	err error
	buf []byte
}

func (w *whisperWriter) bytes(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *whisperWriter) ints(v ...int32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	w.bytes(b)
}

func (w *whisperWriter) floats(v []float32) {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	w.bytes(b)
}

// tensorType is the ggml type whisper.cpp's loader expects for a tensor:
// vectors, the conv biases and the positional embeddings stay f32; the conv
// kernels are f16 unless the whole file is f32 (ggml's convolution has no
// quantized kernel); every other matrix has the file's weight type, as
// whisper.cpp's quantize tool chooses.
func tensorType(name string, rank int, typ string) int32 {
	switch {
	case rank < 2, strings.HasSuffix(name, "conv1.bias"), strings.HasSuffix(name, "conv2.bias"),
		strings.HasSuffix(name, "positional_embedding"), typ == TypeF32:
		return ggmlF32
	case rank == 3, typ == TypeF16:
		return ggmlF16
	case typ == TypeQ4_0:
		return ggmlQ4_0
	}
	return ggmlQ8_0
}

// tensor writes one tensor record: dims (innermost first, as ggml counts
// them), name, type, data.
func (w *whisperWriter) tensor(name string, shape []int, data []float32) error {
	if name == "encoder.conv1.bias" || name == "encoder.conv2.bias" {
		shape = []int{shape[0], 1} // whisper.cpp keeps these as [n_state, 1]
	}
	ttype := tensorType(name, len(shape), w.typ)
	w.ints(int32(len(shape)), int32(len(name)), ttype)
	for i := len(shape) - 1; i >= 0; i-- {
		w.ints(int32(shape[i]))
	}
	w.bytes([]byte(name))
	switch ttype {
	case ggmlF32:
		w.floats(data)
	case ggmlF16:
		b := w.scratch(2 * len(data))
		for i, x := range data {
			binary.LittleEndian.PutUint16(b[2*i:], floatToHalf(x))
		}
		w.bytes(b)
	case ggmlQ8_0:
		if shape[len(shape)-1]%32 != 0 {
			return fmt.Errorf("rows of %d values do not split into q8_0 blocks of 32", shape[len(shape)-1])
		}
		w.bytes(quantizeQ8_0(data, w.scratch(len(data)/32*34)))
	case ggmlQ4_0:
		if shape[len(shape)-1]%32 != 0 {
			return fmt.Errorf("rows of %d values do not split into q4_0 blocks of 32", shape[len(shape)-1])
		}
		w.bytes(quantizeQ4_0(data, w.scratch(len(data)/32*18)))
	}
	return w.err
}

func (w *whisperWriter) scratch(n int) []byte {
	if cap(w.buf) < n {
		w.buf = make([]byte, n)
	}
	return w.buf[:n]
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
