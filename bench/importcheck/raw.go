package main

/*
#cgo LDFLAGS: -lwhisper
#include <whisper.h>
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	whisper "github.com/ggerganov/whisper.cpp/bindings/go"
)

// rawGreedy decodes the log-mel features in melFile (float32, n_mels x
// 3000, as ct2tokens.py --mel wrote them) with plain argmax over the
// logits, one token at a time from the prompt, with none of whisper.cpp's
// decoding rules: the weights alone decide, so the tokens can be compared
// with CTranslate2's on the very same input.
func rawGreedy(ctx *whisper.Context, melFile string, prompt []whisper.Token, maxTokens int) ([]int, error) {
	b, err := os.ReadFile(melFile)
	if err != nil {
		return nil, err
	}
	const frames = 3000
	nMels := len(b) / 4 / frames
	// whisper.cpp keeps the spectrogram as [n_mels][frames], as the file.
	mel := make([]float32, nMels*frames)
	for i := range mel {
		mel[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	// The binding passes len(data) as the frame count: hand it a slice of
	// frames length over the whole buffer.
	if err := ctx.Whisper_set_mel(mel[:frames], nMels); err != nil {
		return nil, fmt.Errorf("set mel: %w", err)
	}
	if err := ctx.Whisper_encode(0, 2); err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	cctx := (*C.struct_whisper_context)(unsafe.Pointer(ctx))
	nVocab := int(C.whisper_n_vocab(cctx))
	eot := int(ctx.Whisper_token_eot())
	var out []int
	toks := append([]whisper.Token(nil), prompt...)
	for past := 0; len(out) < maxTokens; past++ {
		if err := ctx.Whisper_decode(toks[past:past+1], past, 2); err != nil {
			return nil, fmt.Errorf("decode: %w", err)
		}
		if past < len(prompt)-1 {
			continue
		}
		logits := unsafe.Slice((*float32)(unsafe.Pointer(C.whisper_get_logits(cctx))), nVocab)
		best := 0
		for i, l := range logits {
			if l > logits[best] {
				best = i
			}
		}
		if best == eot {
			break
		}
		out = append(out, best)
		toks = append(toks, whisper.Token(best))
	}
	return out, nil
}

// melPath is where ct2tokens.py --mel put a clip's features.
func melPath(dir, clip string) string {
	return filepath.Join(dir, strings.TrimSuffix(filepath.Base(clip), filepath.Ext(clip))+".mel")
}
