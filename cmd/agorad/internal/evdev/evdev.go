// Package evdev turns a Linux input device key (a headset or handheld
// button) into push-to-talk down/up events. It reads raw input_event records
// (64-bit layout: 16-byte timeval, u16 type, u16 code, s32 value) from
// /dev/input/eventN or any io.Reader.
//
// The device is not grabbed (no EVIOCGRAB): a grab would steal the key from
// every other reader (desktop media keys, other tools), and push-to-talk only
// needs to observe it. Reading needs the "input" group.
package evdev

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// Linux input constants (linux/input-event-codes.h).
const (
	EvSyn      = 0x00
	EvKey      = 0x01
	SynReport  = 0
	SynDropped = 3
	KeyMax     = 0x2ff

	// EventSize is sizeof(struct input_event) on 64-bit Linux.
	EventSize = 24
)

// Key values of EV_KEY events.
const (
	valueUp     = 0
	valueDown   = 1
	valueRepeat = 2
)

// Event is a change of the watched key.
type Event struct {
	Down bool
	Time time.Time // kernel timestamp of the event
}

// RawEvent is one decoded input_event.
type RawEvent struct {
	Time  time.Time
	Type  uint16
	Code  uint16
	Value int32
}

// Decode reads one input_event from b (EventSize bytes, native byte order).
func Decode(b []byte) RawEvent {
	sec := int64(binary.NativeEndian.Uint64(b[0:8]))
	usec := int64(binary.NativeEndian.Uint64(b[8:16]))
	return RawEvent{
		Time:  time.Unix(sec, usec*1000).UTC(),
		Type:  binary.NativeEndian.Uint16(b[16:18]),
		Code:  binary.NativeEndian.Uint16(b[18:20]),
		Value: int32(binary.NativeEndian.Uint32(b[20:24])),
	}
}

// Encode writes e as an input_event (for tests and uinput).
func Encode(e RawEvent) []byte {
	b := make([]byte, EventSize)
	binary.NativeEndian.PutUint64(b[0:8], uint64(e.Time.Unix()))
	binary.NativeEndian.PutUint64(b[8:16], uint64(e.Time.Nanosecond()/1000))
	binary.NativeEndian.PutUint16(b[16:18], e.Type)
	binary.NativeEndian.PutUint16(b[18:20], e.Code)
	binary.NativeEndian.PutUint32(b[20:24], uint32(e.Value))
	return b
}

// Options configure a Watcher.
type Options struct {
	Code   uint16       // key code to watch, e.g. 164 (KEY_PLAYPAUSE)
	Logger *slog.Logger // nil: slog.Default()
}

// Watch opens the event device at path and calls fn for every press and
// release of opts.Code until ctx ends (then it returns nil). Autorepeat is
// ignored and repeated presses without a release are reported once. It
// returns an error naming the device when it cannot be opened or read (for
// example when a headset is unplugged); the caller may retry.
func Watch(ctx context.Context, path string, opts Options, fn func(Event)) error {
	if opts.Code == 0 || opts.Code > KeyMax {
		return fmt.Errorf("evdev device %s: key code %d not in 1..%d", path, opts.Code, KeyMax)
	}
	// O_NONBLOCK: the Go poller then waits for events, so Close (on ctx end)
	// interrupts a pending read; it also keeps a FIFO's open from blocking.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("open evdev device %s: %w (is agorad in the input group?)", path, err)
		}
		return fmt.Errorf("open evdev device %s: %w", path, err)
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer func() {
		if stop() {
			f.Close()
		}
	}()
	err = read(ctx, f, path, opts, fn, func() (bool, error) { return keyState(f, opts.Code) })
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Run is Watch in a loop for hot-pluggable devices (a headset may be
// plugged in after start, or unplugged and back): when the device is missing
// or goes away it logs and retries with a growing delay (up to 30s) until ctx
// ends. A bad key code is returned at once.
func Run(ctx context.Context, path string, opts Options, fn func(Event)) error {
	if opts.Code == 0 || opts.Code > KeyMax {
		return fmt.Errorf("evdev device %s: key code %d not in 1..%d", path, opts.Code, KeyMax)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	const minDelay, maxDelay = 500 * time.Millisecond, 30 * time.Second
	delay := minDelay
	for {
		start := time.Now()
		err := Watch(ctx, path, opts, fn)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(start) > maxDelay {
			delay = minDelay // it worked for a while: retry soon
		}
		logger.Warn("push-to-talk device unavailable; retrying", "device", path, "err", err, "retry_in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(delay*2, maxDelay)
	}
}

// Read decodes events from r until it ends, fails or ctx ends (checked
// between events: a reader that blocks forever must be closed by the caller).
// name identifies r in errors. End of stream is an error: a device does not
// end while it is plugged in.
func Read(ctx context.Context, r io.Reader, name string, opts Options, fn func(Event)) error {
	if opts.Code == 0 || opts.Code > KeyMax {
		return fmt.Errorf("evdev device %s: key code %d not in 1..%d", name, opts.Code, KeyMax)
	}
	return read(ctx, r, name, opts, fn, nil)
}

func read(ctx context.Context, r io.Reader, name string, opts Options, fn func(Event), resync func() (bool, error)) error {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	br := bufio.NewReaderSize(r, 64*EventSize)
	buf := make([]byte, EventSize)
	down, dropping := false, false
	// However reading ends (unplugged, cancelled, garbage), a key seen down
	// is released: a stuck push-to-talk would record forever, a release
	// only ends the utterance (which is then stored).
	defer func() {
		if down {
			fn(Event{Down: false, Time: time.Now().UTC()})
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil
		}
		if _, err := io.ReadFull(br, buf); err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(err, io.EOF):
				return fmt.Errorf("evdev device %s: closed (unplugged?)", name)
			case errors.Is(err, io.ErrUnexpectedEOF):
				return fmt.Errorf("evdev device %s: stream ended inside an event (not an input_event stream?)", name)
			}
			return fmt.Errorf("read evdev device %s: %w", name, err)
		}
		e := Decode(buf)
		if e.Type == EvSyn && e.Code == SynDropped {
			// The kernel's buffer overflowed: events until the next
			// SYN_REPORT are incomplete and must be discarded
			// (Documentation/input/event-codes.rst).
			dropping = true
			logger.Warn("evdev: events dropped by the kernel; resynchronising", "device", name)
			continue
		}
		if dropping {
			if e.Type == EvSyn && e.Code == SynReport {
				dropping = false
				now, err := false, error(nil)
				if resync != nil {
					now, err = resync()
				} else {
					err = errors.New("no key state query on this reader")
				}
				if err != nil {
					// Unknown state: release. A stuck "down" would record
					// forever; a spurious "up" only ends an utterance early.
					now = false
				}
				if now != down {
					down = now
					fn(Event{Down: down, Time: e.Time})
				}
			}
			continue
		}
		if e.Type != EvKey || e.Code != opts.Code {
			continue
		}
		switch e.Value {
		case valueDown:
			if !down {
				down = true
				fn(Event{Down: true, Time: e.Time})
			}
		case valueUp:
			if down {
				down = false
				fn(Event{Down: false, Time: e.Time})
			}
		case valueRepeat:
		}
	}
}

// keyState asks the kernel whether code is pressed now (EVIOCGKEY).
func keyState(f *os.File, code uint16) (bool, error) {
	var bits [KeyMax/8 + 1]byte
	const iocRead = 2
	req := uintptr(iocRead<<30 | len(bits)<<16 | 'E'<<8 | 0x18)
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(unsafe.Pointer(&bits[0])))
	}); err != nil {
		return false, err
	}
	if errno != 0 {
		return false, errno
	}
	return bits[code/8]&(1<<(code%8)) != 0, nil
}
