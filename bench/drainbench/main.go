// Command drainbench measures how fast sync/uplink drains a pre-filled
// outbox (real Badger store) to a local mosquitto, and compares it with
// mosquitto_pub -q 1 publishing the same number of same-sized messages over
// one connection.
//
//	go run ./bench/drainbench -n 20000
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/agora/agorad/buffer"
	"github.com/agora/agorad/sync/brokertest"
	"github.com/agora/agorad/sync/protocol"
	"github.com/agora/agorad/sync/uplink"
)

func main() {
	n := flag.Int("n", 20000, "outbox entries to drain")
	textLen := flag.Int("text", 120, "characters of text per utterance")
	window := flag.Int("window", 64, "uplink in-flight window")
	syncMode := flag.String("sync", buffer.SyncAlways, "store sync mode (always, interval, none)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the drain to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drainbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "drainbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*n, *textLen, *window, *syncMode); err != nil {
		fmt.Fprintln(os.Stderr, "drainbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(n, textLen, window int, syncMode string) error {
	dir, err := os.MkdirTemp("", "drainbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := brokertest.New(dir + "/")
	if err != nil {
		return err
	}
	if err := b.Run(); err != nil {
		return err
	}
	defer b.Stop()

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := buffer.Open(dir+"/state", buffer.Options{Sync: syncMode, Logger: quiet})
	if err != nil {
		return err
	}
	defer st.Close()
	text := strings.Repeat("x", textLen)
	var sample buffer.Entry
	fillStart := time.Now()
	for i := range n {
		e, err := st.EnqueueUtterance(buffer.Record{Text: text, Lang: "nl", Confidence: 0.9, StartedAt: time.Now(), DurationMS: 2500, Source: "mic"})
		if err != nil {
			return fmt.Errorf("fill outbox entry %d: %w", i, err)
		}
		sample = e
	}
	fill := time.Since(fillStart)
	topic, payload, err := protocol.Render("bench", sample)
	if err != nil {
		return err
	}

	c, err := uplink.New(uplink.Options{DeviceID: "bench", BrokerURL: b.URL(), Window: window, Logger: quiet,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}, st, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	<-c.OnlineChanged()
	start := time.Now()
	for {
		left, err := st.OutboxCount()
		if err != nil {
			return err
		}
		if left == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	drain := time.Since(start)
	cancel()
	<-done

	// The same count of same-sized messages with mosquitto_pub, one
	// connection, QoS 1, one message per stdin line.
	line := append(bytes.ReplaceAll(payload, []byte("\n"), nil), '\n')
	input := bytes.Repeat(line, n)
	cmd := exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", strconv.Itoa(b.Port()), "-q", "1", "-t", topic, "-l", "-i", "drainbench-pub")
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pubStart := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mosquitto_pub: %v: %s", err, stderr.String())
	}
	pub := time.Since(pubStart)

	up := float64(n) / drain.Seconds()
	mp := float64(n) / pub.Seconds()
	fmt.Printf("messages %d, payload %d bytes, store sync %s, window %d\n", n, len(payload), syncMode, window)
	fmt.Printf("fill outbox:     %8.0f msgs/s (%v)\n", float64(n)/fill.Seconds(), fill.Round(time.Millisecond))
	fmt.Printf("uplink drain:    %8.0f msgs/s (%v, delete after PUBACK)\n", up, drain.Round(time.Millisecond))
	fmt.Printf("mosquitto_pub:   %8.0f msgs/s (%v)\n", mp, pub.Round(time.Millisecond))
	fmt.Printf("ratio uplink/mosquitto_pub: %.2f\n", up/mp)
	return nil
}
