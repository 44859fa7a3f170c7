// Package model handles model files, for whisper and the Silero VAD alike:
// finding one by name or path (Resolve, ResolveIn), the catalog of
// official ggml models (Catalog, Lookup), downloading them (Fetch), and
// importing CTranslate2 Whisper models (the faster-whisper format) into
// the ggml files whisper.cpp loads (Import). Checking a file's contents is
// audio/ggml's job (CheckWhisper, CheckSilero), shared with the VAD.
//
// Invariants: a fetched or imported file appears complete or not at all
// (temporary file, fsync, rename); an explicitly configured path is never
// replaced by another file; errors name the model and the file at fault;
// an import is deterministic (the same input and type give the same bytes,
// so a recorded sha256 identifies it); quantized weights (q8_0, q4_0) are
// the bytes ggml's reference quantizer writes for the same values, as
// whisper.cpp's quantize tool does.
//
// Import's files: import.go the CTranslate2 → whisper conversion
// (hyper-parameters, checks, tensor names), ctranslate2.go the reader,
// ggmlwriter.go the ggml file writer, quantize.go the block quantizers.
package model
