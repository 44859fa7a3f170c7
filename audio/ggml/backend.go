package ggml

/*
#cgo LDFLAGS: -lggml -lggml-base -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <ggml-backend.h>

// The file libggml was loaded from: its CPU backend modules sit beside it.
static const char *ggml_lib_path(void) {
	Dl_info info;
	if (dladdr((void *)ggml_backend_load_all_from_path, &info) == 0 || info.dli_fname == NULL) {
		return NULL;
	}
	return info.dli_fname;
}

// The CPU backend's compiled-in features, "NAME=VALUE" joined by spaces,
// written into buf (empty when the backend has no feature list).
static void ggml_cpu_features(char *buf, size_t n) {
	buf[0] = 0;
	ggml_backend_reg_t reg = ggml_backend_reg_by_name("CPU");
	if (reg == NULL) return;
	ggml_backend_get_features_t get = (ggml_backend_get_features_t)
		ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
	if (get == NULL) return;
	size_t used = 0;
	for (struct ggml_backend_feature *f = get(reg); f != NULL && f->name != NULL; f++) {
		int w = snprintf(buf + used, n - used, "%s%s", used ? " " : "", f->name);
		if (w < 0 || (size_t)w >= n - used) break;
		used += (size_t)w;
	}
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"
)

var (
	once     sync.Once
	devices  int
	loadErr  error
	loadedAt string
)

// BackendDirEnv names a directory to load ggml's backend modules from
// instead of the one libggml was loaded from (a test or a relocated install).
const BackendDirEnv = "AGORAD_GGML_BACKEND_DIR"

// LoadBackends loads ggml's CPU backend once per process and reports an
// error when no compute device is available afterwards, instead of letting
// whisper.cpp abort. The modules (one per CPU generation, libggml-cpu-*.so)
// are loaded from the directory of the libggml the process runs with, so
// the build tree and the package's /usr/lib/agorad work alike; ggml picks
// the best module this CPU can run.
func LoadBackends() error {
	once.Do(func() {
		dir := os.Getenv(BackendDirEnv)
		if dir == "" {
			p := C.ggml_lib_path()
			if p == nil {
				loadErr = fmt.Errorf("ggml: cannot tell where libggml was loaded from (dladdr)")
				return
			}
			dir = filepath.Dir(C.GoString(p))
		}
		loadedAt = dir
		cdir := C.CString(dir)
		defer C.free(unsafe.Pointer(cdir))
		C.ggml_backend_load_all_from_path(cdir)
		devices = int(C.ggml_backend_dev_count())
		if devices == 0 {
			loadErr = fmt.Errorf("ggml: no compute backend found in %s (libggml-cpu-*.so missing or none runs on this CPU)", dir)
		}
	})
	return loadErr
}

// BackendDir is the directory LoadBackends loaded the modules from ("" before).
func BackendDir() string { return loadedAt }

// CPUFeatures lists the instruction-set features the loaded CPU module was
// built for ("SSE3 AVX AVX2 ..."): which variant ggml chose for this CPU.
// Empty before LoadBackends or when none was loaded.
func CPUFeatures() string {
	var buf [512]C.char
	C.ggml_cpu_features(&buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}
