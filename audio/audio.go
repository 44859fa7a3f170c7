// Package audio turns microphones and WAV files into the pipeline format,
// 16 kHz mono float32 chunks stamped with their stream offset, and plays
// short synthesized earcons. Capture and playback go through PortAudio;
// WAV decoding and sample-rate conversion are pure Go.
package audio

import (
	"context"
	"io"
	"time"
)

// SampleRate is the pipeline's sample rate: every Source delivers 16 kHz mono float32.
const SampleRate = 16000

// Chunk is a run of pipeline samples.
type Chunk struct {
	Samples []float32
	// Offset is the stream offset of Samples[0], in 16 kHz samples since the
	// stream started. Positions are offsets, never wall-clock deltas: a file or
	// the ALSA file microphone is not paced by a clock.
	Offset int64
	// Time is the wall clock at which Samples[0] was captured.
	Time time.Time
}

// Source delivers chunks until the stream ends (io.EOF), ctx ends, or Close.
type Source interface {
	Read(ctx context.Context) (Chunk, error)
	Close() error
}

// offsetTime is the wall clock of stream offset off for a stream started at start.
func offsetTime(start time.Time, off int64) time.Time {
	return start.Add(time.Duration(off) * time.Second / SampleRate)
}

// sliceSource feeds a sample slice in fixed-size chunks.
type sliceSource struct {
	samples []float32
	chunk   int
	start   time.Time
	off     int64
	closed  bool
}

// NewSliceSource returns a Source that delivers samples (16 kHz mono) in
// chunks of chunk samples (the last may be shorter), then io.EOF. Files go
// through the same pipeline as the microphone this way. chunk <= 0 means
// 100 ms.
func NewSliceSource(samples []float32, chunk int, start time.Time) Source {
	if chunk <= 0 {
		chunk = SampleRate / 10
	}
	return &sliceSource{samples: samples, chunk: chunk, start: start}
}

func (s *sliceSource) Read(ctx context.Context) (Chunk, error) {
	if err := ctx.Err(); err != nil {
		return Chunk{}, err
	}
	if s.closed {
		return Chunk{}, io.ErrClosedPipe
	}
	if s.off >= int64(len(s.samples)) {
		return Chunk{}, io.EOF
	}
	end := min(s.off+int64(s.chunk), int64(len(s.samples)))
	c := Chunk{Samples: s.samples[s.off:end:end], Offset: s.off, Time: offsetTime(s.start, s.off)}
	s.off = end
	return c, nil
}

func (s *sliceSource) Close() error {
	s.closed = true
	return nil
}
