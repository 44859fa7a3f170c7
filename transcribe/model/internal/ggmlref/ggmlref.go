// Package ggmlref calls ggml's own quantizer (libggml-base), so that the
// importer's Go quantizers are tested bit for bit against the library that
// reads their output. Used by tests only.
package ggmlref

/*
#cgo LDFLAGS: -lggml-base
#include <ggml.h>
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// ggml tensor types (ggml.h: enum ggml_type).
const (
	Q4_0 = C.GGML_TYPE_Q4_0
	Q8_0 = C.GGML_TYPE_Q8_0
)

// Quantize quantizes rows of perRow values of x to ggml type typ with
// ggml_quantize_chunk (no importance matrix: the reference quantizer,
// as whisper.cpp's quantize tool uses it).
func Quantize(typ int, x []float32, perRow int) ([]byte, error) {
	if perRow <= 0 || len(x) == 0 || len(x)%perRow != 0 {
		return nil, fmt.Errorf("ggmlref: %d values do not make rows of %d", len(x), perRow)
	}
	rows := len(x) / perRow
	size := int(C.ggml_row_size(C.enum_ggml_type(typ), C.int64_t(perRow))) * rows
	out := make([]byte, size)
	n := C.ggml_quantize_chunk(C.enum_ggml_type(typ), (*C.float)(unsafe.Pointer(&x[0])), unsafe.Pointer(&out[0]),
		0, C.int64_t(rows), C.int64_t(perRow), nil)
	if int(n) != size {
		return nil, fmt.Errorf("ggmlref: ggml wrote %d bytes, want %d", n, size)
	}
	return out, nil
}
