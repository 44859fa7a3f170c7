package chain

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/agora/agorad/audio"
)

// Mic is a microphone that speaks at real time: ALSA's file plugin reads a
// FIFO that Run feeds with 16 kHz S16_LE stereo (the speech on both
// channels: a mono slave made the plug layer skip periods, see
// testaudio.VirtualMic), 200 ms per write, silence between clips. What the
// daemon plays goes to a second file PCM, the speaker, so that the plugin's
// tee of captured audio never mixes into it.
type Mic struct {
	// FIFO is what the capture PCM reads, SpeakerFile what playback writes
	// (raw 16 kHz S16_LE stereo), Asoundrc the ALSA configuration.
	FIFO, SpeakerFile, Asoundrc string

	queue chan clip
}

// Speaker is the PCM name replies and earcons are played to (sounds.device).
const Speaker = "speaker"

// micChunk is one write: 200 ms. paced-mic.py measured that other sizes
// (100 ms, 300 ms) lost a third of the audio between the FIFO and capture.
const micChunk = audio.SampleRate / 5

// Spoken is when a clip went into the microphone, by the wall clock: the
// reference for every latency the chain reports.
type Spoken struct {
	Name       string
	Start, End time.Time
}

type clip struct {
	name string
	pcm  []byte
	done chan Spoken
}

// NewMic makes the FIFO, the speaker file and the asoundrc in dir.
func NewMic(dir string) (*Mic, error) {
	m := &Mic{
		FIFO:        filepath.Join(dir, "mic.fifo"),
		SpeakerFile: filepath.Join(dir, "speaker.raw"),
		Asoundrc:    filepath.Join(dir, "asoundrc"),
		queue:       make(chan clip, 64),
	}
	if err := syscall.Mkfifo(m.FIFO, 0o600); err != nil {
		return nil, fmt.Errorf("make the microphone FIFO %s: %w", m.FIFO, err)
	}
	conf := fmt.Sprintf(`pcm.filein {
  type file
  slave.pcm "null"
  file "/dev/null"
  infile %q
  format "raw"
}
pcm.mic {
  type plug
  slave { pcm "filein"; format S16_LE; rate 16000; channels 2 }
}
pcm.speakerout {
  type file
  slave.pcm "null"
  file %q
  format "raw"
}
pcm.%s {
  type plug
  slave { pcm "speakerout"; format S16_LE; rate 16000; channels 2 }
}
pcm.!default {
  type asym
  capture.pcm "mic"
  playback.pcm "%s"
}
`, m.FIFO, m.SpeakerFile, Speaker, Speaker)
	if err := os.WriteFile(m.Asoundrc, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("write the ALSA configuration: %w", err)
	}
	return m, nil
}

// Env is what a process needs to use this microphone as its default device.
func (m *Mic) Env() []string {
	return []string{"ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:" + m.Asoundrc, "JACK_NO_START_SERVER=1"}
}

// Say queues 16 kHz mono samples; the channel gets when they were spoken.
func (m *Mic) Say(name string, samples []float32) <-chan Spoken {
	done := make(chan Spoken, 1)
	m.queue <- clip{name: name, pcm: stereo16(samples), done: done}
	return done
}

// Run feeds the FIFO at real time until ctx ends. When the reader stalls
// (the daemon loading its model, or restarting) the clock starts again
// rather than rushing the backlog.
func (m *Mic) Run(ctx context.Context) error {
	// O_RDWR: opening does not wait for a reader; a pipe fd is pollable, so
	// closing it on cancel ends a blocked Write.
	f, err := os.OpenFile(m.FIFO, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open the microphone FIFO: %w", err)
	}
	var once sync.Once
	closeF := func() { once.Do(func() { f.Close() }) }
	defer closeF()
	stop := context.AfterFunc(ctx, closeF)
	defer stop()

	const bytesPerChunk = micChunk * 4
	silence := make([]byte, bytesPerChunk)
	var cur *clip
	var pos int
	var started time.Time
	t0, n := time.Now(), 0
	for {
		b := silence
		if cur == nil {
			select {
			case c := <-m.queue:
				cur, pos, started = &c, 0, time.Time{}
			default:
			}
		}
		if cur != nil {
			if started.IsZero() {
				started = time.Now()
			}
			end := min(pos+bytesPerChunk, len(cur.pcm))
			b = append(cur.pcm[pos:end:end], silence[:bytesPerChunk-(end-pos)]...)
			pos = end
		}
		if _, err := f.Write(b); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("feed the microphone FIFO: %w", err)
		}
		if cur != nil && pos >= len(cur.pcm) {
			cur.done <- Spoken{Name: cur.name, Start: started, End: time.Now()}
			cur = nil
		}
		n++
		d := time.Until(t0.Add(time.Duration(n) * 200 * time.Millisecond))
		if d < -time.Second {
			t0, n = time.Now(), 0
		}
		if d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// Played returns what the speaker received, as 16 kHz mono.
func (m *Mic) Played() ([]float32, error) {
	b, err := os.ReadFile(m.SpeakerFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the speaker file: %w", err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		l := int16(binary.LittleEndian.Uint16(b[4*i:]))
		r := int16(binary.LittleEndian.Uint16(b[4*i+2:]))
		out[i] = (float32(l) + float32(r)) / 65536
	}
	return out, nil
}

// stereo16 encodes mono samples as S16_LE stereo with clipping.
func stereo16(s []float32) []byte {
	b := make([]byte, 4*len(s))
	for i, v := range s {
		x := int16(max(-32768, min(32767, math.Round(float64(v)*32767))))
		binary.LittleEndian.PutUint16(b[4*i:], uint16(x))
		binary.LittleEndian.PutUint16(b[4*i+2:], uint16(x))
	}
	return b
}
