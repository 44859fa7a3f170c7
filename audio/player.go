package audio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/gordonklaus/portaudio"
)

// PlayerOptions chooses the speaker.
type PlayerOptions struct {
	// Device is "default" (or ""), a device name (exact, or a unique
	// case-insensitive substring) or an index as listed by Devices.
	Device string
	// Volume scales every sound, 0 (silent) to 1 (as synthesized).
	Volume float64
	// Logger receives playback errors; nil means slog.Default().
	Logger *slog.Logger
}

// playQueue bounds the sounds waiting to play; earcons are short and rare.
const playQueue = 16

// drainTimeout is how long Close lets queued sounds finish.
const drainTimeout = 2 * time.Second

// ErrPlayerClosed is returned by Play after Close.
var ErrPlayerClosed = errors.New("audio player is closed")

// Player plays 16 kHz mono sounds on an output device, one after another, in
// its own goroutine: Play queues and returns.
type Player struct {
	device string
	volume float32
	log    *slog.Logger

	mu     sync.Mutex
	closed bool
	queue  chan sound
	abort  chan struct{}
	done   chan struct{}
}

// sound is one queued item: a finished clip (earcon) or a stream (speech).
type sound struct {
	samples []float32
	stream  *stream
}

// SampleReader delivers 16 kHz mono samples as they are produced; io.EOF
// after the last (tts.Stream satisfies it).
type SampleReader interface {
	Read() ([]float32, error)
}

// stream is a sound produced while it plays.
type stream struct {
	ctx     context.Context
	src     SampleReader
	started func(time.Time)
	done    chan error
}

// streamLead bounds how far a stream's writes may run ahead of the wall
// clock. A sound card's blocking write paces by itself; an unpaced sink
// (ALSA's file plugin) would otherwise take a whole reply at once, and
// an interruption could not cut it short.
const streamLead = 60 * time.Millisecond

// OpenPlayer opens an output device at its default sample rate.
func OpenPlayer(opts PlayerOptions) (*Player, error) {
	if opts.Volume < 0 || opts.Volume > 1 {
		return nil, fmt.Errorf("open player: volume %v out of range 0..1", opts.Volume)
	}
	if err := paAcquire(); err != nil {
		return nil, err
	}
	dev, err := findDevice(opts.Device, false)
	if err != nil {
		paRelease()
		return nil, fmt.Errorf("open player: %w", err)
	}
	channels := min(dev.MaxOutputChannels, 2)
	rate := dev.DefaultSampleRate
	frames := int(rate / 50) // 20 ms writes
	// int16 for the same reason as capture: no conversion in ALSA's plug layer.
	buf := make([]int16, frames*channels)
	params := portaudio.StreamParameters{
		Output:          portaudio.StreamDeviceParameters{Device: dev, Channels: channels, Latency: dev.DefaultHighOutputLatency},
		SampleRate:      rate,
		FramesPerBuffer: frames,
	}
	stream, err := portaudio.OpenStream(params, buf)
	if err != nil {
		paRelease()
		return nil, fmt.Errorf("open playback device %d %q at %.0f Hz, %d channels: %w", dev.Index, dev.Name, rate, channels, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Player{
		device: dev.Name,
		volume: float32(opts.Volume),
		log:    opts.Logger,
		queue:  make(chan sound, playQueue),
		abort:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	go p.run(stream, buf, channels, int(rate+0.5))
	return p, nil
}

// Play queues a 16 kHz mono sound and returns at once. A full queue is an
// error rather than a stall of the caller (earcons are feedback, not data).
func (p *Player) Play(samples []float32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrPlayerClosed
	}
	select {
	case p.queue <- sound{samples: samples}:
		return nil
	default:
		return fmt.Errorf("play on %q: queue of %d sounds is full", p.device, playQueue)
	}
}

// PlayStream queues a sound that src produces while it plays (speech), at
// full scale (the player's volume applies to earcons only: the engine has
// its own). Sounds queued before it play first and sounds queued after it
// wait for it, so nothing plays over it. started is called with the wall
// clock at which its first samples were handed to PortAudio. The returned
// channel receives nil once the last sample was played, ctx.Err() when ctx
// ended it early (the rest is dropped at once: barge-in), or src's error.
func (p *Player) PlayStream(ctx context.Context, src SampleReader, started func(time.Time)) (<-chan error, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPlayerClosed
	}
	st := &stream{ctx: ctx, src: src, started: started, done: make(chan error, 1)}
	select {
	case p.queue <- sound{stream: st}:
		return st.done, nil
	default:
		return nil, fmt.Errorf("play on %q: queue of %d sounds is full", p.device, playQueue)
	}
}

// Close plays what is queued (for up to two seconds), then stops the
// stream and releases the device.
func (p *Player) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return nil
	}
	p.closed = true
	close(p.queue)
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-time.After(drainTimeout):
		close(p.abort)
		<-p.done
	}
	return nil
}

// run owns the stream: it starts it for each sound and stops it after, so an
// idle player leaves the device alone (no underruns between earcons).
func (p *Player) run(stream *portaudio.Stream, buf []int16, channels, rate int) {
	defer close(p.done)
	defer paRelease()
	defer stream.Close()
	w := &writer{p: p, stream: stream, buf: buf, channels: channels, rate: rate}
	for s := range p.queue {
		if s.stream != nil {
			if w.playStream(s.stream) {
				return
			}
			continue
		}
		if err := stream.Start(); err != nil {
			p.log.Warn("earcon not played: start playback stream", "device", p.device, "err", err)
			continue
		}
		w.reset()
		if w.write(s.samples, p.volume, true, false, nil) {
			_ = stream.Abort()
			return
		}
		_ = stream.Stop()
	}
}

// writer converts 16 kHz pipeline samples to the device's rate and format
// and writes them in whole device buffers.
type writer struct {
	p        *Player
	stream   *portaudio.Stream
	buf      []int16
	channels int
	rate     int
	rs       *resampler
	fill     int // frames already in buf
	start    time.Time
	written  int // frames written since start
}

func (w *writer) reset() {
	w.fill, w.written = 0, 0
	w.rs = nil
	if w.rate != SampleRate {
		w.rs = newResampler(SampleRate, w.rate)
	}
}

// write plays s (16 kHz) scaled by gain; last flushes the resampler and
// pads the final buffer. paced (streams) paces the writes to the wall clock
// (streamLead); stop, when not nil, is checked between buffers. It returns true when the player was aborted.
func (w *writer) write(s []float32, gain float32, last, paced bool, stop <-chan struct{}) (aborted bool) {
	out := s
	if w.rs != nil {
		out = w.rs.process(s, false)
		if last {
			out = append(out, w.rs.process(nil, true)...)
		}
	}
	frames := len(w.buf) / w.channels
	flush := func() bool {
		if w.written == 0 {
			w.start = time.Now()
		}
		// Underflow only means the device ran dry before this write.
		_ = w.stream.Write()
		w.written += frames
		w.fill = 0
		select {
		case <-w.p.abort:
			return true
		default:
		}
		if !paced {
			return false // earcons are short: no pacing
		}
		if ahead := time.Duration(w.written)*time.Second/time.Duration(w.rate) - time.Since(w.start); ahead > streamLead {
			t := time.NewTimer(ahead - streamLead)
			defer t.Stop()
			select {
			case <-t.C:
			case <-stop:
			case <-w.p.abort:
				return true
			}
		}
		return false
	}
	for _, v := range out {
		x := int16(max(-32768, min(32767, v*gain*32767)))
		for c := range w.channels {
			w.buf[w.fill*w.channels+c] = x
		}
		w.fill++
		if w.fill == frames {
			if flush() {
				return true
			}
			if stop != nil {
				select {
				case <-stop:
					return false
				default:
				}
			}
		}
	}
	if last && w.fill > 0 {
		clear(w.buf[w.fill*w.channels:])
		return flush()
	}
	return false
}

// playStream plays one stream; true when the player was aborted.
func (w *writer) playStream(st *stream) (aborted bool) {
	p := w.p
	if err := st.ctx.Err(); err != nil {
		st.done <- err
		return false
	}
	// The first chunk is read before the device starts, so the device
	// does not run dry while the engine starts.
	first, err := st.src.Read()
	if err != nil && !errors.Is(err, io.EOF) {
		st.done <- err
		return false
	}
	if err := w.stream.Start(); err != nil {
		st.done <- fmt.Errorf("start playback stream on %q: %w", p.device, err)
		return false
	}
	w.reset()
	stop := st.ctx.Done()
	chunk, eof := first, errors.Is(err, io.EOF)
	notified := false
	for {
		if !notified && len(chunk) > 0 && st.started != nil {
			st.started(time.Now())
			notified = true
		}
		if w.write(chunk, 1, eof, true, stop) {
			_ = w.stream.Abort()
			st.done <- ErrPlayerClosed
			return true
		}
		if st.ctx.Err() != nil {
			// Barge-in: drop what the device still holds.
			_ = w.stream.Abort()
			st.done <- st.ctx.Err()
			return false
		}
		if eof {
			_ = w.stream.Stop() // returns once the buffered audio has played
			st.done <- nil
			return false
		}
		chunk, err = st.src.Read()
		if errors.Is(err, io.EOF) {
			eof = true
		} else if err != nil {
			_ = w.stream.Stop()
			if st.ctx.Err() != nil {
				err = st.ctx.Err()
			}
			st.done <- err
			return false
		}
	}
}
