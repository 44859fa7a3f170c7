package audio

import (
	"errors"
	"fmt"
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
	queue  chan []float32
	abort  chan struct{}
	done   chan struct{}
}

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
		queue:  make(chan []float32, playQueue),
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
	case p.queue <- samples:
		return nil
	default:
		return fmt.Errorf("play on %q: queue of %d sounds is full", p.device, playQueue)
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
	frames := len(buf) / channels
	for s := range p.queue {
		out := s
		if rate != SampleRate {
			rs := newResampler(SampleRate, rate)
			out = append(rs.process(s, false), rs.process(nil, true)...)
		}
		if err := stream.Start(); err != nil {
			p.log.Warn("earcon not played: start playback stream", "device", p.device, "err", err)
			continue
		}
		aborted := false
		for i := 0; i < len(out) && !aborted; i += frames {
			for f := range frames {
				var v float32
				if i+f < len(out) {
					v = out[i+f] * p.volume
				}
				x := int16(max(-32768, min(32767, v*32767)))
				for c := range channels {
					buf[f*channels+c] = x
				}
			}
			// Underflow only means the device ran dry before this write.
			_ = stream.Write()
			select {
			case <-p.abort:
				aborted = true
			default:
			}
		}
		if aborted {
			_ = stream.Abort()
			return
		}
		_ = stream.Stop()
	}
}
