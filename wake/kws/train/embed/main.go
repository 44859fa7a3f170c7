// Command embed writes the keyword spotter's embeddings of WAV files for
// the trainer (wake/kws/train/train.py): the same front end and start
// state as the daemon's spotter. For each file listed on stdin (one path a
// line) it appends to -out: int32 count n, then n int32 window ends
// (samples from the file's start), then n*96 float32 (little-endian).
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/wake/kws"
)

func main() {
	dir := flag.String("kws", "models/kws", "the spotter's front end")
	out := flag.String("out", "", "output file")
	workers := flag.Int("workers", runtime.NumCPU(), "files embedded at once (one spotter each)")
	flag.Parse()
	var paths []string
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if p := strings.TrimSpace(in.Text()); p != "" {
			paths = append(paths, p)
		}
	}
	check(in.Err())
	head, err := kws.DefaultHead()
	check(err)
	// Contiguous shares, one spotter each (a spotter's calls take turns),
	// written out in the input's order.
	n := max(1, min(*workers, len(paths)))
	bufs := make([]bytes.Buffer, n)
	var wg sync.WaitGroup
	for k := range n {
		lo, hi := k*len(paths)/n, (k+1)*len(paths)/n
		s, err := kws.Open(*dir, head, 0)
		check(err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			for _, p := range paths[lo:hi] {
				check(embed(&bufs[k], s, p))
			}
		}()
	}
	wg.Wait()
	f, err := os.Create(*out)
	check(err)
	for k := range bufs {
		_, err := bufs[k].WriteTo(f)
		check(err)
	}
	check(f.Close())
}

func embed(w *bytes.Buffer, s *kws.Spotter, path string) error {
	samples, err := audio.ReadFile(path)
	if err != nil {
		return err
	}
	embs, ends, err := s.Embeddings(samples)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	binary.Write(w, binary.LittleEndian, int32(len(embs))) // a bytes.Buffer does not fail
	binary.Write(w, binary.LittleEndian, ends32(ends))
	for _, e := range embs {
		binary.Write(w, binary.LittleEndian, e)
	}
	return nil
}

func ends32(ends []int) []int32 {
	out := make([]int32, len(ends))
	for i, e := range ends {
		out[i] = int32(e)
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}
