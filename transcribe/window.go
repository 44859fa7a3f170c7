package transcribe

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"time"
)

// Encoder window in steps (issue 24, lever 2). Whisper's encoder costs in
// proportion to its window (audio_ctx positions of 20 ms; 1500 is the full
// 30 s), and a live utterance is mostly a few seconds. Sizing the window to
// the utterance broke decoding (issue 15: repetition loops, and through
// flash attention's padding the previous utterance's audio leaked in), so
// the window here is one of a few fixed steps, chosen only when the
// utterance fits in it with StepMargin to spare, and a decoding that looks
// broken is done again at the full window.
//
// The steps are 512 and 768 positions (10.24 s and 15.36 s), not rounder
// seconds, because of whisper.cpp 1.8's flash-attention layout: the decoder
// reads the cross-attention cache over the window rounded up to 256
// positions, unmasked, and each layer's block starts at layer x that rounded
// size. At 512 and 768 the rounding adds nothing, so a stepped pass reads
// only what it wrote. A full-window pass (1536 rounded, 1500 written) after
// a stepped one reads 36 rows per layer the stepped pass left; with 512 and
// 768 (1536 = 3x512 = 2x768) those rows are always the stepped window's last
// 36 positions, which lie in its margin: padding after the utterance, never
// speech. At 1000, 1024 or 1280 they would be the middle of the last
// utterance (its speech leaking into the next, as issue 15 saw).

// Window is how wide whisper's encoder window is per utterance.
type Window string

const (
	// WindowFull is whisper's full 30 s window for every utterance.
	WindowFull Window = "full"
	// WindowSteps is the smallest of windowSteps the utterance fits in
	// with StepMargin, else the full window.
	WindowSteps Window = "steps"
)

// ParseWindow checks a configured window ("" means full).
func ParseWindow(s string) (Window, error) {
	switch Window(s) {
	case "", WindowFull:
		return WindowFull, nil
	case WindowSteps:
		return WindowSteps, nil
	}
	return "", fmt.Errorf("unknown encoder window %q (want full or steps)", s)
}

const (
	// fullCtx is whisper's full window in encoder positions (all whisper
	// models: 30 s of 20 ms positions).
	fullCtx = 1500
	// ctxPerSecond: one encoder position is 20 ms of audio.
	ctxPerSecond = 50
	// StepMargin is the room a stepped window keeps after the utterance:
	// whisper's closing timestamp must fall inside the window, and the
	// rows a later full-window pass reads stale (see above) must be
	// padding. 36 positions are 0.72 s.
	StepMargin = 2 * time.Second
	// stepMaxRatio is whisper's own compression-ratio threshold for a
	// decoding that repeats itself (whisper.cpp's entropy check, the
	// reference implementation's 2.4).
	stepMaxRatio = 2.4
	// stepEdge (cs): a segment ending this close to a stepped window's end
	// ran into it.
	stepEdge = 50
)

// windowSteps are the stepped windows, smallest first (see above for why
// these two).
var windowSteps = []int{512, 768}

// stepCtx returns the encoder window (audio_ctx) for an utterance of n
// samples: the smallest step it fits in with margin, or 0 (whisper's full
// window) when it fits in none.
func stepCtx(n int, steps []int, margin time.Duration) int {
	need := time.Duration(n) * time.Second / sampleRate
	for _, s := range steps {
		if need+margin <= time.Duration(s)*time.Second/ctxPerSecond {
			return s
		}
	}
	return 0
}

// steppedBroken says why a decoding at a stepped window of audioCtx
// positions looks broken ("" if it does not): no text (when in doubt, the
// full window decides), whisper needed a second pass (the utterance did not
// end inside the window), a segment ending at the window's edge, or text
// that repeats itself. A segment ending after the audio is not a sign:
// whisper's closing timestamp overshoots short audio at the full window too
// (3.4 s for a 1.8 s command). Nor is a segment whisper closed without a
// timestamp (untimed): its end is whisper.cpp's default, 30 s, not a time
// heard. With a Dutch prompt (transcribe.vocabulary) whisper base writes
// most Dutch utterances so (issue 46: 18 of 20 of the real speaker's), and
// counting that as the edge decoded them all again at the full window, 4x
// the CPU for the same words; the other signs still apply to them.
func steppedBroken(segs []segment, passes, audioCtx int) string {
	if len(segs) == 0 {
		return "no segments"
	}
	if passes > 1 {
		return fmt.Sprintf("%d encoder passes", passes)
	}
	edge := int64(audioCtx)*csPerSecond/ctxPerSecond - stepEdge
	var text []byte
	for _, s := range segs {
		if s.t1 >= edge && !s.untimed {
			return fmt.Sprintf("a segment ends at %d cs, window %d cs", s.t1, edge+stepEdge)
		}
		text = append(text, s.text...)
	}
	if r := compressionRatio(text); r > stepMaxRatio {
		return fmt.Sprintf("compression ratio %.2f", r)
	}
	return ""
}

// compressionRatio is len(text) over its zlib size, whisper's measure of
// repetition.
func compressionRatio(text []byte) float64 {
	if len(text) == 0 {
		return 0
	}
	var b bytes.Buffer
	z := zlib.NewWriter(&b)
	z.Write(text) // a bytes.Buffer does not fail
	z.Close()
	return float64(len(text)) / float64(b.Len())
}
