// Package ggml prepares the ggml runtime that whisper.cpp computes on.
//
// Debian builds ggml with its CPU backends as run-time loaded modules
// (one per instruction set, in /usr/lib/<arch>/ggml/backends0). Nothing is
// registered until ggml_backend_load_all() has run; a model loaded before
// that aborts the process with GGML_ASSERT(device). Both the transcriber and
// the VAD load models, so the call lives here, once per process.
package ggml

/*
#cgo LDFLAGS: -lggml -lggml-base
#include <ggml-backend.h>
*/
import "C"

import (
	"errors"
	"sync"
)

var (
	once    sync.Once
	devices int
)

// LoadBackends loads ggml's backends once per process and reports an error
// when no compute device is available afterwards, instead of letting
// whisper.cpp abort.
func LoadBackends() error {
	once.Do(func() {
		C.ggml_backend_load_all()
		devices = int(C.ggml_backend_dev_count())
	})
	if devices == 0 {
		return errors.New("ggml: no compute backend found (is libggml0 installed with its backends directory?)")
	}
	return nil
}
