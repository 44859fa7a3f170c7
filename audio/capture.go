package audio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gordonklaus/portaudio"
)

// CaptureOptions chooses the microphone.
type CaptureOptions struct {
	// Device is "default" (or ""), a device name (exact, or a unique
	// case-insensitive substring) or an index as listed by Devices.
	Device string
	// Logger receives overflow warnings; nil means slog.Default().
	Logger *slog.Logger
}

// captureBufferSeconds is the blocking-read size.
const captureBufferSeconds = 0.1

// captureQueue bounds how many chunks wait for the reader (~6 s); when it is
// full the capture goroutine blocks and PortAudio reports an overflow.
const captureQueue = 64

type capture struct {
	device string
	chunks chan Chunk
	errc   chan error // capture goroutine's terminal error
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	closed atomic.Bool
}

// OpenCapture opens a microphone at its native default sample rate and
// channel count (at most 2) and returns a Source of 16 kHz mono chunks.
// Chunk.Offset counts 16 kHz samples since capture start; Chunk.Time is the
// capture start plus the offset. A goroutine owned by the Source reads the
// stream until Close or ctx ends.
func OpenCapture(ctx context.Context, opts CaptureOptions) (Source, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if err := paAcquire(); err != nil {
		return nil, err
	}
	dev, err := findDevice(opts.Device, true)
	if err != nil {
		paRelease()
		return nil, fmt.Errorf("open capture: %w", err)
	}
	rate := dev.DefaultSampleRate
	frames := int(rate * captureBufferSeconds)
	// Mono or stereo is enough for speech; a device that only opens with all
	// its channels (some raw mic arrays) gets them all, downmixed.
	tries := []int{min(dev.MaxInputChannels, 2)}
	if dev.MaxInputChannels > 2 {
		tries = append(tries, dev.MaxInputChannels)
	}
	var (
		stream   *portaudio.Stream
		buf      []int16
		channels int
	)
	for _, channels = range tries {
		// int16, not float32: every capture device offers it, and through
		// ALSA's plug layer a float32 stream of an S16 device skipped a
		// period at each ring-buffer wrap (seen with the file-plugin
		// microphone), while int16 passes through unconverted.
		buf = make([]int16, frames*channels)
		params := portaudio.StreamParameters{
			Input:           portaudio.StreamDeviceParameters{Device: dev, Channels: channels, Latency: dev.DefaultHighInputLatency},
			SampleRate:      rate,
			FramesPerBuffer: frames,
		}
		stream, err = portaudio.OpenStream(params, buf)
		if err == nil {
			break
		}
	}
	if err != nil {
		paRelease()
		return nil, fmt.Errorf("open capture device %d %q at %.0f Hz, %d channels: %w", dev.Index, dev.Name, rate, channels, err)
	}
	conv, err := NewConverter(int(rate+0.5), channels)
	if err != nil {
		stream.Close()
		paRelease()
		return nil, fmt.Errorf("open capture device %q: %w", dev.Name, err)
	}
	if err := stream.Start(); err != nil {
		stream.Close()
		paRelease()
		return nil, fmt.Errorf("start capture on device %q: %w", dev.Name, err)
	}
	log.Info("capture started", "device", dev.Name, "index", dev.Index, "rate", rate, "channels", channels)
	ctx, cancel := context.WithCancel(ctx)
	c := &capture{
		device: dev.Name,
		chunks: make(chan Chunk, captureQueue),
		errc:   make(chan error, 1),
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go c.run(ctx, log, stream, buf, conv)
	return c, nil
}

// run owns the stream: only this goroutine reads, stops and closes it
// (PortAudio streams must not be closed while another thread reads).
func (c *capture) run(ctx context.Context, log *slog.Logger, stream *portaudio.Stream, buf []int16, conv *Converter) {
	defer close(c.done)
	defer paRelease()
	defer func() {
		_ = stream.Stop()
		_ = stream.Close()
	}()
	start := time.Now()
	var off int64
	overflows := 0
	frames := make([]float32, len(buf))
	for ctx.Err() == nil {
		if err := stream.Read(); err != nil {
			if !errors.Is(err, portaudio.InputOverflowed) {
				c.errc <- fmt.Errorf("read capture device %q: %w", c.device, err)
				return
			}
			// The buffer is still delivered; samples before it were lost
			// by the driver, so say so.
			overflows++
			log.Warn("capture overflow: audio dropped by the driver", "device", c.device, "count", overflows)
		}
		for i, v := range buf {
			frames[i] = float32(v) / 32768
		}
		out := conv.Write(frames)
		if len(out) == 0 {
			continue
		}
		ch := Chunk{Samples: out, Offset: off, Time: offsetTime(start, off)}
		off += int64(len(out))
		select {
		case c.chunks <- ch:
		case <-ctx.Done():
		}
	}
	// The converter's filter still holds the last few milliseconds.
	if out := conv.Flush(); len(out) > 0 {
		select {
		case c.chunks <- Chunk{Samples: out, Offset: off, Time: offsetTime(start, off)}:
		default:
		}
	}
}

// Read returns the next chunk. After the capture's context ends it returns
// what was already captured, then io.EOF; after Close, io.EOF at once.
//
// A reader whose ctx has ended gets ctx's error even while chunks are
// waiting: a device that delivers faster than it is read (the unpaced ALSA
// file plugin, a backlog after a stall) must not keep a stopping reader
// busy.
func (c *capture) Read(ctx context.Context) (Chunk, error) {
	if c.closed.Load() {
		return Chunk{}, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return Chunk{}, err
	}
	select {
	case ch := <-c.chunks:
		return ch, nil
	default:
	}
	select {
	case ch := <-c.chunks:
		return ch, nil
	case <-c.done:
		// The goroutine sent its chunks, then its error, then closed done.
		select {
		case ch := <-c.chunks:
			return ch, nil
		default:
		}
		select {
		case err := <-c.errc:
			c.errc <- err // keep reporting it
			return Chunk{}, err
		default:
			return Chunk{}, io.EOF
		}
	case <-ctx.Done():
		return Chunk{}, ctx.Err()
	}
}

// Close stops the capture goroutine and the stream, waits for both, and
// discards chunks not yet read.
func (c *capture) Close() error {
	c.closed.Store(true)
	c.once.Do(c.cancel)
	<-c.done
	return nil
}
