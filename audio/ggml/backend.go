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
