package audio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"
)

// WAV format codes.
const (
	wavPCM        = 0x0001
	wavFloat      = 0x0003
	wavExtensible = 0xFFFE
)

// ksdataformatSubtype GUID tail shared by PCM and IEEE float subformats.
var wavGUIDTail = []byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// WAVFormat describes a WAV file's sample data.
type WAVFormat struct {
	Format     int // 1 PCM or 3 IEEE float (EXTENSIBLE is resolved to its subformat)
	Channels   int
	SampleRate int
	Bits       int // bits per sample as declared
	// Container is the bytes per sample in the data (block align / channels).
	Container int
	// DataSize is the declared data chunk size in bytes; -1 when the writer
	// left it open (0 or 0xFFFFFFFF: "to end of file").
	DataSize int64
}

// Limits on what a WAV header may declare (MaxWAVRate covers 384 kHz
// studio recordings; below MinWAVRate speech is not intelligible anyway).
const (
	MinWAVRate     = 8000
	MaxWAVRate     = 384000
	MaxWAVChannels = 64
)

// errTruncated marks a file that ends before its header says it should.
var errTruncated = errors.New("truncated")

// parseWAVHeader reads a RIFF/WAVE header up to the start of the data chunk's
// payload. It never panics on garbage: every size is checked before use.
func parseWAVHeader(r io.Reader) (WAVFormat, error) {
	var f WAVFormat
	var hdr [12]byte
	n, err := io.ReadFull(r, hdr[:])
	if n == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF) {
		return f, errors.New("empty file")
	}
	if err != nil {
		return f, fmt.Errorf("read RIFF header: %w (%d of 12 bytes)", errTruncated, n)
	}
	if string(hdr[0:4]) != "RIFF" || string(hdr[8:12]) != "WAVE" {
		return f, fmt.Errorf("not a RIFF/WAVE file (starts with %q)", printable(hdr[:]))
	}
	haveFmt := false
	for {
		var ch [8]byte
		if n, err := io.ReadFull(r, ch[:]); err != nil {
			if n == 0 && err == io.EOF {
				if !haveFmt {
					return f, errors.New("no fmt chunk")
				}
				return f, errors.New("no data chunk")
			}
			return f, fmt.Errorf("read chunk header: %w", errTruncated)
		}
		id := string(ch[0:4])
		size := int64(binary.LittleEndian.Uint32(ch[4:8]))
		switch id {
		case "fmt ":
			if size < 16 {
				return f, fmt.Errorf("fmt chunk is %d bytes, need at least 16", size)
			}
			if size > 1<<16 {
				return f, fmt.Errorf("fmt chunk is %d bytes, implausibly large", size)
			}
			body := make([]byte, size)
			if n, err := io.ReadFull(r, body); err != nil {
				return f, fmt.Errorf("read fmt chunk: %w (%d of %d bytes)", errTruncated, n, size)
			}
			if size%2 == 1 {
				// Pad byte; if it is missing the next chunk header read says so.
				_, _ = io.ReadFull(r, make([]byte, 1))
			}
			if err := parseFmt(&f, body); err != nil {
				return f, err
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return f, errors.New("data chunk comes before the fmt chunk")
			}
			f.DataSize = size
			if size == 0 || size == 0xFFFFFFFF {
				f.DataSize = -1
			}
			return f, nil
		default:
			// Unknown chunk (LIST, fact, cue, bext, ...): skip, with its pad byte.
			skip := size + size%2
			if n, err := io.CopyN(io.Discard, r, skip); err != nil {
				return f, fmt.Errorf("skip %q chunk: %w (%d of %d bytes)", printable(ch[0:4]), errTruncated, n, skip)
			}
		}
	}
}

func parseFmt(f *WAVFormat, b []byte) error {
	le := binary.LittleEndian
	code := int(le.Uint16(b[0:2]))
	f.Channels = int(le.Uint16(b[2:4]))
	f.SampleRate = int(le.Uint32(b[4:8]))
	blockAlign := int(le.Uint16(b[12:14]))
	f.Bits = int(le.Uint16(b[14:16]))
	if code == wavExtensible {
		if len(b) < 40 {
			return fmt.Errorf("WAVE_FORMAT_EXTENSIBLE fmt chunk is %d bytes, need 40", len(b))
		}
		guid := b[24:40]
		if !bytes.Equal(guid[2:], wavGUIDTail) {
			return fmt.Errorf("WAVE_FORMAT_EXTENSIBLE with unknown subformat GUID % x", guid)
		}
		code = int(le.Uint16(guid[0:2]))
	}
	f.Format = code
	// Bounds before any allocation or conversion: a header claiming 1 Hz
	// would make the converter produce 16,000 samples per input frame.
	if f.Channels == 0 {
		return errors.New("fmt chunk declares 0 channels")
	}
	if f.Channels > MaxWAVChannels {
		return fmt.Errorf("fmt chunk field channels: %d, more than %d", f.Channels, MaxWAVChannels)
	}
	if f.SampleRate == 0 {
		return errors.New("fmt chunk declares sample rate 0")
	}
	if f.SampleRate < MinWAVRate || f.SampleRate > MaxWAVRate {
		return fmt.Errorf("fmt chunk field sample_rate: %d Hz is outside %d..%d Hz", f.SampleRate, MinWAVRate, MaxWAVRate)
	}
	if f.Bits == 0 || f.Bits > 64 {
		return fmt.Errorf("fmt chunk field bits_per_sample: %d, want 1..64", f.Bits)
	}
	if blockAlign == 0 || blockAlign%f.Channels != 0 {
		// Some writers get block align wrong; derive it from the bit depth.
		blockAlign = f.Channels * ((f.Bits + 7) / 8)
	}
	f.Container = blockAlign / f.Channels
	if f.Bits > 8*f.Container {
		return fmt.Errorf("fmt chunk field bits_per_sample: %d bits do not fit the %d-byte sample container (block_align %d, %d channels)", f.Bits, f.Container, blockAlign, f.Channels)
	}
	switch code {
	case wavPCM:
		if f.Container < 1 || f.Container > 4 {
			return fmt.Errorf("unsupported PCM sample size %d bits (%d-byte container)", f.Bits, f.Container)
		}
	case wavFloat:
		if f.Container != 4 && f.Container != 8 {
			return fmt.Errorf("unsupported IEEE float sample size %d bits", f.Bits)
		}
	default:
		return fmt.Errorf("unsupported format code 0x%04x (want PCM 1, IEEE float 3 or EXTENSIBLE)", code)
	}
	return nil
}

func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

// decodeSample reads one sample of format f from b (len == f.Container) as
// a float in [-1, 1).
func decodeSample(f *WAVFormat, b []byte) float32 {
	if f.Format == wavFloat {
		if f.Container == 8 {
			return float32(math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	}
	switch f.Container {
	case 1:
		return (float32(b[0]) - 128) / 128
	case 2:
		return float32(int16(binary.LittleEndian.Uint16(b))) / (1 << 15)
	case 3:
		v := int32(uint32(b[0])<<8|uint32(b[1])<<16|uint32(b[2])<<24) >> 8
		return float32(v) / (1 << 23)
	default:
		// Samples are left-justified in their container (24-in-32 too).
		return float32(int32(binary.LittleEndian.Uint32(b))) / (1 << 31)
	}
}

// WAVReader decodes a WAV file incrementally into 16 kHz mono.
type WAVReader struct {
	path   string
	f      *os.File
	r      *bufio.Reader
	format WAVFormat
	conv   *Converter
	read   int64 // data bytes consumed
	done   bool
	raw    []byte
	frames []float32
	pend   []float32 // converted samples not yet returned
}

// OpenWAV opens a WAV file for streaming decoding. Errors name the file.
// Only regular files are accepted: a FIFO or a device could block forever
// (a FIFO with no writer blocks a plain open) and a directory is not audio.
// Live audio comes through a capture device instead.
func OpenWAV(path string) (*WAVReader, error) {
	// O_NONBLOCK: opening a FIFO with no writer returns at once instead of
	// hanging; for a regular file the flag changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open WAV: %w", err)
	}
	if err := checkRegular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	format, err := parseWAVHeader(br)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read WAV %s: %w", path, err)
	}
	conv, err := NewConverter(format.SampleRate, format.Channels)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read WAV %s: %w", path, err)
	}
	return &WAVReader{path: path, f: f, r: br, format: format, conv: conv}, nil
}

// ErrNotRegular is returned (wrapped) for a WAV path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

func checkRegular(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open WAV %s: %w", path, err)
	}
	if m := st.Mode(); !m.IsRegular() {
		what := "a special file"
		switch {
		case m.IsDir():
			what = "a directory"
		case m&os.ModeNamedPipe != 0:
			what = "a named pipe (FIFO)"
		case m&os.ModeSocket != 0:
			what = "a socket"
		case m&os.ModeDevice != 0:
			what = "a device"
		}
		return fmt.Errorf("open WAV %s: it is %s, %w (WAV input must be a file; use a capture device for live audio)", path, what, ErrNotRegular)
	}
	return nil
}

// Format returns the file's format as declared in its header.
func (w *WAVReader) Format() WAVFormat { return w.format }

// Read fills dst with 16 kHz mono samples and returns how many; io.EOF after
// the last one. A data chunk shorter than declared is an error naming the file.
func (w *WAVReader) Read(dst []float32) (int, error) {
	for len(w.pend) == 0 {
		if w.done {
			return 0, io.EOF
		}
		if err := w.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(dst, w.pend)
	w.pend = w.pend[n:]
	return n, nil
}

// fill decodes the next block of the data chunk.
func (w *WAVReader) fill() error {
	frame := int64(w.format.Container * w.format.Channels)
	// About 256 KiB per read whatever the frame size (up to 65535 channels).
	want := max(1, (256<<10)/frame) * frame
	if w.format.DataSize >= 0 {
		want = min(want, (w.format.DataSize-w.read)/frame*frame)
	}
	if cap(w.raw) < int(want) {
		w.raw = make([]byte, want)
	}
	buf := w.raw[:want]
	n, err := io.ReadFull(w.r, buf)
	w.read += int64(n)
	end := false
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		if w.format.DataSize >= 0 && w.read < w.format.DataSize-w.format.DataSize%frame {
			return fmt.Errorf("read WAV %s: truncated data: header declares %d bytes, file has %d", w.path, w.format.DataSize, w.read)
		}
		end = true
	case err != nil:
		return fmt.Errorf("read WAV %s: %w", w.path, err)
	case want == 0 || (w.format.DataSize >= 0 && w.read+frame > w.format.DataSize):
		end = true
	}
	whole := n / int(frame) * int(frame)
	if whole < n && w.format.DataSize < 0 {
		// A streamed writer stopped mid-frame: the partial frame is dropped.
		w.read -= int64(n - whole)
	}
	w.frames = w.frames[:0]
	c := w.format.Container
	for i := 0; i < whole; i += c {
		w.frames = append(w.frames, decodeSample(&w.format, buf[i:i+c]))
	}
	w.pend = w.conv.Write(w.frames)
	if end {
		w.pend = append(w.pend, w.conv.Flush()...)
		w.done = true
	}
	return nil
}

// Close closes the file.
func (w *WAVReader) Close() error { return w.f.Close() }

// ReadFile decodes a whole WAV file (any rate, 1..N channels, PCM 8/16/24/32,
// IEEE float 32/64, WAVE_FORMAT_EXTENSIBLE) into 16 kHz mono float32.
// Errors name the file and what is wrong with it.
func ReadFile(path string) ([]float32, error) {
	w, err := OpenWAV(path)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	var out []float32
	// Preallocate from what is really on disk: a garbage header may declare 4 GiB.
	if st, err := w.f.Stat(); err == nil && w.format.DataSize > 0 {
		bytes := min(w.format.DataSize, st.Size())
		frames := bytes / int64(w.format.Container*w.format.Channels)
		out = make([]float32, 0, frames*SampleRate/int64(w.format.SampleRate)+1)
	}
	buf := make([]float32, 16384)
	for {
		n, err := w.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// wavSource is a Source over a WAVReader.
type wavSource struct {
	r     *WAVReader
	buf   []float32
	start time.Time
	off   int64
}

// OpenWAVSource streams a WAV file as a Source of 16 kHz mono chunks of
// chunk samples (<= 0 means 100 ms), stamped from start, without holding
// the whole file in memory.
func OpenWAVSource(path string, chunk int, start time.Time) (Source, error) {
	r, err := OpenWAV(path)
	if err != nil {
		return nil, err
	}
	if chunk <= 0 {
		chunk = SampleRate / 10
	}
	return &wavSource{r: r, buf: make([]float32, chunk), start: start}, nil
}

func (s *wavSource) Read(ctx context.Context) (Chunk, error) {
	if err := ctx.Err(); err != nil {
		return Chunk{}, err
	}
	n := 0
	for n < len(s.buf) {
		m, err := s.r.Read(s.buf[n:])
		n += m
		if err == io.EOF {
			if n == 0 {
				return Chunk{}, io.EOF
			}
			break
		}
		if err != nil {
			return Chunk{}, err
		}
	}
	c := Chunk{Samples: append([]float32(nil), s.buf[:n]...), Offset: s.off, Time: offsetTime(s.start, s.off)}
	s.off += int64(n)
	return c, nil
}

func (s *wavSource) Close() error { return s.r.Close() }
