package kws

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// The TensorFlow Lite C API, loaded at run time: the library ships in the
// models directory beside the feature models (make models), and a daemon
// without it still runs, with whisper's text alone deciding the wake word.
typedef void *(*fn_model_create)(const char *);
typedef void (*fn_model_delete)(void *);
typedef void *(*fn_opts_create)(void);
typedef void (*fn_opts_threads)(void *, int32_t);
typedef void (*fn_opts_delete)(void *);
typedef void *(*fn_interp_create)(void *, void *);
typedef void (*fn_interp_delete)(void *);
typedef int (*fn_interp_resize)(void *, int32_t, const int *, int32_t);
typedef int (*fn_interp_status)(void *);
typedef void *(*fn_interp_tensor)(void *, int32_t);
typedef size_t (*fn_tensor_size)(const void *);
typedef int (*fn_tensor_copy_from)(void *, const void *, size_t);
typedef int (*fn_tensor_copy_to)(const void *, void *, size_t);
typedef void *(*fn_xnn_create)(const void *);
typedef void (*fn_xnn_delete)(void *);
typedef void (*fn_opts_add_delegate)(void *, void *);

struct agora_tfl {
	void *lib;
	fn_model_create model_create;
	fn_model_delete model_delete;
	fn_opts_create opts_create;
	fn_opts_threads opts_threads;
	fn_opts_delete opts_delete;
	fn_interp_create interp_create;
	fn_interp_delete interp_delete;
	fn_interp_resize interp_resize;
	fn_interp_status interp_alloc;
	fn_interp_status interp_invoke;
	fn_interp_tensor interp_input;
	fn_interp_tensor interp_output;
	fn_tensor_size tensor_size;
	fn_tensor_copy_from tensor_from;
	fn_tensor_copy_to tensor_to;
	// XNNPACK, optional: the pinned library has it; a build without it
	// runs the built-in kernels.
	fn_xnn_create xnn_create;
	fn_xnn_delete xnn_delete;
	fn_opts_add_delegate opts_add_delegate;
};

static struct agora_tfl agora_tfl_api;

// Returns NULL on success, else the name of what could not be loaded.
static const char *agora_tfl_load(const char *path) {
	if (agora_tfl_api.lib != NULL) {
		return NULL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		return dlerror();
	}
	struct agora_tfl a = { h };
#define SYM(field, name) if ((*(void **)&a.field = dlsym(h, name)) == NULL) { dlclose(h); return name; }
	SYM(model_create, "TfLiteModelCreateFromFile")
	SYM(model_delete, "TfLiteModelDelete")
	SYM(opts_create, "TfLiteInterpreterOptionsCreate")
	SYM(opts_threads, "TfLiteInterpreterOptionsSetNumThreads")
	SYM(opts_delete, "TfLiteInterpreterOptionsDelete")
	SYM(interp_create, "TfLiteInterpreterCreate")
	SYM(interp_delete, "TfLiteInterpreterDelete")
	SYM(interp_resize, "TfLiteInterpreterResizeInputTensor")
	SYM(interp_alloc, "TfLiteInterpreterAllocateTensors")
	SYM(interp_invoke, "TfLiteInterpreterInvoke")
	SYM(interp_input, "TfLiteInterpreterGetInputTensor")
	SYM(interp_output, "TfLiteInterpreterGetOutputTensor")
	SYM(tensor_size, "TfLiteTensorByteSize")
	SYM(tensor_from, "TfLiteTensorCopyFromBuffer")
	SYM(tensor_to, "TfLiteTensorCopyToBuffer")
#undef SYM
	*(void **)&a.xnn_create = dlsym(h, "TfLiteXNNPackDelegateCreate");
	*(void **)&a.xnn_delete = dlsym(h, "TfLiteXNNPackDelegateDelete");
	*(void **)&a.opts_add_delegate = dlsym(h, "TfLiteInterpreterOptionsAddDelegate");
	agora_tfl_api = a;
	return NULL;
}

struct agora_net {
	void *model;
	void *interp;
	void *in;
	void *out;
	void *xnn; // the XNNPACK delegate, NULL for the built-in kernels
};

static int agora_xnn_available(void) {
	struct agora_tfl *a = &agora_tfl_api;
	return a->xnn_create != NULL && a->xnn_delete != NULL && a->opts_add_delegate != NULL;
}

// Resizes the input to dims (none: as the model has it) and allocates the
// tensors; 0 on success, else a step number.
static int agora_net_resize(struct agora_net *n, const int *dims, int ndims) {
	struct agora_tfl *a = &agora_tfl_api;
	if (ndims > 0 && a->interp_resize(n->interp, 0, dims, ndims) != 0) {
		return 3;
	}
	if (a->interp_alloc(n->interp) != 0) {
		return 4;
	}
	n->in = a->interp_input(n->interp, 0);
	n->out = a->interp_output(n->interp, 0);
	return (n->in == NULL || n->out == NULL) ? 5 : 0;
}

// Opens a model with one input resized to dims, on XNNPACK when xnn is
// set (its default options: one thread); 0 on success, else a step number.
static int agora_net_open(struct agora_net *n, const char *path, const int *dims, int ndims, int xnn) {
	struct agora_tfl *a = &agora_tfl_api;
	n->model = a->model_create(path);
	if (n->model == NULL) {
		return 1;
	}
	void *o = a->opts_create();
	a->opts_threads(o, 1);
	if (xnn) {
		n->xnn = a->xnn_create(NULL);
		if (n->xnn == NULL) {
			a->opts_delete(o);
			return 6;
		}
		a->opts_add_delegate(o, n->xnn);
	}
	n->interp = a->interp_create(n->model, o);
	a->opts_delete(o);
	if (n->interp == NULL) {
		return 2;
	}
	return agora_net_resize(n, dims, ndims);
}

static size_t agora_net_in_size(struct agora_net *n) { return agora_tfl_api.tensor_size(n->in); }
static size_t agora_net_out_size(struct agora_net *n) { return agora_tfl_api.tensor_size(n->out); }

// Runs the model on in (in_bytes) and copies its output to out; 0 on success.
static int agora_net_run(struct agora_net *n, const float *in, size_t in_bytes, float *out, size_t out_bytes) {
	struct agora_tfl *a = &agora_tfl_api;
	if (a->tensor_from(n->in, in, in_bytes) != 0) {
		return 1;
	}
	if (a->interp_invoke(n->interp) != 0) {
		return 2;
	}
	return a->tensor_to(n->out, out, out_bytes) != 0 ? 3 : 0;
}

static void agora_net_close(struct agora_net *n) {
	if (n->interp != NULL) {
		agora_tfl_api.interp_delete(n->interp);
	}
	if (n->model != NULL) {
		agora_tfl_api.model_delete(n->model);
	}
	// The delegate goes after the interpreter that uses it.
	if (n->xnn != NULL) {
		agora_tfl_api.xnn_delete(n->xnn);
	}
	n->interp = n->model = n->xnn = NULL;
}
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

var loadMu sync.Mutex

// loadTFLite loads the TensorFlow Lite C library at path once per process.
func loadTFLite(path string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	if e := C.agora_tfl_load(cs); e != nil {
		return fmt.Errorf("load TensorFlow Lite library %s: %s", path, C.GoString(e))
	}
	return nil
}

// net is one TensorFlow Lite model with its interpreter (one thread). Not
// safe for concurrent use.
type net struct {
	c       *C.struct_agora_net // C memory: the interpreter's pointers live there
	in, out int                 // float32 counts
	xnn     bool                // runs on XNNPACK
}

// Kernels name what runs the front end's models.
const (
	KernelsXNNPACK = "XNNPACK"
	KernelsBuiltin = "built-in"
)

// openNet opens the model on XNNPACK where the library has it: the pinned
// library's C interpreter does not apply it by itself, and on one thread it
// runs the embedding model, most of the spotter's work, in 1.5 ms a window
// against the built-in kernels' 4.1 (docs/wake.md, Cost). The built-in
// kernels run it where the library has no XNNPACK, where xnn is false or
// where XNNPACK refuses the model.
func openNet(path string, dims []int, xnn bool) (*net, error) {
	if xnn && C.agora_xnn_available() != 0 {
		if n, err := openNetWith(path, dims, true); err == nil {
			return n, nil
		}
	}
	return openNetWith(path, dims, false)
}

func openNetWith(path string, dims []int, xnn bool) (*net, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	n := &net{c: (*C.struct_agora_net)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_agora_net{})))), xnn: xnn}
	cd := cDims(dims)
	defer C.free(unsafe.Pointer(cd))
	var cx C.int
	if xnn {
		cx = 1
	}
	if rc := C.agora_net_open(n.c, cs, cd, C.int(len(dims)), cx); rc != 0 {
		n.close()
		steps := map[C.int]string{1: "read the model", 2: "create its interpreter", 3: "resize its input", 4: "allocate its tensors", 5: "find its input and output", 6: "create the XNNPACK delegate"}
		return nil, fmt.Errorf("open TensorFlow Lite model %s: could not %s", path, steps[rc])
	}
	n.sizes()
	return n, nil
}

// cDims copies a tensor shape into C memory (nil for none); the caller
// frees it.
func cDims(dims []int) *C.int {
	if len(dims) == 0 {
		return nil
	}
	buf := unsafe.Slice((*C.int)(C.malloc(C.size_t(len(dims))*C.size_t(unsafe.Sizeof(C.int(0))))), len(dims))
	for i, d := range dims {
		buf[i] = C.int(d)
	}
	return &buf[0]
}

// sizes reads the input and output sizes (float32 counts) from the
// interpreter, after it allocated its tensors.
func (n *net) sizes() {
	n.in = int(C.agora_net_in_size(n.c)) / 4
	n.out = int(C.agora_net_out_size(n.c)) / 4
}

// run feeds in (exactly n.in floats) and writes n.out floats to out.
func (n *net) run(in, out []float32) error {
	if len(in) != n.in || len(out) != n.out {
		return fmt.Errorf("tflite: %d in / %d out floats, model wants %d / %d", len(in), len(out), n.in, n.out)
	}
	if rc := C.agora_net_run(n.c, (*C.float)(unsafe.Pointer(&in[0])), C.size_t(4*len(in)),
		(*C.float)(unsafe.Pointer(&out[0])), C.size_t(4*len(out))); rc != 0 {
		return fmt.Errorf("tflite: invoke failed (step %d)", int(rc))
	}
	return nil
}

// resize gives the model's input the shape dims (the embedding model takes
// any number of mel frames: one call then gives every window's embedding).
func (n *net) resize(dims []int) error {
	cd := cDims(dims)
	defer C.free(unsafe.Pointer(cd))
	if rc := C.agora_net_resize(n.c, cd, C.int(len(dims))); rc != 0 {
		return fmt.Errorf("tflite: resize the input to %v failed (step %d)", dims, int(rc))
	}
	n.sizes()
	return nil
}

func (n *net) close() {
	if n.c != nil {
		C.agora_net_close(n.c)
		C.free(unsafe.Pointer(n.c))
		n.c = nil
	}
}
