// Package model handles whisper model files: importing CTranslate2 Whisper
// models (the faster-whisper format) into the ggml files whisper.cpp loads.
//
// Invariants: an imported file appears complete or not at all; an error
// names the file at fault; the same input and type give the same bytes
// (so a recorded sha256 identifies an import).
package model
