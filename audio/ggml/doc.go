// Package ggml holds what whisper.cpp's two model kinds share: the ggml
// runtime they compute on and the ggml model file format. The VAD
// (audio/vad) and the transcriber (transcribe) both import it; it sits
// under audio/ because the VAD is the first of them on the data path, so
// no package imports against the data path.
//
// Runtime: Debian builds ggml with its CPU backends as run-time loaded
// modules (one per instruction set, in /usr/lib/<arch>/ggml/backends0).
// Nothing is registered until ggml_backend_load_all() has run; a model
// loaded before that aborts the process with GGML_ASSERT(device).
// LoadBackends makes that call once per process.
//
// Files: CheckWhisper and CheckSilero walk a whole model file (header,
// then every tensor record) before libwhisper loads it, because libwhisper
// loads a truncated file as an "empty test model" and aborts later. The
// invariant: a file they accept has every byte its header and tensor
// records promise; their errors name the file.
package ggml
