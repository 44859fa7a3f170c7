package vad_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agora/agorad/audio/testaudio"
	"github.com/agora/agorad/audio/vad"
)

const sileroModel = "for-tests-silero-v6.2.0-ggml.bin"

// readWAV decodes any audio file to 16 kHz mono float32 with sox, so these
// tests do not depend on the audio package's decoder.
func readWAV(t *testing.T, path string) []float32 {
	t.Helper()
	out, err := exec.Command("sox", path, "-r", "16000", "-c", "1", "-b", "32", "-e", "floating-point", "-t", "raw", "-").Output()
	if err != nil {
		t.Fatalf("sox decode %s: %v", path, err)
	}
	s := make([]float32, len(out)/4)
	for i := range s {
		s[i] = math.Float32frombits(binary.LittleEndian.Uint32(out[4*i:]))
	}
	return s
}

func openSilero(t *testing.T) *vad.Detector {
	t.Helper()
	d, err := vad.Open(testaudio.Model(t, sileroModel), vad.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// regions turns probabilities into speech regions (in windows) with
// hysteresis 0.5/0.35, bridging gaps shorter than minGap windows.
func regions(p []float32, minGap int) [][2]int {
	var out [][2]int
	in, start := false, 0
	for i, v := range p {
		switch {
		case !in && v >= 0.5:
			in, start = true, i
			if n := len(out); n > 0 && i-out[n-1][1] < minGap {
				start = out[n-1][0]
				out = out[:n-1]
			}
		case in && v < 0.35:
			in = false
			out = append(out, [2]int{start, i})
		}
	}
	if in {
		out = append(out, [2]int{start, len(p)})
	}
	// Drop blips shorter than 250 ms, as the segmenter's min speech does.
	kept := out[:0]
	for _, r := range out {
		if (r[1]-r[0])*512 >= 4000 {
			kept = append(kept, r)
		}
	}
	return kept
}

func TestWindowSize(t *testing.T) {
	d := openSilero(t)
	if got := d.WindowSize(); got != 512 {
		t.Fatalf("WindowSize = %d, want 512 (32 ms at 16 kHz)", got)
	}
	p, err := d.Probs(make([]float32, 5*512))
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 5 {
		t.Fatalf("5 windows gave %d probabilities", len(p))
	}
}

// TestJFK: the four phrases of jfk.wav are found, where the loud audio is,
// and appended digital silence scores low.
func TestJFK(t *testing.T) {
	d := openSilero(t)
	s := readWAV(t, testaudio.JFKPath(t))
	s = append(s, make([]float32, 2*16000)...)
	n := len(s) / 512 * 512
	p, err := d.Probs(s[:n])
	if err != nil {
		t.Fatal(err)
	}
	const win = 512
	// 300 ms gaps are bridged: pauses inside a phrase are not phrase ends.
	regs := regions(p, 300*16/win)
	if len(regs) != 4 {
		t.Fatalf("found %d speech regions %v, want the 4 phrases of jfk.wav", len(regs), regs)
	}
	// Every clearly loud window (RMS above -20 dBFS) must be inside a region.
	for w := 0; w < n/win; w++ {
		var e float64
		for _, v := range s[w*win : (w+1)*win] {
			e += float64(v) * float64(v)
		}
		db := 10 * math.Log10(e/win+1e-20)
		if db < -20 {
			continue
		}
		inside := false
		for _, r := range regs {
			inside = inside || (w >= r[0] && w < r[1])
		}
		if !inside {
			t.Errorf("loud window %d (%.2f s, %.1f dBFS) has probability %.2f, outside every speech region", w, float64(w*win)/16000, db, p[w])
		}
	}
	// The appended silence (after a 300 ms settling margin).
	silStart := (176000 + 4800) / win
	for w := silStart; w < len(p); w++ {
		if p[w] > 0.1 {
			t.Errorf("silence window %d has speech probability %.2f", w, p[w])
		}
	}
}

// TestStreamingMatchesBlock: feeding the stream window by window (the
// no_reset API keeps LSTM state) gives the same probabilities as one block,
// and Reset restores the initial state.
func TestStreamingMatchesBlock(t *testing.T) {
	d := openSilero(t)
	s := readWAV(t, testaudio.JFKPath(t))
	n := len(s) / 512 * 512
	block, err := d.Probs(s[:n])
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []int{512, 3 * 512, 16 * 512} {
		d.Reset()
		var stream []float32
		for i := 0; i < n; i += step {
			p, err := d.Probs(s[i:min(i+step, n)])
			if err != nil {
				t.Fatal(err)
			}
			stream = append(stream, p...)
		}
		if len(stream) != len(block) {
			t.Fatalf("step %d: %d probabilities, block gave %d", step, len(stream), len(block))
		}
		for i := range block {
			if math.Abs(float64(stream[i]-block[i])) > 1e-4 {
				t.Fatalf("step %d: window %d streamed %.5f, block %.5f", step, i, stream[i], block[i])
			}
		}
	}
	// Without Reset the state carries on: the same audio again must differ
	// somewhere at the start, proving state is actually kept.
	again, err := d.Probs(s[:16*512])
	if err != nil {
		t.Fatal(err)
	}
	same := true
	for i := range again {
		same = same && math.Abs(float64(again[i]-block[i])) < 1e-6
	}
	if same {
		t.Error("probabilities without Reset equal a fresh start: LSTM state is not kept between calls")
	}
}

func TestProbsInput(t *testing.T) {
	d := openSilero(t)
	if _, err := d.Probs(make([]float32, 700)); err == nil || !strings.Contains(err.Error(), "700") {
		t.Errorf("700 samples: err = %v, want an error naming the bad length", err)
	}
	if p, err := d.Probs(nil); err != nil || len(p) != 0 {
		t.Errorf("no samples: %v, %v; want nothing, no error", p, err)
	}
	d.Close()
	if _, err := d.Probs(make([]float32, 512)); !errors.Is(err, vad.ErrClosed) {
		t.Errorf("after Close: err = %v, want ErrClosed", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	d.Reset() // must not crash after Close
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	model, err := os.ReadFile(testaudio.Model(t, sileroModel))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unreadable := write("unreadable.bin", model)
	os.Chmod(unreadable, 0)
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.bin"), "no such file"},
		{"empty path", "", "no path"},
		{"directory", dir, "directory"},
		{"empty file", write("empty.bin", nil), "not a valid Silero VAD"},
		{"text file", write("notes.txt", []byte("this is not a model\n")), "not a valid Silero VAD"},
		{"truncated half", write("half.bin", model[:len(model)/2]), "not a valid Silero VAD"},
		{"truncated header", write("head.bin", model[:64]), "not a valid Silero VAD"},
		{"8 of 15 tensors", write("eight.bin", model[:bytes.Index(model, []byte("_model.decoder.rnn.weight_ih"))-20]), "not a valid Silero VAD"},
		{"whisper model", testaudio.Model(t, "for-tests-ggml-tiny.bin"), "not a valid Silero VAD"},
	}
	if os.Geteuid() != 0 { // root reads anything
		tests = append(tests, struct{ name, path, want string }{"unreadable", unreadable, "permission denied"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := vad.Open(tt.path, vad.Options{})
			if err == nil {
				d.Close()
				t.Fatalf("Open(%q) succeeded", tt.path)
			}
			if !strings.Contains(err.Error(), tt.want) || (tt.path != "" && !strings.Contains(err.Error(), tt.path)) {
				t.Errorf("Open(%q) error %q: want it to name the file and say %q", tt.path, err, tt.want)
			}
		})
	}
}

func BenchmarkProbsWindow(b *testing.B) {
	d, err := vad.Open(testaudio.Model(b, sileroModel), vad.Options{Threads: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	w := make([]float32, 512)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)*0.1)) * 0.1
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := d.Probs(w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/32e6, "cpu-share-realtime")
}

// TestConcurrentCallsDoNotCrash: the detector is meant for one stream, but
// concurrent calls (and a Close racing them) must stay memory-safe.
func TestConcurrentCallsDoNotCrash(t *testing.T) {
	d := openSilero(t)
	done := make(chan error)
	for range 4 {
		go func() {
			var err error
			for range 50 {
				if _, e := d.Probs(make([]float32, 2*512)); e != nil && !errors.Is(e, vad.ErrClosed) {
					err = e
				}
				d.Reset()
			}
			done <- err
		}()
	}
	// Close while the other three are still calling.
	if err := <-done; err != nil {
		t.Error(err)
	}
	d.Close()
	for range 3 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
