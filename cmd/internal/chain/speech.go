package chain

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agora/agorad/audio"
)

// Voice is how the scripted lines are spoken: espeak-ng's en-us at 140
// words a minute, the voice and pace the wake tests measured tiny.en and
// the spotter on (cmd/agorad: wakeVoices).
var Voice = []string{"-v", "en-us", "-s", "140"}

// VoiceNL speaks the Dutch round: espeak-ng's only Dutch voice, same pace.
var VoiceNL = []string{"-v", "nl", "-s", "140"}

// Synth speaks text with espeak-ng (its options in args) and returns 16 kHz
// mono samples; dir holds the intermediate files.
func Synth(ctx context.Context, dir, text string, args ...string) ([]float32, error) {
	f, err := os.CreateTemp(dir, "say-*.wav")
	if err != nil {
		return nil, fmt.Errorf("synthesize %q: %w", text, err)
	}
	f.Close()
	raw := f.Name()
	out := raw + ".16k.wav"
	defer os.Remove(raw)
	defer os.Remove(out)
	if b, err := exec.CommandContext(ctx, "espeak-ng", append(append([]string{"-w", raw}, args...), "--", text)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("espeak-ng %q: %w: %s", text, err, b)
	}
	if b, err := exec.CommandContext(ctx, "sox", raw, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", out).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sox to 16 kHz: %w: %s", err, b)
	}
	return audio.ReadFile(out)
}

// Say speaks text into the microphone and returns when it has been spoken.
func (c *Chain) Say(ctx context.Context, text string) (Spoken, error) {
	s, err := Synth(ctx, c.Opts.Dir, text, c.Opts.Voice...)
	if err != nil {
		return Spoken{}, err
	}
	return c.Play(ctx, text, s)
}

// Play puts samples into the microphone and returns when they have been
// spoken.
func (c *Chain) Play(ctx context.Context, name string, samples []float32) (Spoken, error) {
	select {
	case sp := <-c.Mic.Say(name, samples):
		if c.OnSpoken != nil {
			c.OnSpoken(sp)
		}
		return sp, nil
	case <-ctx.Done():
		return Spoken{}, ctx.Err()
	}
}

// Loud is the length of the played audio louder than -20 dBFS (peak over
// 10 ms windows): speech, not silence or dither.
func Loud(s []float32) time.Duration {
	const w = audio.SampleRate / 100
	n := 0
	for i := 0; i+w <= len(s); i += w {
		var peak float32
		for _, v := range s[i : i+w] {
			peak = max(peak, float32(math.Abs(float64(v))))
		}
		if peak > 0.1 {
			n++
		}
	}
	return time.Duration(n) * 10 * time.Millisecond
}

// Trim cuts the silence (below -40 dBFS) before and after s.
func Trim(s []float32) []float32 {
	i, j := 0, len(s)
	for i < j && math.Abs(float64(s[i])) < 0.01 {
		i++
	}
	for j > i && math.Abs(float64(s[j-1])) < 0.01 {
		j--
	}
	return s[i:j]
}

// WriteWAV writes 16 kHz mono 16-bit PCM to path.
func WriteWAV(path string, s []float32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	data := make([]byte, 2*len(s))
	for i, v := range s {
		binary.LittleEndian.PutUint16(data[2*i:], uint16(int16(max(-32768, min(32767, math.Round(float64(v)*32767))))))
	}
	h := make([]byte, 44)
	copy(h, "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+len(data)))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], audio.SampleRate)
	binary.LittleEndian.PutUint32(h[28:], audio.SampleRate*2)
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(len(data)))
	if err := os.WriteFile(path, append(h, data...), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
