// Package vad wraps libwhisper's Silero voice activity detector
// (whisper_vad_*) for streaming use: it turns 16 kHz mono samples into one
// speech probability per window and keeps the model's LSTM state between
// calls, so a stream can be fed in small pieces.
package vad

/*
#cgo LDFLAGS: -lwhisper -lggml-base
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <whisper.h>

// vadQuietLog drops the info lines whisper_vad_detect_speech* prints on
// every call (streaming calls it every 32 ms, which would flood any log) and
// passes everything else to the logger that was installed before it
// (libwhisper's stderr default, or one that routes to the application log).
static ggml_log_callback vadPrevLog;
static void *vadPrevUser;
static int vadDropping;
static void vadQuietLog(enum ggml_log_level level, const char *text, void *user) {
	(void)user;
	if (level != GGML_LOG_LEVEL_CONT) {
		vadDropping = level <= GGML_LOG_LEVEL_INFO && strncmp(text, "whisper_vad_", 12) == 0;
	}
	if (vadDropping) return;
	if (vadPrevLog) vadPrevLog(level, text, vadPrevUser);
	else fputs(text, stderr);
}
static void vadInstallQuietLog(void) {
	ggml_log_callback prev = NULL;
	void *user = NULL;
	ggml_log_get(&prev, &user);
	if (prev == vadQuietLog) return;
	vadPrevLog = prev;
	vadPrevUser = user;
	whisper_log_set(vadQuietLog, NULL);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/agora/agorad/audio/ggml"
)

// windowSize is the number of 16 kHz samples Silero v5/v6 scores at a time.
// libwhisper does not export it, so Open reads it from the model header and
// checks it by probing: two windows must yield exactly two probabilities.
const windowSize = 512

// Options tunes the detector.
type Options struct {
	// Threads for the ggml compute; <= 0 means 1 (the model is tiny and
	// more threads only add synchronisation cost per 32 ms window).
	Threads int
}

// Detector scores speech probability with the Silero model. It is not safe
// for concurrent use by design (one LSTM state per stream); the mutex only
// keeps accidental concurrent calls from corrupting native memory.
type Detector struct {
	mu  sync.Mutex
	ctx *C.struct_whisper_vad_context
}

// quietLog installs the filtering logger once per process, in front of the
// logger already installed. whisper_log_set is process-wide: a logger
// installed later replaces the filter and then receives the per-call lines.
var quietLog sync.Once

// ErrClosed is returned by Probs after Close.
var ErrClosed = errors.New("vad: detector closed")

// Open loads a Silero VAD model in ggml format (e.g. ggml-silero-v6.2.0.bin)
// on the CPU.
func Open(path string, opts Options) (*Detector, error) {
	info, err := ggml.CheckSilero(path)
	if err != nil {
		return nil, err
	}
	if info.WindowSize != windowSize {
		return nil, fmt.Errorf("open VAD model %s: window is %d samples, this wrapper streams %d-sample windows (Silero v5/v6 at 16 kHz)", path, info.WindowSize, windowSize)
	}
	if err := ggml.LoadBackends(); err != nil {
		return nil, fmt.Errorf("open VAD model %s: %w", path, err)
	}
	quietLog.Do(func() { C.vadInstallQuietLog() })
	threads := opts.Threads
	if threads <= 0 {
		threads = 1
	}
	params := C.whisper_vad_default_context_params()
	params.n_threads = C.int(threads)
	params.use_gpu = C.bool(false)

	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	ctx := C.whisper_vad_init_from_file_with_params(cpath, params)
	if ctx == nil {
		return nil, fmt.Errorf("open VAD model %s: not a valid Silero VAD ggml model (libwhisper could not load it)", path)
	}
	d := &Detector{ctx: ctx}
	if err := d.checkWindow(); err != nil {
		d.Close()
		return nil, fmt.Errorf("open VAD model %s: %w", path, err)
	}
	return d, nil
}

// checkWindow verifies the model scores windowSize samples per probability.
func (d *Detector) checkWindow() error {
	probe := make([]float32, 2*windowSize)
	p, err := d.probs(probe)
	if err != nil {
		return err
	}
	if len(p) != 2 {
		return fmt.Errorf("model window is not %d samples (%d samples gave %d probabilities)", windowSize, len(probe), len(p))
	}
	C.whisper_vad_reset_state(d.ctx)
	return nil
}

// WindowSize is the number of samples behind each probability (512 at 16 kHz).
func (d *Detector) WindowSize() int { return windowSize }

// Probs returns one speech probability per window of samples, continuing
// from the state the previous call left (streaming). len(samples) must be a
// multiple of WindowSize: a partial window would be zero-padded by
// libwhisper and shift every later window.
func (d *Detector) Probs(samples []float32) ([]float32, error) {
	if len(samples)%windowSize != 0 {
		return nil, fmt.Errorf("vad: %d samples is not a multiple of the %d-sample window", len(samples), windowSize)
	}
	if len(samples) == 0 {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil {
		return nil, ErrClosed
	}
	return d.probs(samples)
}

func (d *Detector) probs(samples []float32) ([]float32, error) {
	// The Go slice is only read during the call; cgo pointer rules allow
	// passing it since it holds no Go pointers.
	ok := C.whisper_vad_detect_speech_no_reset(d.ctx, (*C.float)(unsafe.Pointer(&samples[0])), C.int(len(samples)))
	runtime.KeepAlive(samples)
	if !ok {
		return nil, fmt.Errorf("vad: speech detection failed on %d samples", len(samples))
	}
	n := int(C.whisper_vad_n_probs(d.ctx))
	p := C.whisper_vad_probs(d.ctx)
	if n <= 0 || p == nil {
		return nil, fmt.Errorf("vad: no probabilities for %d samples", len(samples))
	}
	// Copy out: the native buffer is reused by the next call.
	out := make([]float32, n)
	copy(out, unsafe.Slice((*float32)(unsafe.Pointer(p)), n))
	return out, nil
}

// Reset clears the LSTM state, as at the start of a new stream. Call it after
// a long stretch the detector did not see, so stale context does not bias
// the next onset.
func (d *Detector) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx != nil {
		C.whisper_vad_reset_state(d.ctx)
	}
}

// Close frees the model. It is safe to call more than once.
func (d *Detector) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx != nil {
		C.whisper_vad_free(d.ctx)
		d.ctx = nil
	}
	return nil
}
