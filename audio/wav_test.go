package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wavSpec describes a WAV file for the test encoder.
type wavSpec struct {
	format     int // 1 PCM, 3 float
	extensible bool
	channels   int
	rate       int
	bits       int // container bits
	validBits  int // EXTENSIBLE only; 0 = bits
	dataSize   int64
	openSize   bool // write data size 0xFFFFFFFF (streamed writer)
	zeroSize   bool // write data size 0
	junkBefore bool // unknown chunks (odd-sized) before fmt and between fmt and data
}

// encodeWAV writes frames (interleaved, -1..1) in spec's format.
func encodeWAV(s wavSpec, frames []float64) []byte {
	var data bytes.Buffer
	le := binary.LittleEndian
	for _, v := range frames {
		switch {
		case s.format == wavFloat && s.bits == 32:
			binary.Write(&data, le, float32(v))
		case s.format == wavFloat:
			binary.Write(&data, le, v)
		case s.bits == 8:
			data.WriteByte(byte(int(math.Round(v*127)) + 128))
		case s.bits == 16:
			binary.Write(&data, le, int16(math.Round(v*32767)))
		case s.bits == 24:
			x := int32(math.Round(v * 8388607))
			data.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16)})
		case s.bits == 32 && s.validBits == 24:
			binary.Write(&data, le, int32(math.Round(v*8388607))<<8)
		default:
			binary.Write(&data, le, int32(math.Round(v*2147483647)))
		}
	}
	var fmtc bytes.Buffer
	code := s.format
	if s.extensible {
		code = wavExtensible
	}
	block := s.channels * s.bits / 8
	binary.Write(&fmtc, le, uint16(code))
	binary.Write(&fmtc, le, uint16(s.channels))
	binary.Write(&fmtc, le, uint32(s.rate))
	binary.Write(&fmtc, le, uint32(s.rate*block))
	binary.Write(&fmtc, le, uint16(block))
	binary.Write(&fmtc, le, uint16(s.bits))
	if s.extensible {
		vb := s.validBits
		if vb == 0 {
			vb = s.bits
		}
		binary.Write(&fmtc, le, uint16(22))
		binary.Write(&fmtc, le, uint16(vb))
		binary.Write(&fmtc, le, uint32(0))
		binary.Write(&fmtc, le, uint16(s.format))
		fmtc.Write(wavGUIDTail)
	}
	var body bytes.Buffer
	body.WriteString("WAVE")
	chunk := func(id string, b []byte, size uint32) {
		body.WriteString(id)
		binary.Write(&body, le, size)
		body.Write(b)
		if len(b)%2 == 1 && id != "data" {
			body.WriteByte(0)
		}
	}
	if s.junkBefore {
		chunk("JUNK", []byte("abc"), 3)
	}
	chunk("fmt ", fmtc.Bytes(), uint32(fmtc.Len()))
	if s.junkBefore {
		chunk("LIST", []byte("INFOISFT\x05\x00\x00\x00test\x00"), 17)
	}
	size := uint32(data.Len())
	switch {
	case s.openSize:
		size = 0xFFFFFFFF
	case s.zeroSize:
		size = 0
	case s.dataSize != 0:
		size = uint32(s.dataSize)
	}
	chunk("data", data.Bytes(), size)
	var out bytes.Buffer
	out.WriteString("RIFF")
	binary.Write(&out, le, uint32(body.Len()))
	out.Write(body.Bytes())
	return out.Bytes()
}

// testSignal is 0.3 s of two tones, one per channel group, so downmixing
// and channel order both matter.
func testSignal(rate, channels int) (interleaved []float64, mono []float32) {
	n := rate * 3 / 10
	for i := range n {
		var sum float64
		for c := range channels {
			f := 440.0 * float64(c+1)
			v := 0.4 * math.Sin(2*math.Pi*f*float64(i)/float64(rate))
			interleaved = append(interleaved, v)
			sum += v
		}
		mono = append(mono, float32(sum/float64(channels)))
	}
	return interleaved, mono
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadFileFormats(t *testing.T) {
	tests := []struct {
		name string
		spec wavSpec
		tol  float64 // max abs error vs the reference
	}{
		{"pcm8 mono", wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 8}, 1.0 / 100},
		{"pcm16 mono", wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}, 1e-4},
		{"pcm16 stereo", wavSpec{format: wavPCM, channels: 2, rate: 16000, bits: 16}, 1e-4},
		{"pcm24 3ch", wavSpec{format: wavPCM, channels: 3, rate: 16000, bits: 24}, 1e-6},
		{"pcm32 mono", wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 32}, 1e-6},
		{"float32 stereo", wavSpec{format: wavFloat, channels: 2, rate: 16000, bits: 32}, 1e-6},
		{"float64 mono", wavSpec{format: wavFloat, channels: 1, rate: 16000, bits: 64}, 1e-6},
		{"extensible pcm16 stereo", wavSpec{format: wavPCM, extensible: true, channels: 2, rate: 16000, bits: 16}, 1e-4},
		{"extensible 24-in-32", wavSpec{format: wavPCM, extensible: true, channels: 1, rate: 16000, bits: 32, validBits: 24}, 1e-6},
		{"extensible float32 6ch", wavSpec{format: wavFloat, extensible: true, channels: 6, rate: 16000, bits: 32}, 1e-6},
		{"unknown chunks", wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16, junkBefore: true}, 1e-4},
		{"data size 0xFFFFFFFF", wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16, openSize: true}, 1e-4},
		{"data size 0", wavSpec{format: wavPCM, channels: 2, rate: 16000, bits: 16, zeroSize: true}, 1e-4},
		{"pcm16 44.1k stereo", wavSpec{format: wavPCM, channels: 2, rate: 44100, bits: 16}, 1e-3},
		{"pcm16 48k mono", wavSpec{format: wavPCM, channels: 1, rate: 48000, bits: 16}, 1e-3},
		{"float32 8k mono", wavSpec{format: wavFloat, channels: 1, rate: 8000, bits: 32}, 1e-3},
		{"pcm24 96k stereo", wavSpec{format: wavPCM, channels: 2, rate: 96000, bits: 24}, 1e-3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frames, mono := testSignal(tc.spec.rate, tc.spec.channels)
			path := writeTemp(t, "x.wav", encodeWAV(tc.spec, frames))
			got, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Resample(mono, tc.spec.rate)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d samples, want %d", len(got), len(want))
			}
			worst := 0.0
			for i := range got {
				worst = max(worst, math.Abs(float64(got[i]-want[i])))
			}
			if worst > tc.tol {
				t.Errorf("max error %.2g vs reference, want <= %.2g", worst, tc.tol)
			}
			// Independent of the converter: the 440 Hz tone is there at the
			// expected amplitude (0.4 / channels after downmix).
			if a := goertzelAmp(middle(got), 440, SampleRate); math.Abs(a-0.4/float64(tc.spec.channels)) > 0.02 {
				t.Errorf("440 Hz amplitude %.3f, want %.3f", a, 0.4/float64(tc.spec.channels))
			}
		})
	}
}

func TestReadFileErrors(t *testing.T) {
	good := encodeWAV(wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16}, make([]float64, 1000))
	zeroCh := bytes.Clone(good)
	binary.LittleEndian.PutUint16(zeroCh[22:], 0)
	zeroRate := bytes.Clone(good)
	binary.LittleEndian.PutUint32(zeroRate[24:], 0)
	adpcm := bytes.Clone(good)
	binary.LittleEndian.PutUint16(adpcm[20:], 2)
	oneHz := bytes.Clone(good)
	binary.LittleEndian.PutUint32(oneHz[24:], 1)
	megaHz := bytes.Clone(good)
	binary.LittleEndian.PutUint32(megaHz[24:], 1_000_000)
	manyCh := bytes.Clone(good)
	binary.LittleEndian.PutUint16(manyCh[22:], 1000)
	bigBits := bytes.Clone(good)
	binary.LittleEndian.PutUint16(bigBits[34:], 40)
	dataFirst := []byte("RIFF\x10\x00\x00\x00WAVEdata\x04\x00\x00\x00\x00\x00\x00\x00")
	noData := good[:36]
	tests := []struct {
		name, file string
		body       []byte // nil: file does not exist
		want       string
	}{
		{"missing", "missing.wav", nil, "no such file"},
		{"empty", "empty.wav", []byte{}, "empty file"},
		{"text", "notes.txt", []byte("hello, this is not audio at all\n"), "not a RIFF/WAVE"},
		{"truncated header", "short.wav", good[:30], "truncated"},
		{"truncated data", "cut.wav", good[:len(good)-500], "truncated data: header declares 2000 bytes, file has 1500"},
		{"zero channels", "zero.wav", zeroCh, "0 channels"},
		{"zero rate", "rate.wav", zeroRate, "sample rate 0"},
		{"1 Hz", "1hz.wav", oneHz, "sample_rate: 1 Hz is outside 8000..384000 Hz"},
		{"1 MHz", "1mhz.wav", megaHz, "sample_rate: 1000000 Hz is outside"},
		{"1000 channels", "ch.wav", manyCh, "channels: 1000, more than 64"},
		{"40 bits in 16", "bits.wav", bigBits, "bits_per_sample: 40 bits do not fit the 2-byte sample container"},
		{"unsupported format", "adpcm.wav", adpcm, "unsupported format code 0x0002"},
		{"data before fmt", "order.wav", dataFirst, "before the fmt chunk"},
		{"no data chunk", "nodata.wav", noData, "no data chunk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if tc.body != nil {
				path = writeTemp(t, tc.file, tc.body)
			}
			_, err := ReadFile(path)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q should name %s and say %q", err, path, tc.want)
			}
		})
	}
}

// Issue 9, finding 5: a FIFO with no writer hung the commands; a directory
// gave "read RIFF header: truncated". Both are refused at once, by name.
func TestOpenWAVNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.wav")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "named pipe (FIFO)"},
		{dir, "a directory"},
		{"/dev/null", "a device"},
	} {
		done := make(chan error, 1)
		go func() { _, err := OpenWAVSource(tc.path, 0, time.Now()); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want %q naming the path", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: OpenWAVSource blocked", tc.path)
		}
	}
}

func FuzzParseWAVHeader(f *testing.F) {
	f.Add(encodeWAV(wavSpec{format: wavPCM, channels: 1, rate: 16000, bits: 16, junkBefore: true}, make([]float64, 10)))
	f.Add(encodeWAV(wavSpec{format: wavFloat, extensible: true, channels: 2, rate: 48000, bits: 32}, make([]float64, 10)))
	f.Add(encodeWAV(wavSpec{format: wavPCM, channels: 1, rate: 8000, bits: 8, openSize: true}, make([]float64, 3)))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00"))
	f.Add([]byte("not a wav"))
	f.Fuzz(func(t *testing.T, b []byte) {
		format, err := parseWAVHeader(bytes.NewReader(b))
		if err != nil {
			return
		}
		if format.Channels <= 0 || format.Channels > MaxWAVChannels || format.SampleRate < MinWAVRate || format.SampleRate > MaxWAVRate ||
			format.Container <= 0 || format.Bits > 8*format.Container {
			t.Fatalf("accepted invalid format %+v", format)
		}
		// Decoding the rest must not panic either.
		path := filepath.Join(t.TempDir(), "f.wav")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = ReadFile(path)
	})
}
