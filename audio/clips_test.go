package audio_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/audio/testaudio"
)

// TestReadFileSharedClips decodes every clip of shared/audio and checks its
// duration against MANIFEST.tsv.
func TestReadFileSharedClips(t *testing.T) {
	dir := filepath.Join(testaudio.SharedDir(t), "audio")
	f, err := os.Open(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	n := 0
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 2 {
			continue
		}
		secs, err := strconv.ParseFloat(cols[1], 64)
		if err != nil {
			t.Errorf("MANIFEST line for %s: bad seconds %q", cols[0], cols[1])
			continue
		}
		n++
		s, err := audio.ReadFile(filepath.Join(dir, cols[0]))
		if err != nil {
			t.Error(err)
			continue
		}
		got := float64(len(s)) / audio.SampleRate
		if math.Abs(got-secs) > secs*0.01 {
			t.Errorf("%s: %.3f s decoded, MANIFEST says %.3f s", cols[0], got, secs)
		}
	}
	if n != 172 {
		t.Errorf("MANIFEST lists %d clips, want 172", n)
	}
}

func TestSliceSource(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	samples := make([]float32, 2500)
	for i := range samples {
		samples[i] = float32(i)
	}
	src := audio.NewSliceSource(samples, 1000, start)
	ctx := context.Background()
	var got []float32
	for i := 0; ; i++ {
		c, err := src.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Offset != int64(len(got)) {
			t.Errorf("chunk %d offset %d, want %d", i, c.Offset, len(got))
		}
		if want := start.Add(time.Duration(c.Offset) * time.Second / audio.SampleRate); !c.Time.Equal(want) {
			t.Errorf("chunk %d time %v, want %v", i, c.Time, want)
		}
		if len(c.Samples) > 1000 {
			t.Errorf("chunk %d has %d samples, want <= 1000", i, len(c.Samples))
		}
		got = append(got, c.Samples...)
	}
	if len(got) != len(samples) {
		t.Fatalf("%d samples delivered, want %d", len(got), len(samples))
	}
	for i := range got {
		if got[i] != samples[i] {
			t.Fatalf("sample %d = %v, want %v", i, got[i], samples[i])
		}
	}
	if _, err := src.Read(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("read after end: %v, want io.EOF", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := audio.NewSliceSource(samples, 10, start).Read(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("read with cancelled ctx: %v", err)
	}
}

func TestEarcons(t *testing.T) {
	names := []string{"stored", "feedback_on", "listen_on", "offline", "error"}
	sounds := map[string][]float32{}
	for _, name := range names {
		s, err := audio.Earcon(name)
		if err != nil {
			t.Fatal(err)
		}
		ms := len(s) * 1000 / audio.SampleRate
		if ms < 80 || ms > 400 {
			t.Errorf("%s lasts %d ms, want 80..400", name, ms)
		}
		peak := 0.0
		for _, v := range s {
			peak = max(peak, math.Abs(float64(v)))
		}
		if peak < 0.1 || peak > 1 {
			t.Errorf("%s peak %.2f, want 0.1..1", name, peak)
		}
		// Fades: no click at either end.
		if math.Abs(float64(s[0])) > 0.01 || math.Abs(float64(s[len(s)-1])) > 0.01 {
			t.Errorf("%s starts/ends at %.3f/%.3f, want a fade", name, s[0], s[len(s)-1])
		}
		sounds[name] = s
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			if c := maxXcorr(sounds[a], sounds[b]); c > 0.5 {
				t.Errorf("earcons %s and %s correlate %.2f, want distinct (< 0.5)", a, b, c)
			}
		}
	}
	if _, err := audio.Earcon("fanfare"); err == nil || !strings.Contains(err.Error(), "fanfare") {
		t.Errorf("unknown earcon: err %v, want one naming it", err)
	}
}

// maxXcorr is the largest cross-correlation of a and b over all lags,
// normalized by both signals' whole energies (1 = identical up to shift).
func maxXcorr(a, b []float32) float64 {
	var ea, eb float64
	for _, v := range a {
		ea += float64(v) * float64(v)
	}
	for _, v := range b {
		eb += float64(v) * float64(v)
	}
	best := 0.0
	for lag := -len(b) + 1; lag < len(a); lag++ {
		var xy float64
		for j, y := range b {
			if i := j + lag; i >= 0 && i < len(a) {
				xy += float64(a[i]) * float64(y)
			}
		}
		best = max(best, math.Abs(xy))
	}
	return best / math.Sqrt(ea*eb)
}

func TestOpenWAVSourceMatchesReadFile(t *testing.T) {
	for _, name := range []string{"fw_jfk.wav", "fw_stereo_diarization_left.wav"} {
		path := testaudio.Clip(t, name)
		want, err := audio.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src, err := audio.OpenWAVSource(path, 1234, time.Unix(100, 0))
		if err != nil {
			t.Fatal(err)
		}
		var got []float32
		for {
			c, err := src.Read(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Offset != int64(len(got)) {
				t.Fatalf("%s: chunk offset %d, want %d", name, c.Offset, len(got))
			}
			got = append(got, c.Samples...)
		}
		src.Close()
		if len(got) != len(want) {
			t.Fatalf("%s: %d samples streamed, ReadFile gives %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: sample %d streamed %v, ReadFile %v", name, i, got[i], want[i])
			}
		}
	}
	if _, err := audio.OpenWAVSource("/nonexistent/x.wav", 0, time.Now()); err == nil || !strings.Contains(err.Error(), "/nonexistent/x.wav") {
		t.Errorf("missing file: %v, want an error naming it", err)
	}
}

func BenchmarkReadFile(b *testing.B) {
	for _, name := range []string{"fw_jfk.wav", "fw_stereo_diarization_left.wav"} {
		path := testaudio.Clip(b, name)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := audio.ReadFile(path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReadFileSoxFormats decodes a real clip that sox rewrote in other
// formats (sox writes WAVE_FORMAT_EXTENSIBLE for > 16 bits or > 2 channels)
// and compares it with the original.
func TestReadFileSoxFormats(t *testing.T) {
	orig := testaudio.Clip(t, "fw_jfk.wav")
	want, err := audio.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"44.1k stereo 24-bit", []string{"-r", "44100", "-c", "2", "-b", "24"}},
		{"48k mono float32", []string{"-r", "48000", "-e", "floating-point", "-b", "32"}},
		{"22.05k 4ch 16-bit", []string{"-r", "22050", "-c", "4", "-b", "16"}},
		{"32k mono 32-bit", []string{"-r", "32000", "-b", "32", "-e", "signed-integer"}},
		{"16k mono float64", []string{"-e", "floating-point", "-b", "64"}},
		{"16k mono 8-bit", []string{"-b", "8", "-e", "unsigned-integer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.wav")
			args := append(append([]string{orig}, tc.args...), out)
			if b, err := exec.Command("sox", args...).CombinedOutput(); err != nil {
				t.Fatalf("sox %v: %v: %s", args, err, b)
			}
			got, err := audio.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if d := len(got) - len(want); d < -2 || d > 2 {
				t.Errorf("%d samples, original %d", len(got), len(want))
			}
			lag, c := testaudio.Align(want, got, 50)
			t.Logf("lag %d correlation %.4f", lag, c)
			if c < 0.99 || lag != 0 {
				t.Errorf("correlation %.4f at lag %d with the original, want > 0.99 at 0", c, lag)
			}
		})
	}
}
