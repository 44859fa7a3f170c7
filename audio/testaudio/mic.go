package testaudio

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/agora/agorad/audio"
)

// VirtualMic is an ALSA file-plugin microphone and speaker: capture reads a
// raw file, playback writes one. PortAudio opens it like hardware.
//
// ALSA configuration reloads (found by experiment): alsa-lib caches its
// parsed configuration, and snd_config_update(), run when PortAudio
// initialises, reloads it when the list of files named by ALSA_CONFIG_PATH or
// their modification times change. Every VirtualMic writes its asoundrc in
// its own temporary folder, so a later mic in the same process is picked up
// by the next PortAudio initialisation. The audio package terminates
// PortAudio when its last stream closes, so close every Source and Player of
// one mic before making the next; while one is open the old configuration
// stays in force. TestCaptureVirtualMic in audio checks this with four mics
// of different rates in one process.
//
// Two quirks of the file plugin shape this helper (both seen here with
// alsa-lib 1.2.8 and PortAudio 19.6): any conversion in the plug layer (S16
// to float, mono to stereo) skipped a period at every ring-buffer wrap, so
// the mics are stereo and audio captures int16, which passes unconverted;
// and past the end of infile the stream repeats stale buffer contents
// instead of silence, so TrailingSilenceMs of real silence is appended.
type VirtualMic struct {
	// Dir holds the asoundrc, the speech input and the playback output.
	Dir string
	// Rate and Channels are the raw files' format (the plug slave's).
	Rate, Channels int
	// InFile is what capture reads, PlayFile what playback writes.
	InFile, PlayFile string
}

// TrailingSilenceMs of silence follow the speech in a virtual mic's input;
// past it the stream repeats stale audio, so a test must stop reading first.
const TrailingSilenceMs = 60_000

// NewVirtualMic makes a 16 kHz file microphone that plays speech (16 kHz
// mono samples) and then TrailingSilenceMs of silence, and sets ALSA_CONFIG_PATH (via t.Setenv,
// so the test must not be parallel) to make it the default capture and
// playback device. Devices "filein", "mic" and "default" exist; open "mic"
// or "default" ("filein" is the raw file without format conversion).
// The raw files are stereo (speech on both channels), matching the two
// channels audio.OpenCapture asks of a device that offers more.
func NewVirtualMic(t testing.TB, speech []float32, opts ...MicOption) *VirtualMic {
	t.Helper()
	return NewVirtualMicFormat(t, speech, audio.SampleRate, 2, opts...)
}

// MicOption changes a virtual microphone.
type MicOption func(*VirtualMic)

// DiscardPlayback sends what the speaker plays, and what the file plugin
// tees from capture, to /dev/null. The plugin writes everything it captures
// into its playback file and capture is unpaced (gigabytes a minute), so a
// test that does not check playback uses this.
func DiscardPlayback() MicOption { return func(m *VirtualMic) { m.PlayFile = os.DevNull } }

// NewVirtualMicFormat is NewVirtualMic with the raw files (the plug
// slave) at rate Hz and channels channels, so capture through PortAudio
// exercises real rate and channel conversion. speech is 16 kHz mono; it is
// converted to the slave format with sox (every channel gets the signal).
func NewVirtualMicFormat(t testing.TB, speech []float32, rate, channels int, opts ...MicOption) *VirtualMic {
	t.Helper()
	dir := t.TempDir()
	m := &VirtualMic{
		Dir:      dir,
		Rate:     rate,
		Channels: channels,
		InFile:   filepath.Join(dir, "speech.raw"),
		PlayFile: filepath.Join(dir, "played.raw"),
	}
	for _, o := range opts {
		o(m)
	}
	// After the end of infile the file plugin leaves stale ring-buffer
	// contents in the stream (the last speech, over and over), not silence:
	// real silence is appended so speech ends the way it does on a real mic.
	speech = Concat(speech, Silence(TrailingSilenceMs))
	if rate == audio.SampleRate {
		inter := make([]float32, 0, len(speech)*channels)
		for _, v := range speech {
			for range channels {
				inter = append(inter, v)
			}
		}
		if err := os.WriteFile(m.InFile, pcm16(inter), 0o644); err != nil {
			t.Fatalf("write virtual mic speech: %v", err)
		}
	} else {
		src := filepath.Join(dir, "speech16k.raw")
		if err := os.WriteFile(src, pcm16(speech), 0o644); err != nil {
			t.Fatalf("write virtual mic speech: %v", err)
		}
		runSox(t, "-t", "raw", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-L", src,
			"-t", "raw", "-r", fmt.Sprint(rate), "-c", fmt.Sprint(channels), "-b", "16", "-e", "signed-integer", "-L", m.InFile)
	}
	rc := filepath.Join(dir, "asoundrc")
	conf := fmt.Sprintf(`pcm.filein {
  type file
  slave.pcm "null"
  file %q
  infile %q
  format "raw"
}
pcm.mic {
  type plug
  slave { pcm "filein"; format S16_LE; rate %d; channels %d }
}
pcm.!default {
  type asym
  capture.pcm "mic"
  playback.pcm "mic"
}
`, m.PlayFile, m.InFile, rate, channels)
	if err := os.WriteFile(rc, []byte(conf), 0o644); err != nil {
		t.Fatalf("write virtual mic asoundrc: %v", err)
	}
	t.Setenv("ALSA_CONFIG_PATH", "/usr/share/alsa/alsa.conf:"+rc)
	// PortAudio also probes JACK; do not let that try to start a server.
	t.Setenv("JACK_NO_START_SERVER", "1")
	return m
}

// Played returns what was played to the speaker so far, as 16 kHz mono.
// Close the Player first so its output is flushed.
func (m *VirtualMic) Played(t testing.TB) []float32 {
	t.Helper()
	b, err := os.ReadFile(m.PlayFile)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("read virtual speaker output: %v", err)
	}
	frames := make([]float32, len(b)/2)
	for i := range frames {
		frames[i] = float32(int16(binary.LittleEndian.Uint16(b[2*i:]))) / 32768
	}
	conv, err := audio.NewConverter(m.Rate, m.Channels)
	if err != nil {
		t.Fatalf("convert virtual speaker output: %v", err)
	}
	return append(conv.Write(frames), conv.Flush()...)
}

// pcm16 encodes samples as S16_LE with clipping.
func pcm16(s []float32) []byte {
	b := make([]byte, 2*len(s))
	for i, v := range s {
		x := math.Round(float64(v) * 32767)
		x = max(-32768, min(32767, x))
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(x)))
	}
	return b
}
