package tts

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agora/agorad/audio"
)

// espeak runs espeak-ng --stdout, one process per utterance. A process per
// voice is started ahead of time and waits on its standard input, so the
// start-up (about 10-30 ms: loading the voice and dictionaries) is not on
// the reply's path; after it is used the next one is started.
type espeak struct {
	bin    string
	cfg    Config
	mu     sync.Mutex
	warm   map[string]*espeakProc // voice -> process waiting for text
	closed bool
}

type espeakProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *strings.Builder
	done   chan struct{} // closed when the process was waited for
	err    error
}

func newEspeak(cfg Config) (*espeak, error) {
	bin := cfg.Binary
	if bin == "" {
		bin = "espeak-ng"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("tts engine espeak-ng: %w (install the espeak-ng package)", err)
	}
	e := &espeak{bin: path, cfg: cfg, warm: map[string]*espeakProc{}}
	for _, lang := range sortedKeys(cfg.Voices) {
		voice := cfg.Voices[lang]
		if voice == "" || strings.ContainsAny(voice, " \t\n") || strings.HasPrefix(voice, "-") {
			return nil, fmt.Errorf("tts voice for %q: %q is not a voice name", lang, voice)
		}
		// A voice that does not load gives an error and no WAV (the exit
		// status alone is not enough: with -q some failures exit 0).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, path, "--stdout", "-v", voice, "x")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil || len(out) <= 44 || stderr.Len() > 0 {
			return nil, fmt.Errorf("tts voice %q for %q does not load in %s: %v %s", voice, lang, path, err, strings.TrimSpace(stderr.String()))
		}
	}
	// Start one process per voice now, so even the first reply does not
	// wait for espeak-ng to start.
	for _, lang := range sortedKeys(cfg.Voices) {
		if p, err := e.start(cfg.Voices[lang]); err == nil {
			e.warm[cfg.Voices[lang]] = p
		}
	}
	return e, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (e *espeak) Name() string {
	var vs []string
	for _, lang := range sortedKeys(e.cfg.Voices) {
		vs = append(vs, lang+"="+e.cfg.Voices[lang])
	}
	return "espeak-ng (" + strings.Join(vs, ", ") + ")"
}

func (e *espeak) start(voice string) (*espeakProc, error) {
	args := []string{"--stdout", "-b", "1", "-v", voice} // -b 1: input is UTF-8
	if e.cfg.Rate > 0 {
		args = append(args, "-s", strconv.Itoa(e.cfg.Rate))
	}
	cmd := exec.Command(e.bin, args...)
	p := &espeakProc{cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", e.bin, err)
	}
	return p, nil
}

// take returns the warm process for voice (or starts one) and starts its
// successor in the background.
func (e *espeak) take(voice string) (*espeakProc, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("tts engine closed")
	}
	p := e.warm[voice]
	delete(e.warm, voice)
	if p == nil {
		var err error
		if p, err = e.start(voice); err != nil {
			return nil, err
		}
	}
	if next, err := e.start(voice); err == nil {
		e.warm[voice] = next
	}
	return p, nil
}

func (e *espeak) Synthesize(ctx context.Context, text, lang string) (Stream, error) {
	voice, ok := e.cfg.Voices[lang]
	if !ok {
		return nil, fmt.Errorf("tts: no voice configured for language %q", lang)
	}
	p, err := e.take(voice)
	if err != nil {
		return nil, fmt.Errorf("tts: %w", err)
	}
	// Text goes in on stdin (never as an argument) and stdin is closed: the
	// process speaks it and exits. A small text fits the pipe buffer.
	go func() {
		_, _ = io.WriteString(p.stdin, text+"\n")
		_ = p.stdin.Close()
	}()
	s := &espeakStream{p: p, r: bufio.NewReaderSize(p.stdout, 8192), volume: float32(e.cfg.Volume), buf: make([]byte, 4096)}
	stop := context.AfterFunc(ctx, func() { _ = p.cmd.Process.Kill() })
	s.stop = stop
	return s, nil
}

func (e *espeak) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for v, p := range e.warm {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		delete(e.warm, v)
	}
	return nil
}

// espeakStream reads espeak-ng's WAV from stdout (its header says 22050 Hz
// mono 16-bit with an unknown length) and converts it to 16 kHz float32.
type espeakStream struct {
	p      *espeakProc
	r      *bufio.Reader
	conv   *audio.Converter
	volume float32
	buf    []byte
	odd    []byte
	eof    bool
	stop   func() bool
	closed bool
}

func (s *espeakStream) header() error {
	h := make([]byte, 12)
	if _, err := io.ReadFull(s.r, h); err != nil {
		return s.fail("read WAV header", err)
	}
	if string(h[0:4]) != "RIFF" || string(h[8:12]) != "WAVE" {
		return fmt.Errorf("espeak-ng output is not WAV (%q)", h)
	}
	rate, channels := 0, 0
	for {
		ch := make([]byte, 8)
		if _, err := io.ReadFull(s.r, ch); err != nil {
			return s.fail("read WAV chunk", err)
		}
		size := binary.LittleEndian.Uint32(ch[4:])
		switch string(ch[0:4]) {
		case "fmt ":
			if size < 16 || size > 64 {
				return fmt.Errorf("espeak-ng WAV fmt chunk of %d bytes", size)
			}
			f := make([]byte, size)
			if _, err := io.ReadFull(s.r, f); err != nil {
				return s.fail("read WAV format", err)
			}
			if binary.LittleEndian.Uint16(f[0:]) != 1 || binary.LittleEndian.Uint16(f[14:]) != 16 {
				return fmt.Errorf("espeak-ng WAV is not 16-bit PCM")
			}
			channels = int(binary.LittleEndian.Uint16(f[2:]))
			rate = int(binary.LittleEndian.Uint32(f[4:]))
		case "data":
			if rate == 0 {
				return fmt.Errorf("espeak-ng WAV: data before format")
			}
			c, err := audio.NewConverter(rate, channels)
			if err != nil {
				return err
			}
			s.conv = c
			return nil // the data size is a placeholder: read to EOF
		default:
			if _, err := io.CopyN(io.Discard, s.r, int64(size)); err != nil {
				return s.fail("skip WAV chunk", err)
			}
		}
	}
}

// fail explains a short read with espeak-ng's own error output.
func (s *espeakStream) fail(what string, err error) error {
	werr := s.p.cmd.Wait()
	if msg := strings.TrimSpace(s.p.stderr.String()); msg != "" || werr != nil {
		return fmt.Errorf("espeak-ng: %s: %v (%v: %s)", what, err, werr, msg)
	}
	return fmt.Errorf("espeak-ng: %s: %w", what, err)
}

func (s *espeakStream) Read() ([]float32, error) {
	if s.eof {
		return nil, io.EOF
	}
	if s.conv == nil {
		if err := s.header(); err != nil {
			return nil, err
		}
	}
	for {
		n, err := s.r.Read(s.buf)
		data := append(s.odd, s.buf[:n]...)
		frames := len(data) / 2
		s.odd = append(s.odd[:0], data[2*frames:]...)
		if frames > 0 {
			f := make([]float32, frames)
			for i := range f {
				f[i] = float32(int16(binary.LittleEndian.Uint16(data[2*i:]))) / 32768 * s.volume
			}
			if out := s.conv.Write(f); len(out) > 0 {
				return out, nil
			}
		}
		if err == io.EOF {
			s.eof = true
			if werr := s.p.cmd.Wait(); werr != nil {
				return nil, fmt.Errorf("espeak-ng: %v: %s", werr, strings.TrimSpace(s.p.stderr.String()))
			}
			if out := s.conv.Flush(); len(out) > 0 {
				return out, nil
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, s.fail("read audio", err)
		}
	}
}

func (s *espeakStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.stop()
	if !s.eof {
		_ = s.p.cmd.Process.Kill()
		_, _ = io.Copy(io.Discard, s.r)
		_ = s.p.cmd.Wait()
	}
	return nil
}
