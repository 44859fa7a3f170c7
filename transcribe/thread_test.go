package transcribe

import (
	"context"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedCallers runs f on n goroutines, each locked to an OS thread of its
// own, and returns once every f has returned; the goroutines stay locked
// (their threads alive) until release is called.
func lockedCallers(n int, f func(i int)) (release func()) {
	var ran sync.WaitGroup
	hold := make(chan struct{})
	ran.Add(n)
	for i := range n {
		go func() {
			runtime.LockOSThread()
			f(i)
			ran.Done()
			<-hold
			runtime.UnlockOSThread()
		}()
	}
	ran.Wait()
	return func() { close(hold) }
}

func TestOSThreadRunsEverythingOnOneThread(t *testing.T) {
	th := startOSThread()
	defer th.stop()
	const n = 8
	callers := make([]int, n)
	inside := make([]int, n)
	release := lockedCallers(n, func(i int) {
		callers[i] = syscall.Gettid()
		th.do(func() { inside[i] = syscall.Gettid() })
	})
	defer release()
	seen := map[int]bool{}
	for i := range n {
		if inside[i] != inside[0] {
			t.Errorf("call %d ran on thread %d, call 0 on %d: want one thread", i, inside[i], inside[0])
		}
		if inside[i] == callers[i] {
			t.Errorf("call %d ran on its caller's thread %d", i, callers[i])
		}
		seen[callers[i]] = true
	}
	if len(seen) != n {
		t.Fatalf("test set-up: %d callers shared %d threads", n, len(seen))
	}
}

func threadCount(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Skipf("no /proc/self/task: %v", err)
	}
	return len(tasks)
}

// Whisper calls from many OS threads must not each grow an OpenMP thread
// pool: past one pool per core libgomp sleeps at ggml's barriers, and every
// decoder step became 4-6x slower (thread.go).
func TestWhisperCallsFromManyThreadsShareOnePool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs whisper.cpp once per caller")
	}
	tr := newTranscriber(t, Options{Language: "en", Threads: 2})
	ctx := context.Background()
	audio := tone(1500 * time.Millisecond)
	// The first call makes the whisper thread's own pool.
	if _, err := tr.Transcribe(ctx, audio); err != nil {
		t.Fatal(err)
	}
	before := threadCount(t)
	const callers = 4
	errs := make([]error, callers)
	release := lockedCallers(callers, func(i int) { _, errs[i] = tr.Transcribe(ctx, audio) })
	after := threadCount(t)
	release()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	// Each caller holds one thread. A pool per calling thread would add
	// another `callers` (Threads-1 workers each); Go itself may add one or two.
	grown := after - before
	t.Logf("threads grew by %d for %d calling threads", grown, callers)
	if grown > callers+2 {
		t.Errorf("threads grew by %d for %d calling threads: whisper calls made OpenMP pools of their own", grown, callers)
	}
}

func TestTrailingQuiet(t *testing.T) {
	const frame = sampleRate / 50
	speech := tone(2 * time.Second) // RMS 0.21
	noise := func(d time.Duration, level float32) []float32 {
		out := make([]float32, int(d.Seconds()*sampleRate))
		for i := range out {
			out[i] = level * float32(1-2*(i%2)) // RMS = level
		}
		return out
	}
	cat := func(parts ...[]float32) []float32 { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name string
		in   []float32
		want int
	}{
		{"empty", nil, 0},
		{"all silence", make([]float32, sampleRate), 0},
		{"speech to the end", speech, len(speech)},
		{"digital silence after speech", cat(speech, make([]float32, sampleRate)), len(speech)},
		// Room noise 30 dB under the speech is quiet; a word 6 dB under it is not.
		{"room noise after speech", cat(speech, noise(time.Second, 0.007)), len(speech)},
		{"soft word after speech", cat(speech, make([]float32, sampleRate), noise(200*time.Millisecond, 0.1), make([]float32, sampleRate)),
			len(speech) + sampleRate + 10*frame},
		// Below the silence floor nothing counts, however quiet the rest.
		{"all under the floor", noise(time.Second, 0.001), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := trailingQuiet(tc.in, DefaultSilenceRMS); got != tc.want {
				t.Errorf("trailingQuiet = %d, want %d", got, tc.want)
			}
		})
	}
}
