// Package ggml holds what whisper.cpp's two model kinds share: the ggml
// runtime they compute on and the ggml model file format. The VAD
// (audio/vad) and the transcriber (transcribe) both import it; it sits
// under audio/ because the VAD is the first of them on the data path, so
// no package imports against the data path.
//
// Runtime: the project builds ggml's CPU backend as run-time loaded
// modules, one per CPU generation (libggml-cpu-<variant>.so beside
// libggml: build/whisper/<arch>/lib, or /usr/lib/agorad in the package;
// scripts/whisper.sh). Nothing is registered until they are loaded; a model
// loaded before that aborts the process with GGML_ASSERT(device).
// LoadBackends loads them once per process from libggml's own directory
// (found with dladdr, so no search path or working directory matters), and
// ggml keeps the module with the best score this CPU can run. Invariant: a
// process that passed LoadBackends computes on a module its CPU supports.
//
// Files: CheckWhisper and CheckSilero walk a whole model file (header,
// then every tensor record) before libwhisper loads it, because libwhisper
// loads a truncated file as an "empty test model" and aborts later. The
// invariant: a file they accept has every byte its header and tensor
// records promise; their errors name the file.
package ggml
