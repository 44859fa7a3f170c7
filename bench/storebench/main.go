// Command storebench measures the durable store's append latency and
// throughput under each fsync policy (buffer.Options.Sync) on this machine's
// disk, and prints a table for docs/storage.md.
//
//	go run ./bench/storebench -duration 5s -dir /var/lib/agorad-bench
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agora/agorad/buffer"
)

func main() {
	dir := flag.String("dir", "", "parent directory for the bench stores (default: a temp dir); put it on the device's real disk")
	duration := flag.Duration("duration", 3*time.Second, "how long to append under each policy")
	modes := flag.String("sync", "always,interval,none", "comma-separated sync policies to measure")
	textLen := flag.Int("text", 200, "characters of text per record")
	audioSec := flag.Float64("audio", 3, "seconds of audio per journal write (0 skips the journal column)")
	flag.Parse()
	if err := run(*dir, *duration, strings.Split(*modes, ","), *textLen, *audioSec); err != nil {
		fmt.Fprintln(os.Stderr, "storebench:", err)
		os.Exit(1)
	}
}

type result struct {
	mode           string
	n              int
	p50, p99, max  time.Duration
	perSec         float64
	audioN         int
	audioP50, aP99 time.Duration
}

func run(parent string, d time.Duration, modes []string, textLen int, audioSec float64) error {
	if parent == "" {
		tmp, err := os.MkdirTemp("", "storebench")
		if err != nil {
			return fmt.Errorf("create temp dir: %w", err)
		}
		defer os.RemoveAll(tmp)
		parent = tmp
	}
	var results []result
	for _, mode := range modes {
		r, err := measure(parent, strings.TrimSpace(mode), d, textLen, audioSec)
		if err != nil {
			return err
		}
		results = append(results, r)
	}
	host, _ := os.Hostname()
	fmt.Printf("storebench: %s, %v per policy, %d-char records, %.1fs audio clips, dir %s\n", host, d, textLen, audioSec, parent)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "sync\tappends\tappends/s\tp50\tp99\tmax\tjournal writes\tjournal p50\tjournal p99\t")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%d\t%.0f\t%v\t%v\t%v\t%d\t%v\t%v\t\n", r.mode, r.n, r.perSec, round(r.p50), round(r.p99), round(r.max), r.audioN, round(r.audioP50), round(r.aP99))
	}
	return w.Flush()
}

func round(d time.Duration) time.Duration {
	if d > time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func measure(parent, mode string, d time.Duration, textLen int, audioSec float64) (result, error) {
	dir, err := os.MkdirTemp(parent, "sync-"+mode)
	if err != nil {
		return result{}, fmt.Errorf("create store dir: %w", err)
	}
	defer os.RemoveAll(dir)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := buffer.Open(dir, buffer.Options{Sync: mode, Logger: log})
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	text := strings.Repeat("lasnaad ", textLen/8+1)[:textLen]
	var lat []time.Duration
	start := time.Now()
	for time.Since(start) < d {
		t0 := time.Now()
		if _, err := s.AppendListen(buffer.Record{Text: text, Lang: "nl", StartedAt: t0, DurationMS: 2000, Source: "mic"}); err != nil {
			return result{}, fmt.Errorf("sync %s: %w", mode, err)
		}
		lat = append(lat, time.Since(t0))
	}
	elapsed := time.Since(start)
	r := result{mode: mode, n: len(lat), perSec: float64(len(lat)) / elapsed.Seconds()}
	r.p50, r.p99, r.max = pct(lat)
	if audioSec > 0 {
		clip := make([]float32, int(audioSec*16000))
		for i := range clip {
			clip[i] = float32(i%200-100) / 400
		}
		var alat []time.Duration
		start = time.Now()
		for time.Since(start) < d/2 {
			t0 := time.Now()
			id, err := s.JournalAudio(clip, t0)
			if err != nil {
				return result{}, fmt.Errorf("sync %s: %w", mode, err)
			}
			alat = append(alat, time.Since(t0))
			if err := s.DropAudio(id); err != nil {
				return result{}, fmt.Errorf("sync %s: %w", mode, err)
			}
		}
		r.audioN = len(alat)
		r.audioP50, r.aP99, _ = pct(alat)
	}
	return r, nil
}

func pct(l []time.Duration) (p50, p99, max time.Duration) {
	if len(l) == 0 {
		return 0, 0, 0
	}
	slices.Sort(l)
	return l[len(l)/2], l[len(l)*99/100], l[len(l)-1]
}
