package tts_test

import (
	"context"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agora/agorad/audio/tts"
)

const benchText = "The crack in the beam at frame four is not structural."

// BenchmarkFirstAudio: time to the first 16 kHz samples from the engine
// (a process started ahead per voice) against a process started per reply
// (`espeak-ng --stdout`, first bytes of audio). Reports p50/p95 in ms.
func BenchmarkFirstAudio(b *testing.B) {
	e, err := tts.New(tts.Config{Engine: "espeak-ng", Voices: map[string]string{"en": "en-us"}, Rate: 150, Volume: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var warm, cold []time.Duration
	for range b.N {
		time.Sleep(30 * time.Millisecond) // the next process starts meanwhile, as between replies
		start := time.Now()
		s, err := e.Synthesize(context.Background(), benchText, "en")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
		warm = append(warm, time.Since(start))
		s.Close()

		start = time.Now()
		cmd := exec.Command("espeak-ng", "--stdout", "-v", "en-us", "-s", "150")
		cmd.Stdin = strings.NewReader(benchText)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 44+2048)
		if _, err := io.ReadFull(out, buf); err != nil {
			b.Fatal(err)
		}
		cold = append(cold, time.Since(start))
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}
	pct := func(ds []time.Duration, p float64) float64 {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[min(len(s)-1, int(p*float64(len(s))))]) / 1e6
	}
	b.ReportMetric(pct(warm, .5), "warm-p50-ms")
	b.ReportMetric(pct(warm, .95), "warm-p95-ms")
	b.ReportMetric(pct(cold, .5), "per-reply-p50-ms")
	b.ReportMetric(pct(cold, .95), "per-reply-p95-ms")
}
