package buffer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const crashChildEnv = "AGORAD_BUFFER_CRASH_CHILD_DIR"

// TestCrashChild is the child of TestKill9: it writes forever and prints
// every acknowledged write. It does nothing in a normal test run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("only runs as the child of TestKill9")
	}
	s, err := Open(dir, Options{Logger: quiet()})
	if err != nil {
		fmt.Printf("ERR %v\n", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	ack := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush() // printed only once the store acknowledged
	}
	ack("READY")
	for i := 0; ; i++ {
		switch {
		case i%37 == 36:
			e, n, err := s.FlushListen(false)
			if err != nil {
				ack("ERR flush %v", err)
				os.Exit(1)
			}
			if n > 0 {
				ack("F %d", e.Seq)
			}
		case i%5 == 4:
			e, err := s.Enqueue(LaneControl, KindAck, false, []byte(`{"i":`+strconv.Itoa(i)+`}`))
			if err != nil {
				ack("ERR enqueue %v", err)
				os.Exit(1)
			}
			ack("E %d", e.Seq)
		default:
			r, err := s.AppendListen(rec("meting " + strconv.Itoa(i)))
			if err != nil {
				ack("ERR append %v", err)
				os.Exit(1)
			}
			ack("L %d", r.Seq)
		}
	}
}

// TestKill9 re-executes the test binary as a writer, kills it with SIGKILL
// at random points and checks after each restart that every acknowledged
// write is there exactly once and that sequence numbers never repeat or go
// backwards. (SIGKILL leaves the page cache intact: this proves crash
// consistency of the process, not power-cut durability, which rests on
// Sync "always" = fsync before the acknowledgement.)
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: 20+ child processes")
	}
	dir := t.TempDir()
	listenAcked := map[uint64]bool{} // acknowledged listen records, in buffer or in a batch
	entryAcked := map[uint64]bool{}  // acknowledged outbox entries
	var maxAcked uint64
	const rounds = 24
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of acknowledgements, or a random time.
		killAfter := 1 + rand.IntN(300)
		deadline := time.Now().Add(time.Duration(50+rand.IntN(400)) * time.Millisecond)
		sc := bufio.NewScanner(stdout)
		acks, firstSeq := 0, uint64(0)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "ERR") {
				t.Fatalf("round %d: child: %s", round, line)
			}
			var kind string
			var seq uint64
			if _, err := fmt.Sscanf(line, "%s %d", &kind, &seq); err != nil {
				continue // READY, or the test framework's own output
			}
			if firstSeq == 0 {
				firstSeq = seq
				if seq <= maxAcked {
					t.Fatalf("round %d: seq went back: first %d after %d", round, seq, maxAcked)
				}
			}
			if seq <= maxAcked {
				t.Fatalf("round %d: seq %d not after %d", round, seq, maxAcked)
			}
			maxAcked = seq
			switch kind {
			case "L":
				listenAcked[seq] = true
			case "E", "F":
				entryAcked[seq] = true
			}
			if acks++; acks >= killAfter || time.Now().After(deadline) {
				break
			}
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		// Acknowledgements printed before the kill landed still count.
		for sc.Scan() {
			var kind string
			var seq uint64
			if _, err := fmt.Sscanf(sc.Text(), "%s %d", &kind, &seq); err == nil {
				if kind == "L" {
					listenAcked[seq] = true
				} else if kind == "E" || kind == "F" {
					entryAcked[seq] = true
				}
				maxAcked = max(maxAcked, seq)
			}
		}
		_ = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child was not killed: %v", round, cmd.ProcessState)
		}
		verifyAfterCrash(t, round, dir, listenAcked, entryAcked, maxAcked)
	}
	t.Logf("%d kills, %d listen records and %d entries acknowledged, last seq %d", rounds, len(listenAcked), len(entryAcked), maxAcked)
}

func verifyAfterCrash(t *testing.T, round int, dir string, listenAcked, entryAcked map[uint64]bool, maxAcked uint64) {
	t.Helper()
	s, err := Open(dir, Options{Logger: quiet()})
	if err != nil {
		t.Fatalf("round %d: reopen after kill: %v", round, err)
	}
	defer s.Close()
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Seq < maxAcked {
		t.Fatalf("round %d: counter %d behind acknowledged seq %d", round, st.Seq, maxAcked)
	}
	listenSeen := map[uint64]int{}
	list, err := s.ListListen(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		listenSeen[r.Seq]++
	}
	pending, err := s.Pending(0)
	if err != nil {
		t.Fatal(err)
	}
	entrySeen := map[uint64]bool{}
	for _, e := range pending {
		if entrySeen[e.Seq] {
			t.Fatalf("round %d: entry seq %d twice", round, e.Seq)
		}
		entrySeen[e.Seq] = true
		if e.Kind == KindBatch {
			var b BatchBody
			if err := json.Unmarshal(e.Body, &b); err != nil {
				t.Fatalf("round %d: batch %d: %v", round, e.Seq, err)
			}
			for _, r := range b.Items {
				listenSeen[r.Seq]++
			}
		}
	}
	for seq := range listenAcked {
		if listenSeen[seq] != 1 {
			t.Fatalf("round %d: acknowledged listen record %d found %d times", round, seq, listenSeen[seq])
		}
	}
	for seq := range entryAcked {
		if !entrySeen[seq] {
			t.Fatalf("round %d: acknowledged entry %d lost", round, seq)
		}
	}
	for seq, n := range listenSeen {
		if n != 1 {
			t.Fatalf("round %d: listen record %d stored %d times", round, seq, n)
		}
	}
}
